/* Every way a program puts work on a stream, as one list: the runtime's launches, copies,
 * memsets, graph launches, host functions and stream callbacks, and the driver's (Triton and
 * NCCL launch through the driver).  For each: the function CUPTI names, its domain and callback
 * id, the driver function the runtime call reports inside its own (0: none), and how to issue
 * it.  Used by the emulator's unit test (test_emu_launch: each one runs in stream order and
 * reports itself as CUPTI does) and by usbyte's CUPTI test (tests/integration/cupti: each one on
 * the NCCL stream is seen).
 *
 * Every kind makes the 64 bytes at w->out equal to w->v (out: w->dst, or w->hdst for copies to
 * the host) and leaves the rest of the buffer alone.  Programs link -lcudart -lcuda. */
#ifndef USBYTE_EMU_TESTING_STREAM_WORK_H
#define USBYTE_EMU_TESTING_STREAM_WORK_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>

#undef cuMemcpyHtoDAsync
#undef cuMemcpyDtoHAsync
#undef cuMemcpyDtoDAsync
#undef cuMemcpy2DAsync
#undef cuMemcpy3DAsync

#define SW_BYTES 64       /* what every kind writes */
#define SW_BUF 128        /* each buffer's size */

struct stream_work {
    unsigned char v;                 /* the byte value to write */
    unsigned char *src, *dst;        /* device memory (cudaMalloc), SW_BUF bytes; src filled with v */
    unsigned char *hsrc, *hdst;      /* host memory, SW_BUF bytes; hsrc filled with v */
    unsigned char *out;              /* where the last issue writes */
    struct stream_work *self;        /* what the emulated kernels' args point at */
    void *args[1];
    cudaGraphExec_t graph;
};

/* The _ptsz runtime entry points, declared by the headers only under
 * CUDA_API_PER_THREAD_DEFAULT_STREAM. */
extern __typeof__(cudaLaunchKernel) cudaLaunchKernel_ptsz;
extern __typeof__(cudaLaunchKernelExC) cudaLaunchKernelExC_ptsz;
extern __typeof__(cudaLaunchCooperativeKernel) cudaLaunchCooperativeKernel_ptsz;
extern __typeof__(cudaMemcpyAsync) cudaMemcpyAsync_ptsz;
extern __typeof__(cudaMemcpyBatchAsync) cudaMemcpyBatchAsync_ptsz;
extern __typeof__(cudaMemcpy2DAsync) cudaMemcpy2DAsync_ptsz;
extern __typeof__(cudaMemcpy3DAsync) cudaMemcpy3DAsync_ptsz;
extern __typeof__(cudaMemcpy3DPeerAsync) cudaMemcpy3DPeerAsync_ptsz;
extern __typeof__(cudaMemsetAsync) cudaMemsetAsync_ptsz;
extern __typeof__(cudaMemset2DAsync) cudaMemset2DAsync_ptsz;
extern __typeof__(cudaMemset3DAsync) cudaMemset3DAsync_ptsz;
extern __typeof__(cudaGraphLaunch) cudaGraphLaunch_ptsz;
extern __typeof__(cudaLaunchHostFunc) cudaLaunchHostFunc_ptsz;
extern __typeof__(cudaStreamAddCallback) cudaStreamAddCallback_ptsz;
/* ... and the driver's, which cuda.h declares only under that macro. */
extern __typeof__(cuLaunchKernel) cuLaunchKernel_ptsz;
extern __typeof__(cuLaunchKernelEx) cuLaunchKernelEx_ptsz;
extern __typeof__(cuLaunchCooperativeKernel) cuLaunchCooperativeKernel_ptsz;
extern __typeof__(cuMemcpyHtoDAsync_v2) cuMemcpyHtoDAsync_v2_ptsz;
extern __typeof__(cuMemcpyDtoHAsync_v2) cuMemcpyDtoHAsync_v2_ptsz;
extern __typeof__(cuMemcpyDtoDAsync_v2) cuMemcpyDtoDAsync_v2_ptsz;
extern __typeof__(cuMemcpyAsync) cuMemcpyAsync_ptsz;
extern __typeof__(cuMemcpy2DAsync_v2) cuMemcpy2DAsync_v2_ptsz;
extern __typeof__(cuMemcpy3DAsync_v2) cuMemcpy3DAsync_v2_ptsz;
extern __typeof__(cuMemcpyPeerAsync) cuMemcpyPeerAsync_ptsz;
extern __typeof__(cuMemsetD8Async) cuMemsetD8Async_ptsz;
extern __typeof__(cuMemsetD16Async) cuMemsetD16Async_ptsz;
extern __typeof__(cuMemsetD32Async) cuMemsetD32Async_ptsz;
extern __typeof__(cuMemsetD2D8Async) cuMemsetD2D8Async_ptsz;
extern __typeof__(cuMemsetD2D16Async) cuMemsetD2D16Async_ptsz;
extern __typeof__(cuMemsetD2D32Async) cuMemsetD2D32Async_ptsz;
extern __typeof__(cuLaunchHostFunc) cuLaunchHostFunc_ptsz;
extern __typeof__(cuStreamAddCallback) cuStreamAddCallback_ptsz;
extern __typeof__(cuGraphLaunch) cuGraphLaunch_ptsz;

