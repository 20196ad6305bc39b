/* Every function the emulated libcuda.so.1 exports, in one list: the version script
 * (libcuda.map.in) and cuGetProcAddress's table (proc_address.c) are both generated from it,
 * so a function is exported exactly when cuGetProcAddress can find it.
 *
 * X(SYMBOL, FUNCTION, VERSION, PTSZ): FUNCTION is the exported name; SYMBOL the base name a
 * cuGetProcAddress caller asks for; VERSION the CUDA version that introduced this variant
 * (1000 * major + 10 * minor, as cudaTypedefs.h's PFN_<SYMBOL>_v<VERSION> names it); PTSZ 1 for
 * the per-thread default stream variant.  This header holds only the list, so that the
 * preprocessor can expand it into the version script too. */
#ifndef USBYTE_EMU_CUDA_EXPORTS_H
#define USBYTE_EMU_CUDA_EXPORTS_H

/* A function with a legacy-stream and a per-thread-stream variant. */
#define EMU_CU_STREAM_PAIR(X, SYMBOL, FUNCTION, VERSION) \
    X(SYMBOL, FUNCTION, VERSION, 0)                      \
    X(SYMBOL, FUNCTION##_ptsz, VERSION, 1)

#define EMU_CU_EXPORTS(X)                                                         \
    X(cuInit, cuInit, 2000, 0)                                                    \
    X(cuDriverGetVersion, cuDriverGetVersion, 2020, 0)                            \
    X(cuGetProcAddress, cuGetProcAddress, 11030, 0)                               \
    X(cuGetProcAddress, cuGetProcAddress_v2, 12000, 0)                            \
    X(cuGetErrorName, cuGetErrorName, 6000, 0)                                    \
    X(cuGetErrorString, cuGetErrorString, 6000, 0)                                \
    X(cuDeviceGet, cuDeviceGet, 2000, 0)                                          \
    X(cuDeviceGetCount, cuDeviceGetCount, 2000, 0)                                \
    X(cuDeviceGetName, cuDeviceGetName, 2000, 0)                                  \
    X(cuDeviceGetAttribute, cuDeviceGetAttribute, 2000, 0)                        \
    X(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, 7000, 0)                \
    X(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2, 11000, 0)          \
    X(cuCtxGetCurrent, cuCtxGetCurrent, 4000, 0)                                  \
    X(cuCtxSetCurrent, cuCtxSetCurrent, 4000, 0)                                  \
    X(cuCtxGetDevice, cuCtxGetDevice, 2000, 0)                                    \
    X(cuMemAlloc, cuMemAlloc_v2, 3020, 0)                                         \
    X(cuMemFree, cuMemFree_v2, 3020, 0)                                           \
    X(cuMemHostGetDevicePointer, cuMemHostGetDevicePointer_v2, 3020, 0)           \
    X(cuPointerGetAttribute, cuPointerGetAttribute, 4000, 0)                      \
    EMU_CU_STREAM_PAIR(X, cuMemcpyAsync, cuMemcpyAsync, 4000)                     \
    EMU_CU_STREAM_PAIR(X, cuMemcpyPeerAsync, cuMemcpyPeerAsync, 4000)             \
    EMU_CU_STREAM_PAIR(X, cuMemcpyHtoDAsync, cuMemcpyHtoDAsync_v2, 3020)          \
    EMU_CU_STREAM_PAIR(X, cuMemcpyDtoHAsync, cuMemcpyDtoHAsync_v2, 3020)          \
    EMU_CU_STREAM_PAIR(X, cuMemcpyDtoDAsync, cuMemcpyDtoDAsync_v2, 3020)          \
    EMU_CU_STREAM_PAIR(X, cuMemcpy2DAsync, cuMemcpy2DAsync_v2, 3020)              \
    EMU_CU_STREAM_PAIR(X, cuMemcpy3DAsync, cuMemcpy3DAsync_v2, 3020)              \
    EMU_CU_STREAM_PAIR(X, cuMemsetD8Async, cuMemsetD8Async, 3020)                 \
    EMU_CU_STREAM_PAIR(X, cuMemsetD16Async, cuMemsetD16Async, 3020)               \
    EMU_CU_STREAM_PAIR(X, cuMemsetD32Async, cuMemsetD32Async, 3020)               \
    EMU_CU_STREAM_PAIR(X, cuMemsetD2D8Async, cuMemsetD2D8Async, 3020)             \
    EMU_CU_STREAM_PAIR(X, cuMemsetD2D16Async, cuMemsetD2D16Async, 3020)           \
    EMU_CU_STREAM_PAIR(X, cuMemsetD2D32Async, cuMemsetD2D32Async, 3020)           \
    EMU_CU_STREAM_PAIR(X, cuLaunchKernel, cuLaunchKernel, 4000)                   \
    EMU_CU_STREAM_PAIR(X, cuLaunchKernelEx, cuLaunchKernelEx, 11060)              \
    EMU_CU_STREAM_PAIR(X, cuLaunchCooperativeKernel, cuLaunchCooperativeKernel, 9000) \
    EMU_CU_STREAM_PAIR(X, cuLaunchHostFunc, cuLaunchHostFunc, 10000)              \
    EMU_CU_STREAM_PAIR(X, cuStreamAddCallback, cuStreamAddCallback, 5000)         \
    EMU_CU_STREAM_PAIR(X, cuGraphLaunch, cuGraphLaunch, 10000)                    \
    EMU_CU_STREAM_PAIR(X, cuStreamWaitValue32, cuStreamWaitValue32, 8000)         \
    EMU_CU_STREAM_PAIR(X, cuStreamWaitValue32, cuStreamWaitValue32_v2, 11070)     \
    EMU_CU_STREAM_PAIR(X, cuStreamWaitValue64, cuStreamWaitValue64, 9000)         \
    EMU_CU_STREAM_PAIR(X, cuStreamWaitValue64, cuStreamWaitValue64_v2, 11070)     \
    EMU_CU_STREAM_PAIR(X, cuStreamWriteValue32, cuStreamWriteValue32, 8000)       \
    EMU_CU_STREAM_PAIR(X, cuStreamWriteValue32, cuStreamWriteValue32_v2, 11070)   \
    EMU_CU_STREAM_PAIR(X, cuStreamWriteValue64, cuStreamWriteValue64, 9000)       \
    EMU_CU_STREAM_PAIR(X, cuStreamWriteValue64, cuStreamWriteValue64_v2, 11070)   \
    EMU_CU_STREAM_PAIR(X, cuStreamBeginCapture, cuStreamBeginCapture, 10000)      \
    EMU_CU_STREAM_PAIR(X, cuStreamBeginCapture, cuStreamBeginCapture_v2, 10010)   \
    EMU_CU_STREAM_PAIR(X, cuStreamBeginCaptureToGraph, cuStreamBeginCaptureToGraph, 12030) \
    EMU_CU_STREAM_PAIR(X, cuStreamEndCapture, cuStreamEndCapture, 10000)          \
    EMU_CU_STREAM_PAIR(X, cuStreamIsCapturing, cuStreamIsCapturing, 10000)

#endif
