/* The public stream functions of the runtime API, and cudaDeviceSynchronize (every stream). */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <cupti_runtime_cbid.h>
#include <generated_cuda_runtime_api_meta.h>

#include "capture.h"
#include "errors.h"
#include "export.h"
#include "stream.h"
#include "stream_object.h"
#include "trace.h"
#include "unloading.h"

static cudaError_t stream_create(cudaStream_t *out, unsigned flags, int priority)
{
    if (out == NULL || (flags & ~(unsigned)cudaStreamNonBlocking))
        return cudaErrorInvalidValue;
    /* CUDA clamps priorities into [greatest, least] = [-5, 0]. */
    if (priority < -5)
        priority = -5;
    if (priority > 0)
        priority = 0;
    struct CUstream_st *s = emu_stream_create(flags, priority);
    if (s == NULL)
        return cudaErrorMemoryAllocation;
    *out = s;
    return cudaSuccess;
}

EMU_EXPORT cudaError_t cudaStreamCreate(cudaStream_t *pStream)
{
    return emu_result(stream_create(pStream, cudaStreamDefault, 0));
}

EMU_EXPORT cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
{
    return emu_result(stream_create(pStream, flags, 0));
}

EMU_EXPORT cudaError_t cudaStreamCreateWithPriority(cudaStream_t *pStream, unsigned int flags, int priority)
{
    return emu_result(stream_create(pStream, flags, priority));
}

EMU_EXPORT cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
    return emu_result(emu_stream_destroy(stream));
}

static cudaError_t stream_query(cudaStream_t stream, bool ptsz)
{
    struct CUstream_st *s;
    cudaError_t err = emu_stream_resolve(stream, ptsz, &s);
    if (err != cudaSuccess)
        return err;
    if ((err = emu_capture_sync_check(s)) != cudaSuccess)
        return err;
    pthread_mutex_lock(&s->mu);
    bool idle = s->completed == s->enqueued;
    pthread_mutex_unlock(&s->mu);
    return idle ? cudaSuccess : cudaErrorNotReady;
}

EMU_EXPORT cudaError_t cudaStreamQuery(cudaStream_t stream)
{
    cudaStreamQuery_v3020_params p = {stream};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_v3020, "cudaStreamQuery", &p, stream_query(stream, false));
}

EMU_EXPORT cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream)
{
    cudaStreamQuery_ptsz_v7000_params p = {stream};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_ptsz_v7000, "cudaStreamQuery_ptsz", &p, stream_query(stream, true));
}

static cudaError_t stream_synchronize(cudaStream_t stream, bool ptsz)
{
    struct CUstream_st *s;
    cudaError_t err = emu_stream_resolve(stream, ptsz, &s);
    if (err != cudaSuccess)
        return err;
    if ((err = emu_capture_sync_check(s)) != cudaSuccess)
        return err;
    pthread_mutex_lock(&s->mu);
    uint64_t target = s->enqueued;
    pthread_mutex_unlock(&s->mu);
    emu_stream_wait_seq(s, target);
    return cudaSuccess;
}

EMU_EXPORT cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    cudaStreamSynchronize_v3020_params p = {stream};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, "cudaStreamSynchronize", &p,
               stream_synchronize(stream, false));
}

EMU_EXPORT cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream)
{
    cudaStreamSynchronize_ptsz_v7000_params p = {stream};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000, "cudaStreamSynchronize_ptsz", &p,
               stream_synchronize(stream, true));
}

static cudaError_t device_sync(void)
{
    if (emu_unloading())
        return cudaErrorCudartUnloading;
    cudaError_t cap = emu_capture_device_sync();
    if (cap != cudaSuccess)
        return cap;
    emu_device_sync();
    return cudaSuccess;
}

EMU_EXPORT cudaError_t cudaDeviceSynchronize(void)
{
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020, "cudaDeviceSynchronize", NULL, device_sync());
}