/* The emulated kernel (docs/emulator-cuda.md: a host function called with the args array). */
static void sw_fill_kernel(void **args)
{
    struct stream_work *w = *(struct stream_work **)args[0];
    memset(w->dst, w->v, SW_BYTES);
}

static void sw_fill_host(void *arg)
{
    struct stream_work *w = arg;
    memset(w->dst, w->v, SW_BYTES);
}

static void sw_fill_callback(cudaStream_t s, cudaError_t status, void *arg)
{
    (void)s;
    (void)status;
    sw_fill_host(arg);
}

static void CUDA_CB sw_fill_cu_callback(CUstream s, CUresult status, void *arg)
{
    (void)s;
    (void)status;
    sw_fill_host(arg);
}

#define SW_KERNEL ((const void *)(uintptr_t)sw_fill_kernel)
#define SW_CUFN ((CUfunction)(uintptr_t)sw_fill_kernel)
#define SW_ONE ((dim3){1, 1, 1})
#define SW_DPTR(p) ((CUdeviceptr)(uintptr_t)(p))

/* ---- how each kind is issued (0: accepted) ---- */
/* Subscribes cb to both API domains, where every way work reaches a stream is reported: 0 or -1. */
static inline int sw_subscribe(CUpti_SubscriberHandle *sub, CUpti_CallbackFunc cb)
{
    return cuptiSubscribe(sub, cb, NULL) == CUPTI_SUCCESS &&
                   cuptiEnableDomain(1, *sub, CUPTI_CB_DOMAIN_RUNTIME_API) == CUPTI_SUCCESS &&
                   cuptiEnableDomain(1, *sub, CUPTI_CB_DOMAIN_DRIVER_API) == CUPTI_SUCCESS
               ? 0
               : -1;
}

static inline int sw_launch_ex(struct stream_work *w, cudaStream_t s, bool ptsz)
{
    cudaLaunchConfig_t c = {SW_ONE, SW_ONE, 0, s, NULL, 0};
    return ptsz ? cudaLaunchKernelExC_ptsz(&c, SW_KERNEL, w->args) : cudaLaunchKernelExC(&c, SW_KERNEL, w->args);
}

static inline int sw_batch(struct stream_work *w, cudaStream_t s, bool ptsz)
{
    void *dsts[2] = {w->dst, w->dst + SW_BYTES / 2};
    const void *srcs[2] = {w->src, w->src + SW_BYTES / 2};
    size_t sizes[2] = {SW_BYTES / 2, SW_BYTES / 2}, first = 0;
    struct cudaMemcpyAttributes attr = {.srcAccessOrder = cudaMemcpySrcAccessOrderStream};
    return ptsz ? cudaMemcpyBatchAsync_ptsz((void *const *)dsts, srcs, sizes, 2, &attr, &first, 1, s)
                : cudaMemcpyBatchAsync((void *const *)dsts, srcs, sizes, 2, &attr, &first, 1, s);
}

/* 2D and 3D copies and memsets: SW_BYTES as 2 slices of 2 rows of 16 bytes, 16 bytes apart. */
static inline struct cudaMemcpy3DParms sw_3d(struct stream_work *w)
{
    struct cudaMemcpy3DParms p = {0};
    p.srcPtr = (struct cudaPitchedPtr){w->src, 16, 16, 2};
    p.dstPtr = (struct cudaPitchedPtr){w->dst, 16, 16, 2};
    p.extent = (struct cudaExtent){16, 2, 2};
    p.kind = cudaMemcpyDeviceToDevice;
    return p;
}

