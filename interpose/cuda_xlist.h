/* The X-list of interpose/cuda_list.h (its comment says what each entry means), alone and without
 * includes, so that the preprocessor can expand it where C declarations cannot go: the version
 * script (libusbyte.map.in).  The parameter types are only text here; cuda_list.h includes the
 * headers that declare them. */
#ifndef USBYTE_CUDA_XLIST_H
#define USBYTE_CUDA_XLIST_H

#define UB_CUDA_LIST(X)                                                                           \
    X(cudaEventRecord, EVREC, (cudaEvent_t event, cudaStream_t stream), (event, stream),          \
      (event, stream, 0))                                                                         \
    X(cudaEventRecord_ptsz, EVREC, (cudaEvent_t event, cudaStream_t stream), (event, stream),     \
      (event, stream, 0))                                                                         \
    X(cudaEventRecordWithFlags, EVREC, (cudaEvent_t event, cudaStream_t stream, unsigned int flags),\
      (event, stream, flags), (event, stream, flags))                                             \
    X(cudaEventRecordWithFlags_ptsz, EVREC,                                                       \
      (cudaEvent_t event, cudaStream_t stream, unsigned int flags), (event, stream, flags),       \
      (event, stream, flags))                                                                     \
    X(cudaStreamWaitEvent, SWAIT, (cudaStream_t stream, cudaEvent_t event, unsigned int flags),   \
      (stream, event, flags), (stream, event))                                                    \
    X(cudaStreamWaitEvent_ptsz, SWAIT, (cudaStream_t stream, cudaEvent_t event, unsigned int flags),\
      (stream, event, flags), (stream, event))                                                    \
    X(cudaEventSynchronize, EVSYNC, (cudaEvent_t event), (event), (event))                        \
    X(cudaEventQuery, EVQUERY, (cudaEvent_t event), (event), (event))                             \
    X(cudaStreamSynchronize, SSYNC, (cudaStream_t stream), (stream), (stream))                    \
    X(cudaStreamSynchronize_ptsz, SSYNC, (cudaStream_t stream), (stream), (stream))               \
    X(cudaStreamQuery, SQUERY, (cudaStream_t stream), (stream), (stream))                         \
    X(cudaStreamQuery_ptsz, SQUERY, (cudaStream_t stream), (stream), (stream))                    \
    X(cudaDeviceSynchronize, DSYNC, (void), (), ())                                               \
    X(cudaStreamBeginCapture, BEGINCAP, (cudaStream_t stream, enum cudaStreamCaptureMode mode),   \
      (stream, mode), (stream))                                                                   \
    X(cudaStreamBeginCapture_ptsz, BEGINCAP, (cudaStream_t stream, enum cudaStreamCaptureMode mode),\
      (stream, mode), (stream ? stream : cudaStreamPerThread))                                    \
    X(cudaStreamBeginCaptureToGraph, BEGINCAP,                                                    \
      (cudaStream_t stream, cudaGraph_t graph, const cudaGraphNode_t *dependencies,               \
       const cudaGraphEdgeData *dependencyData, size_t numDependencies, enum cudaStreamCaptureMode mode),\
      (stream, graph, dependencies, dependencyData, numDependencies, mode), (stream))             \
    X(cudaStreamBeginCaptureToGraph_ptsz, BEGINCAP,                                               \
      (cudaStream_t stream, cudaGraph_t graph, const cudaGraphNode_t *dependencies,               \
       const cudaGraphEdgeData *dependencyData, size_t numDependencies, enum cudaStreamCaptureMode mode),\
      (stream, graph, dependencies, dependencyData, numDependencies, mode),                       \
      (stream ? stream : cudaStreamPerThread))                                                    \
    X(cudaStreamEndCapture, ENDCAP, (cudaStream_t stream, cudaGraph_t *graph), (stream, graph),   \
      (stream))                                                                                   \
    X(cudaStreamEndCapture_ptsz, ENDCAP, (cudaStream_t stream, cudaGraph_t *graph), (stream, graph),\
      (stream ? stream : cudaStreamPerThread))                                                    \
    X(cudaGetDriverEntryPoint, ENTRY,                                                             \
      (const char *symbol, void **funcPtr, unsigned long long flags,                              \
       enum cudaDriverEntryPointQueryResult *driverStatus), (symbol, funcPtr, flags, driverStatus), (funcPtr))\
    X(cudaGetDriverEntryPoint_ptsz, ENTRY,                                                        \
      (const char *symbol, void **funcPtr, unsigned long long flags,                              \
       enum cudaDriverEntryPointQueryResult *driverStatus), (symbol, funcPtr, flags, driverStatus), (funcPtr))\
    X(cudaGetDriverEntryPointByVersion, ENTRY,                                                    \
      (const char *symbol, void **funcPtr, unsigned int cudaVersion, unsigned long long flags,     \
       enum cudaDriverEntryPointQueryResult *driverStatus),                                       \
      (symbol, funcPtr, cudaVersion, flags, driverStatus), (funcPtr))                             \
    X(cudaGetDriverEntryPointByVersion_ptsz, ENTRY,                                               \
      (const char *symbol, void **funcPtr, unsigned int cudaVersion, unsigned long long flags,     \
       enum cudaDriverEntryPointQueryResult *driverStatus),                                       \
      (symbol, funcPtr, cudaVersion, flags, driverStatus), (funcPtr))                             \
    X(cudaThreadExchangeStreamCaptureMode, CALLONLY, (enum cudaStreamCaptureMode *mode), (mode), ())\
    X(cudaStreamDestroy, SDESTROY, (cudaStream_t stream), (stream), (stream))                     \
    X(cudaEventDestroy, EDESTROY, (cudaEvent_t event), (event), (event))                          \
    X(cudaEventCreateWithFlags, CALLONLY, (cudaEvent_t *event, unsigned int flags), (event, flags), ())\
    X(cudaEventElapsedTime, EVELAPSED, (float *ms, cudaEvent_t start, cudaEvent_t end),           \
      (ms, start, end), (start, end))                                                             \
    X(cudaStreamCreateWithPriority, CALLONLY,                                                     \
      (cudaStream_t *stream, unsigned int flags, int priority), (stream, flags, priority), ())    \
    X(cudaDeviceGetStreamPriorityRange, CALLONLY, (int *least, int *greatest), (least, greatest), ())\
    X(cudaGetDevice, CALLONLY, (int *device), (device), ())                                       \
    X(cudaSetDevice, CALLONLY, (int device), (device), ())                                        \
    X(cudaMalloc, CALLONLY, (void **ptr, size_t size), (ptr, size), ())                           \
    X(cudaFree, CALLONLY, (void *ptr), (ptr), ())                                                 \
    X(cudaMallocHost, CALLONLY, (void **ptr, size_t size), (ptr, size), ())                       \
    X(cudaFreeHost, CALLONLY, (void *ptr), (ptr), ())                                             \
    X(cudaMemcpyAsync, CALLONLY,                                                                  \
      (void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream),  \
      (dst, src, count, kind, stream), ())                                                        \
    X(cudaRuntimeGetVersion, CALLONLY, (int *version), (version), ())                             \
    X(cudaDriverGetVersion, CALLONLY, (int *version), (version), ())                              \
    X(cudaGetErrorString, CALLONLY, (cudaError_t error), (error), ())                           \
    X(cudaHostAlloc, CALLONLY, (void **ptr, size_t size, unsigned int flags), (ptr, size, flags), ())\
    X(cudaHostGetDevicePointer, CALLONLY, (void **dev, void *host, unsigned int flags),           \
      (dev, host, flags), ())                                                                     \
    X(cudaStreamIsCapturing, CALLONLY, (cudaStream_t stream, enum cudaStreamCaptureStatus *status),\
      (stream, status), ())                                                                       \
    X(cudaStreamGetFlags, CALLONLY, (cudaStream_t stream, unsigned int *flags), (stream, flags), ())\
    X(cudaStreamCreateWithFlags, CALLONLY, (cudaStream_t *stream, unsigned int flags),            \
      (stream, flags), ())                                                                        \
    X(cudaMemsetAsync, CALLONLY, (void *ptr, int value, size_t count, cudaStream_t stream),       \
      (ptr, value, count, stream), ())                                                            \
    X(cudaMemcpyBatchAsync, CALLONLY,                                                             \
      (void *const *dsts, const void *const *srcs, const size_t *sizes, size_t count,             \
       struct cudaMemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, cudaStream_t stream),\
      (dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, stream), ())

#endif