/* Getters: resolve then read fields that never change while the handle is alive. */
#define STREAM_GETTER(NAME, PTSZ, TYPE, OUT, EXPR)                       \
    EMU_EXPORT cudaError_t NAME(cudaStream_t hStream, TYPE *OUT)         \
    {                                                                    \
        struct CUstream_st *s;                                           \
        if (OUT == NULL)                                                 \
            return emu_result(cudaErrorInvalidValue);                    \
        cudaError_t err = emu_stream_resolve(hStream, PTSZ, &s);         \
        if (err == cudaSuccess)                                          \
            *OUT = (EXPR);                                               \
        return emu_result(err);                                          \
    }

STREAM_GETTER(cudaStreamGetFlags, false, unsigned int, flags, s->flags)
STREAM_GETTER(cudaStreamGetFlags_ptsz, true, unsigned int, flags, s->flags)
STREAM_GETTER(cudaStreamGetPriority, false, int, priority, s->priority)
STREAM_GETTER(cudaStreamGetPriority_ptsz, true, int, priority, s->priority)
STREAM_GETTER(cudaStreamGetId, false, unsigned long long, streamId, s->id)
STREAM_GETTER(cudaStreamGetId_ptsz, true, unsigned long long, streamId, s->id)
STREAM_GETTER(cudaStreamGetDevice, false, int, device, s->device)
STREAM_GETTER(cudaStreamGetDevice_ptsz, true, int, device, s->device)

static cudaError_t is_capturing(cudaStream_t stream, enum cudaStreamCaptureStatus *status, bool ptsz)
{
    if (status == NULL)
        return cudaErrorInvalidValue;
    struct CUstream_st *s;
    cudaError_t err = emu_stream_resolve(stream, ptsz, &s);
    if (err == cudaSuccess)
        err = emu_capture_status(s, status, NULL);
    return err;
}

EMU_EXPORT cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus *pCaptureStatus)
{
    return emu_result(is_capturing(stream, pCaptureStatus, false));
}

EMU_EXPORT cudaError_t cudaStreamIsCapturing_ptsz(cudaStream_t stream, enum cudaStreamCaptureStatus *pCaptureStatus)
{
    return emu_result(is_capturing(stream, pCaptureStatus, true));
}

EMU_EXPORT cudaError_t usbyteEmuStreamIsCapturing(cudaStream_t stream, int ptsz, enum cudaStreamCaptureStatus *status)
{
    return is_capturing(stream, status, ptsz != 0);
}

static cudaError_t capture_info(cudaStream_t stream, enum cudaStreamCaptureStatus *status, unsigned long long *id,
                                cudaGraph_t *graph, const cudaGraphNode_t **deps, const cudaGraphEdgeData **edges,
                                size_t *n_deps, bool ptsz)
{
    if (status == NULL)
        return cudaErrorInvalidValue;
    struct CUstream_st *s;
    cudaError_t err = emu_stream_resolve(stream, ptsz, &s);
    if (err != cudaSuccess)
        return err;
    if ((err = emu_capture_status(s, status, id)) != cudaSuccess)
        return err;
    /* The graph being built and the dependency set are not modelled. */
    if (graph)
        *graph = NULL;
    if (deps)
        *deps = NULL;
    if (edges)
        *edges = NULL;
    if (n_deps)
        *n_deps = 0;
    return cudaSuccess;
}

EMU_EXPORT cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream, enum cudaStreamCaptureStatus *captureStatus_out,
                                                unsigned long long *id_out, cudaGraph_t *graph_out,
                                                const cudaGraphNode_t **dependencies_out,
                                                const cudaGraphEdgeData **edgeData_out, size_t *numDependencies_out)
{
    return emu_result(capture_info(stream, captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out,
                                   numDependencies_out, false));
}

EMU_EXPORT cudaError_t cudaStreamGetCaptureInfo_ptsz(cudaStream_t stream, enum cudaStreamCaptureStatus *captureStatus_out,
                                                     unsigned long long *id_out, cudaGraph_t *graph_out,
                                                     const cudaGraphNode_t **dependencies_out,
                                                     const cudaGraphEdgeData **edgeData_out, size_t *numDependencies_out)
{
    return emu_result(capture_info(stream, captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out,
                                   numDependencies_out, true));
}