static inline int sw_3d_rt(struct stream_work *w, cudaStream_t s, bool ptsz)
{
    struct cudaMemcpy3DParms p = sw_3d(w);
    return ptsz ? cudaMemcpy3DAsync_ptsz(&p, s) : cudaMemcpy3DAsync(&p, s);
}

static inline int sw_3d_peer(struct stream_work *w, cudaStream_t s, bool ptsz)
{
    struct cudaMemcpy3DParms q = sw_3d(w);
    struct cudaMemcpy3DPeerParms p = {0};
    p.srcPtr = q.srcPtr;
    p.dstPtr = q.dstPtr;
    p.extent = q.extent;
    return ptsz ? cudaMemcpy3DPeerAsync_ptsz(&p, s) : cudaMemcpy3DPeerAsync(&p, s);
}

static inline int sw_memset_3d(struct stream_work *w, cudaStream_t s, bool ptsz)
{
    struct cudaPitchedPtr p = {w->dst, 16, 16, 2};
    struct cudaExtent e = {16, 2, 2};
    return ptsz ? cudaMemset3DAsync_ptsz(p, w->v, e, s) : cudaMemset3DAsync(p, w->v, e, s);
}

static inline int sw_cu_launch_ex(struct stream_work *w, cudaStream_t s, bool ptsz)
{
    CUlaunchConfig c = {1, 1, 1, 1, 1, 1, 0, (CUstream)s, NULL, 0};
    return ptsz ? cuLaunchKernelEx_ptsz(&c, SW_CUFN, w->args, NULL) : cuLaunchKernelEx(&c, SW_CUFN, w->args, NULL);
}

static inline int sw_cu_2d(struct stream_work *w, cudaStream_t s, bool ptsz)
{
    CUDA_MEMCPY2D m = {.srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = SW_DPTR(w->src), .srcPitch = 16,
                       .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = SW_DPTR(w->dst), .dstPitch = 16,
                       .WidthInBytes = 16, .Height = 4};
    return ptsz ? cuMemcpy2DAsync_v2_ptsz(&m, (CUstream)s) : cuMemcpy2DAsync_v2(&m, (CUstream)s);
}

static inline int sw_cu_3d(struct stream_work *w, cudaStream_t s, bool ptsz)
{
    CUDA_MEMCPY3D m = {.srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = SW_DPTR(w->src), .srcPitch = 16,
                       .srcHeight = 2, .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = SW_DPTR(w->dst),
                       .dstPitch = 16, .dstHeight = 2, .WidthInBytes = 16, .Height = 2, .Depth = 2};
    return ptsz ? cuMemcpy3DAsync_v2_ptsz(&m, (CUstream)s) : cuMemcpy3DAsync_v2(&m, (CUstream)s);
}

static inline int sw_cu_peer(struct stream_work *w, cudaStream_t s, bool ptsz)
{
    CUcontext ctx;
    if (cuCtxGetCurrent(&ctx) != CUDA_SUCCESS)
        return -1;
    return ptsz ? cuMemcpyPeerAsync_ptsz(SW_DPTR(w->dst), ctx, SW_DPTR(w->src), ctx, SW_BYTES, (CUstream)s)
                : cuMemcpyPeerAsync(SW_DPTR(w->dst), ctx, SW_DPTR(w->src), ctx, SW_BYTES, (CUstream)s);
}

#define SW_V16(w) ((unsigned short)((w)->v * 0x0101u))
#define SW_V32(w) ((unsigned int)((w)->v * 0x01010101u))
#define SW_CS ((CUstream)s)

/* X(id, "name CUPTI reports", RUNTIME or DRIVER, cbid, NESTED(driver cbid) or NONE, the buffer
 * written (dst or hdst), the call on w and s).  The cbid tokens are the suffixes of
 * CUPTI_RUNTIME_TRACE_CBID_ / CUPTI_DRIVER_TRACE_CBID_. */
#define SW_KINDS(X)                                                                                                 \
    X(rt_launch, "cudaLaunchKernel", RUNTIME, cudaLaunchKernel_v7000, NESTED(cuLaunchKernel), dst,                            \
      cudaLaunchKernel(SW_KERNEL, SW_ONE, SW_ONE, w->args, 0, s))                                                    \
    X(rt_launch_ptsz, "cudaLaunchKernel_ptsz", RUNTIME, cudaLaunchKernel_ptsz_v7000, NESTED(cuLaunchKernel_ptsz), dst,        \
      cudaLaunchKernel_ptsz(SW_KERNEL, SW_ONE, SW_ONE, w->args, 0, s))                                               \
    X(rt_launch_ex, "cudaLaunchKernelExC", RUNTIME, cudaLaunchKernelExC_v11060, NESTED(cuLaunchKernelEx), dst,                \
      sw_launch_ex(w, s, false))                                                                                     \
    X(rt_launch_ex_ptsz, "cudaLaunchKernelExC_ptsz", RUNTIME, cudaLaunchKernelExC_ptsz_v11060, NESTED(cuLaunchKernelEx_ptsz), \
      dst, sw_launch_ex(w, s, true))                                                                                 \
    X(rt_coop, "cudaLaunchCooperativeKernel", RUNTIME, cudaLaunchCooperativeKernel_v9000, NESTED(cuLaunchCooperativeKernel),  \
      dst, cudaLaunchCooperativeKernel(SW_KERNEL, SW_ONE, SW_ONE, w->args, 0, s))                                    \
    X(rt_coop_ptsz, "cudaLaunchCooperativeKernel_ptsz", RUNTIME, cudaLaunchCooperativeKernel_ptsz_v9000,              \
      NESTED(cuLaunchCooperativeKernel_ptsz), dst, cudaLaunchCooperativeKernel_ptsz(SW_KERNEL, SW_ONE, SW_ONE, w->args, 0, s)) \
    X(rt_copy, "cudaMemcpyAsync", RUNTIME, cudaMemcpyAsync_v3020, NESTED(cuMemcpyAsync), dst,                                 \
      cudaMemcpyAsync(w->dst, w->src, SW_BYTES, cudaMemcpyDeviceToDevice, s))                                        \
    X(rt_copy_ptsz, "cudaMemcpyAsync_ptsz", RUNTIME, cudaMemcpyAsync_ptsz_v7000, NESTED(cuMemcpyAsync_ptsz), dst,             \
      cudaMemcpyAsync_ptsz(w->dst, w->src, SW_BYTES, cudaMemcpyDeviceToDevice, s))                                   \
    X(rt_batch, "cudaMemcpyBatchAsync", RUNTIME, cudaMemcpyBatchAsync_v13000, NESTED(cuMemcpyBatchAsync_v2), dst,             \
      sw_batch(w, s, false))                                                                                         \
    X(rt_batch_ptsz, "cudaMemcpyBatchAsync_ptsz", RUNTIME, cudaMemcpyBatchAsync_ptsz_v13000,                          \
      NESTED(cuMemcpyBatchAsync_v2_ptsz), dst, sw_batch(w, s, true))                                                         \
    X(rt_copy2d, "cudaMemcpy2DAsync", RUNTIME, cudaMemcpy2DAsync_v3020, NESTED(cuMemcpy2DAsync_v2), dst,                      \
      cudaMemcpy2DAsync(w->dst, 16, w->src, 16, 16, 4, cudaMemcpyDeviceToDevice, s))                                 \
    X(rt_copy2d_ptsz, "cudaMemcpy2DAsync_ptsz", RUNTIME, cudaMemcpy2DAsync_ptsz_v7000, NESTED(cuMemcpy2DAsync_v2_ptsz), dst,  \
      cudaMemcpy2DAsync_ptsz(w->dst, 16, w->src, 16, 16, 4, cudaMemcpyDeviceToDevice, s))                            \
    X(rt_copy3d, "cudaMemcpy3DAsync", RUNTIME, cudaMemcpy3DAsync_v3020, NESTED(cuMemcpy3DAsync_v2), dst,                      \
      sw_3d_rt(w, s, false))                                                                                         \
    X(rt_copy3d_ptsz, "cudaMemcpy3DAsync_ptsz", RUNTIME, cudaMemcpy3DAsync_ptsz_v7000, NESTED(cuMemcpy3DAsync_v2_ptsz), dst,  \
      sw_3d_rt(w, s, true))                                                                                          \
    X(rt_peer, "cudaMemcpyPeerAsync", RUNTIME, cudaMemcpyPeerAsync_v4000, NESTED(cuMemcpyPeerAsync), dst,                     \
      cudaMemcpyPeerAsync(w->dst, 0, w->src, 0, SW_BYTES, s))                                                        \
    X(rt_peer3d, "cudaMemcpy3DPeerAsync", RUNTIME, cudaMemcpy3DPeerAsync_v4000, NESTED(cuMemcpy3DPeerAsync), dst,             \
      sw_3d_peer(w, s, false))                                                                                       \
    X(rt_peer3d_ptsz, "cudaMemcpy3DPeerAsync_ptsz", RUNTIME, cudaMemcpy3DPeerAsync_ptsz_v7000,                        \
      NESTED(cuMemcpy3DPeerAsync_ptsz), dst, sw_3d_peer(w, s, true))                                                         \
    X(rt_set, "cudaMemsetAsync", RUNTIME, cudaMemsetAsync_v3020, NESTED(cuMemsetD8Async), dst,                                \
      cudaMemsetAsync(w->dst, w->v, SW_BYTES, s))                                                                    \
    X(rt_set_ptsz, "cudaMemsetAsync_ptsz", RUNTIME, cudaMemsetAsync_ptsz_v7000, NESTED(cuMemsetD8Async_ptsz), dst,            \
      cudaMemsetAsync_ptsz(w->dst, w->v, SW_BYTES, s))                                                               \
    X(rt_set2d, "cudaMemset2DAsync", RUNTIME, cudaMemset2DAsync_v3020, NESTED(cuMemsetD2D8Async), dst,                        \
      cudaMemset2DAsync(w->dst, 16, w->v, 16, 4, s))                                                                 \
    X(rt_set2d_ptsz, "cudaMemset2DAsync_ptsz", RUNTIME, cudaMemset2DAsync_ptsz_v7000, NESTED(cuMemsetD2D8Async_ptsz), dst,    \
      cudaMemset2DAsync_ptsz(w->dst, 16, w->v, 16, 4, s))                                                            \
    X(rt_set3d, "cudaMemset3DAsync", RUNTIME, cudaMemset3DAsync_v3020, NONE, dst, sw_memset_3d(w, s, false))             \
    X(rt_set3d_ptsz, "cudaMemset3DAsync_ptsz", RUNTIME, cudaMemset3DAsync_ptsz_v7000, NONE, dst, sw_memset_3d(w, s, true)) \
    X(rt_graph, "cudaGraphLaunch", RUNTIME, cudaGraphLaunch_v10000, NESTED(cuGraphLaunch), dst, cudaGraphLaunch(w->graph, s)) \
    X(rt_graph_ptsz, "cudaGraphLaunch_ptsz", RUNTIME, cudaGraphLaunch_ptsz_v10000, NESTED(cuGraphLaunch_ptsz), dst,           \
      cudaGraphLaunch_ptsz(w->graph, s))                                                                             \
    X(rt_host, "cudaLaunchHostFunc", RUNTIME, cudaLaunchHostFunc_v10000, NESTED(cuLaunchHostFunc), dst,                       \
      cudaLaunchHostFunc(s, sw_fill_host, w))                                                                        \
    X(rt_host_ptsz, "cudaLaunchHostFunc_ptsz", RUNTIME, cudaLaunchHostFunc_ptsz_v10000, NESTED(cuLaunchHostFunc_ptsz), dst,   \
      cudaLaunchHostFunc_ptsz(s, sw_fill_host, w))                                                                   \
    X(rt_callback, "cudaStreamAddCallback", RUNTIME, cudaStreamAddCallback_v5000, NESTED(cuStreamAddCallback), dst,           \
      cudaStreamAddCallback(s, sw_fill_callback, w, 0))                                                              \
    X(rt_callback_ptsz, "cudaStreamAddCallback_ptsz", RUNTIME, cudaStreamAddCallback_ptsz_v7000,                      \
      NESTED(cuStreamAddCallback_ptsz), dst, cudaStreamAddCallback_ptsz(s, sw_fill_callback, w, 0))                          \
    X(cu_launch, "cuLaunchKernel", DRIVER, cuLaunchKernel, NONE, dst,                                                    \
      cuLaunchKernel(SW_CUFN, 1, 1, 1, 1, 1, 1, 0, SW_CS, w->args, NULL))                                            \
    X(cu_launch_ptsz, "cuLaunchKernel_ptsz", DRIVER, cuLaunchKernel_ptsz, NONE, dst,                                     \
      cuLaunchKernel_ptsz(SW_CUFN, 1, 1, 1, 1, 1, 1, 0, SW_CS, w->args, NULL))                                       \
    X(cu_launch_ex, "cuLaunchKernelEx", DRIVER, cuLaunchKernelEx, NONE, dst, sw_cu_launch_ex(w, s, false))               \
    X(cu_launch_ex_ptsz, "cuLaunchKernelEx_ptsz", DRIVER, cuLaunchKernelEx_ptsz, NONE, dst, sw_cu_launch_ex(w, s, true)) \
    X(cu_coop, "cuLaunchCooperativeKernel", DRIVER, cuLaunchCooperativeKernel, NONE, dst,                                \
      cuLaunchCooperativeKernel(SW_CUFN, 1, 1, 1, 1, 1, 1, 0, SW_CS, w->args))                                       \
    X(cu_coop_ptsz, "cuLaunchCooperativeKernel_ptsz", DRIVER, cuLaunchCooperativeKernel_ptsz, NONE, dst,                 \
      cuLaunchCooperativeKernel_ptsz(SW_CUFN, 1, 1, 1, 1, 1, 1, 0, SW_CS, w->args))                                  \
    X(cu_htod, "cuMemcpyHtoDAsync_v2", DRIVER, cuMemcpyHtoDAsync_v2, NONE, dst,                                          \
      cuMemcpyHtoDAsync_v2(SW_DPTR(w->dst), w->hsrc, SW_BYTES, SW_CS))                                               \
    X(cu_htod_ptsz, "cuMemcpyHtoDAsync_v2_ptsz", DRIVER, cuMemcpyHtoDAsync_v2_ptsz, NONE, dst,                           \
      cuMemcpyHtoDAsync_v2_ptsz(SW_DPTR(w->dst), w->hsrc, SW_BYTES, SW_CS))                                          \
    X(cu_dtoh, "cuMemcpyDtoHAsync_v2", DRIVER, cuMemcpyDtoHAsync_v2, NONE, hdst,                                         \
      cuMemcpyDtoHAsync_v2(w->hdst, SW_DPTR(w->src), SW_BYTES, SW_CS))                                               \
    X(cu_dtoh_ptsz, "cuMemcpyDtoHAsync_v2_ptsz", DRIVER, cuMemcpyDtoHAsync_v2_ptsz, NONE, hdst,                          \
      cuMemcpyDtoHAsync_v2_ptsz(w->hdst, SW_DPTR(w->src), SW_BYTES, SW_CS))                                          \
    X(cu_dtod, "cuMemcpyDtoDAsync_v2", DRIVER, cuMemcpyDtoDAsync_v2, NONE, dst,                                          \
      cuMemcpyDtoDAsync_v2(SW_DPTR(w->dst), SW_DPTR(w->src), SW_BYTES, SW_CS))                                       \
    X(cu_dtod_ptsz, "cuMemcpyDtoDAsync_v2_ptsz", DRIVER, cuMemcpyDtoDAsync_v2_ptsz, NONE, dst,                           \
      cuMemcpyDtoDAsync_v2_ptsz(SW_DPTR(w->dst), SW_DPTR(w->src), SW_BYTES, SW_CS))                                  \
    X(cu_copy, "cuMemcpyAsync", DRIVER, cuMemcpyAsync, NONE, dst,                                                        \
      cuMemcpyAsync(SW_DPTR(w->dst), SW_DPTR(w->src), SW_BYTES, SW_CS))                                              \
    X(cu_copy_ptsz, "cuMemcpyAsync_ptsz", DRIVER, cuMemcpyAsync_ptsz, NONE, dst,                                         \
      cuMemcpyAsync_ptsz(SW_DPTR(w->dst), SW_DPTR(w->src), SW_BYTES, SW_CS))                                         \
    X(cu_copy2d, "cuMemcpy2DAsync_v2", DRIVER, cuMemcpy2DAsync_v2, NONE, dst, sw_cu_2d(w, s, false))                     \
    X(cu_copy2d_ptsz, "cuMemcpy2DAsync_v2_ptsz", DRIVER, cuMemcpy2DAsync_v2_ptsz, NONE, dst, sw_cu_2d(w, s, true))       \
    X(cu_copy3d, "cuMemcpy3DAsync_v2", DRIVER, cuMemcpy3DAsync_v2, NONE, dst, sw_cu_3d(w, s, false))                     \
    X(cu_copy3d_ptsz, "cuMemcpy3DAsync_v2_ptsz", DRIVER, cuMemcpy3DAsync_v2_ptsz, NONE, dst, sw_cu_3d(w, s, true))       \
    X(cu_peer, "cuMemcpyPeerAsync", DRIVER, cuMemcpyPeerAsync, NONE, dst, sw_cu_peer(w, s, false))                       \
    X(cu_peer_ptsz, "cuMemcpyPeerAsync_ptsz", DRIVER, cuMemcpyPeerAsync_ptsz, NONE, dst, sw_cu_peer(w, s, true))         \
    X(cu_set8, "cuMemsetD8Async", DRIVER, cuMemsetD8Async, NONE, dst, cuMemsetD8Async(SW_DPTR(w->dst), w->v, SW_BYTES, SW_CS)) \
    X(cu_set8_ptsz, "cuMemsetD8Async_ptsz", DRIVER, cuMemsetD8Async_ptsz, NONE, dst,                                     \
      cuMemsetD8Async_ptsz(SW_DPTR(w->dst), w->v, SW_BYTES, SW_CS))                                                  \
    X(cu_set16, "cuMemsetD16Async", DRIVER, cuMemsetD16Async, NONE, dst,                                                 \
      cuMemsetD16Async(SW_DPTR(w->dst), SW_V16(w), SW_BYTES / 2, SW_CS))                                             \
    X(cu_set16_ptsz, "cuMemsetD16Async_ptsz", DRIVER, cuMemsetD16Async_ptsz, NONE, dst,                                  \
      cuMemsetD16Async_ptsz(SW_DPTR(w->dst), SW_V16(w), SW_BYTES / 2, SW_CS))                                        \
    X(cu_set32, "cuMemsetD32Async", DRIVER, cuMemsetD32Async, NONE, dst,                                                 \
      cuMemsetD32Async(SW_DPTR(w->dst), SW_V32(w), SW_BYTES / 4, SW_CS))                                             \
    X(cu_set32_ptsz, "cuMemsetD32Async_ptsz", DRIVER, cuMemsetD32Async_ptsz, NONE, dst,                                  \
      cuMemsetD32Async_ptsz(SW_DPTR(w->dst), SW_V32(w), SW_BYTES / 4, SW_CS))                                        \
    X(cu_set2d8, "cuMemsetD2D8Async", DRIVER, cuMemsetD2D8Async, NONE, dst,                                              \
      cuMemsetD2D8Async(SW_DPTR(w->dst), 16, w->v, 16, 4, SW_CS))                                                    \
    X(cu_set2d8_ptsz, "cuMemsetD2D8Async_ptsz", DRIVER, cuMemsetD2D8Async_ptsz, NONE, dst,                               \
      cuMemsetD2D8Async_ptsz(SW_DPTR(w->dst), 16, w->v, 16, 4, SW_CS))                                               \
    X(cu_set2d16, "cuMemsetD2D16Async", DRIVER, cuMemsetD2D16Async, NONE, dst,                                           \
      cuMemsetD2D16Async(SW_DPTR(w->dst), 16, SW_V16(w), 8, 4, SW_CS))                                               \
    X(cu_set2d16_ptsz, "cuMemsetD2D16Async_ptsz", DRIVER, cuMemsetD2D16Async_ptsz, NONE, dst,                            \
      cuMemsetD2D16Async_ptsz(SW_DPTR(w->dst), 16, SW_V16(w), 8, 4, SW_CS))                                          \
    X(cu_set2d32, "cuMemsetD2D32Async", DRIVER, cuMemsetD2D32Async, NONE, dst,                                           \
      cuMemsetD2D32Async(SW_DPTR(w->dst), 16, SW_V32(w), 4, 4, SW_CS))                                               \
    X(cu_set2d32_ptsz, "cuMemsetD2D32Async_ptsz", DRIVER, cuMemsetD2D32Async_ptsz, NONE, dst,                            \
      cuMemsetD2D32Async_ptsz(SW_DPTR(w->dst), 16, SW_V32(w), 4, 4, SW_CS))                                          \
    X(cu_host, "cuLaunchHostFunc", DRIVER, cuLaunchHostFunc, NONE, dst, cuLaunchHostFunc(SW_CS, sw_fill_host, w))        \
    X(cu_host_ptsz, "cuLaunchHostFunc_ptsz", DRIVER, cuLaunchHostFunc_ptsz, NONE, dst,                                   \
      cuLaunchHostFunc_ptsz(SW_CS, sw_fill_host, w))                                                                 \
    X(cu_callback, "cuStreamAddCallback", DRIVER, cuStreamAddCallback, NONE, dst,                                        \
      cuStreamAddCallback(SW_CS, sw_fill_cu_callback, w, 0))                                                         \
    X(cu_callback_ptsz, "cuStreamAddCallback_ptsz", DRIVER, cuStreamAddCallback_ptsz, NONE, dst,                         \
      cuStreamAddCallback_ptsz(SW_CS, sw_fill_cu_callback, w, 0))                                                    \
    X(cu_graph, "cuGraphLaunch", DRIVER, cuGraphLaunch, NONE, dst, cuGraphLaunch(w->graph, SW_CS))                       \
    X(cu_graph_ptsz, "cuGraphLaunch_ptsz", DRIVER, cuGraphLaunch_ptsz, NONE, dst, cuGraphLaunch_ptsz(w->graph, SW_CS))

enum sw_domain { SW_DRIVER = 1, SW_RUNTIME = 2 };   /* CUPTI_CB_DOMAIN_DRIVER_API, _RUNTIME_API */

#define SW_DOMAIN_RUNTIME SW_RUNTIME
#define SW_DOMAIN_DRIVER SW_DRIVER
#define SW_CBID_RUNTIME(x) CUPTI_RUNTIME_TRACE_CBID_##x
#define SW_CBID_DRIVER(x) CUPTI_DRIVER_TRACE_CBID_##x
#define SW_NESTED_NONE 0
#define SW_NESTED_NESTED(x) CUPTI_DRIVER_TRACE_CBID_##x
#define SW_HOST_dst 0
#define SW_HOST_hdst 1

#define X(id, name, domain, cbid, nested, dest, expr)                      \
    static inline int sw_issue_##id(struct stream_work *w, cudaStream_t s) \
    {                                                                      \
        w->out = w->dest;                                                  \
        return (int)(expr);                                                \
    }
SW_KINDS(X)
#undef X

struct sw_kind {
    const char *id, *name;
    enum sw_domain domain;
    uint32_t cbid, nested;   /* nested: the driver cbid reported inside a runtime call, 0: none */
    int writes_host;         /* 1: the kind writes w->hdst, 0: w->dst */
    int (*issue)(struct stream_work *w, cudaStream_t s);
};

static const struct sw_kind sw_kinds[] = {
#define X(id, name, domain, cbid, nested, dest, expr) \
    {#id, name, SW_DOMAIN_##domain, SW_CBID_##domain(cbid), SW_NESTED_##nested, SW_HOST_##dest, sw_issue_##id},
    SW_KINDS(X)
#undef X
};
#define SW_N_KINDS ((int)(sizeof sw_kinds / sizeof sw_kinds[0]))

/* Allocates w's buffers (src and hsrc filled with v), its kernel args and a graph of one kernel
 * node; 0 on success. */
static inline int sw_init(struct stream_work *w, unsigned char v)
{
    memset(w, 0, sizeof *w);
    w->v = v;
    w->self = w;
    w->args[0] = &w->self;
    if (cudaMalloc((void **)&w->src, SW_BUF) != cudaSuccess || cudaMalloc((void **)&w->dst, SW_BUF) != cudaSuccess ||
        cudaMallocHost((void **)&w->hsrc, SW_BUF) != cudaSuccess ||
        cudaMallocHost((void **)&w->hdst, SW_BUF) != cudaSuccess)
        return -1;
    if (cudaMemset(w->src, v, SW_BUF) != cudaSuccess || cudaMemset(w->dst, 0, SW_BUF) != cudaSuccess)
        return -1;
    memset(w->hsrc, v, SW_BUF);
    memset(w->hdst, 0, SW_BUF);
    cudaGraph_t g;
    cudaGraphNode_t node;
    struct cudaKernelNodeParams k = {(void *)(uintptr_t)sw_fill_kernel, SW_ONE, SW_ONE, 0, w->args, NULL};
    if (cudaGraphCreate(&g, 0) != cudaSuccess || cudaGraphAddKernelNode(&node, g, NULL, 0, &k) != cudaSuccess ||
        cudaGraphInstantiate(&w->graph, g, 0) != cudaSuccess || cudaGraphDestroy(g) != cudaSuccess)
        return -1;
    return 0;
}

/* The buffer kind k writes. */
static inline unsigned char *sw_out(const struct stream_work *w, const struct sw_kind *k)
{
    return k->writes_host ? w->hdst : w->dst;
}

#endif
