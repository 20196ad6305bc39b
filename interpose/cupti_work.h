/* Every way work reaches a stream, as CUPTI reports it: the one list cupti_watch.c generates its
 * callback tables from (which ids to enable, where each call's stream is, what kind of work it
 * is).  X(name, KIND, stream): CUPTI_RUNTIME_TRACE_CBID_<name> / CUPTI_DRIVER_TRACE_CBID_<name>
 * is the callback id and <name>_params the parameter struct of CUPTI's generated_*_meta.h
 * headers; `stream` reads the stream from `p`, a const <name>_params *.  KIND is COMPUTE
 * (kernels, graphs, host functions, stream callbacks: they separate forward segments) or COPY
 * (copies, memsets, memory writes).
 *
 * A runtime call reports, inside its own callback, the driver function it goes through: the
 * watcher counts the runtime call and not its driver call.  A runtime function missing from the
 * runtime list (cudaMemcpyToSymbolAsync, copies to and from CUDA arrays, CUDA 12.8's
 * cudaMemcpyBatchAsync, whose parameter struct the CUDA 13 headers no longer define, ...) is
 * still seen through the driver function it calls. */
#ifndef USBYTE_CUPTI_WORK_H
#define USBYTE_CUPTI_WORK_H

#include <cupti.h>

#define UB_CUPTI_RUNTIME_WORK(X)                                                          \
    X(cudaLaunchKernel_v7000, COMPUTE, p->stream)                                         \
    X(cudaLaunchKernel_ptsz_v7000, COMPUTE, p->stream)                                    \
    X(cudaLaunchKernelExC_v11060, COMPUTE, p->config ? p->config->stream : NULL)          \
    X(cudaLaunchKernelExC_ptsz_v11060, COMPUTE, p->config ? p->config->stream : NULL)     \
    X(cudaLaunchCooperativeKernel_v9000, COMPUTE, p->stream)                              \
    X(cudaLaunchCooperativeKernel_ptsz_v9000, COMPUTE, p->stream)                         \
    X(cudaGraphLaunch_v10000, COMPUTE, p->stream)                                         \
    X(cudaGraphLaunch_ptsz_v10000, COMPUTE, p->stream)                                    \
    X(cudaLaunchHostFunc_v10000, COMPUTE, p->stream)                                      \
    X(cudaLaunchHostFunc_ptsz_v10000, COMPUTE, p->stream)                                 \
    X(cudaStreamAddCallback_v5000, COMPUTE, p->stream)                                    \
    X(cudaStreamAddCallback_ptsz_v7000, COMPUTE, p->stream)                               \
    X(cudaMemcpyAsync_v3020, COPY, p->stream)                                             \
    X(cudaMemcpyAsync_ptsz_v7000, COPY, p->stream)                                        \
    X(cudaMemcpyBatchAsync_v13000, COPY, p->stream)                                       \
    X(cudaMemcpyBatchAsync_ptsz_v13000, COPY, p->stream)                                  \
    X(cudaMemcpy2DAsync_v3020, COPY, p->stream)                                           \
    X(cudaMemcpy2DAsync_ptsz_v7000, COPY, p->stream)                                      \
    X(cudaMemcpy3DAsync_v3020, COPY, p->stream)                                           \
    X(cudaMemcpy3DAsync_ptsz_v7000, COPY, p->stream)                                      \
    X(cudaMemcpyPeerAsync_v4000, COPY, p->stream)                                         \
    X(cudaMemcpy3DPeerAsync_v4000, COPY, p->stream)                                       \
    X(cudaMemcpy3DPeerAsync_ptsz_v7000, COPY, p->stream)                                  \
    X(cudaMemsetAsync_v3020, COPY, p->stream)                                             \
    X(cudaMemsetAsync_ptsz_v7000, COPY, p->stream)                                        \
    X(cudaMemset2DAsync_v3020, COPY, p->stream)                                           \
    X(cudaMemset2DAsync_ptsz_v7000, COPY, p->stream)                                      \
    X(cudaMemset3DAsync_v3020, COPY, p->stream)                                           \
    X(cudaMemset3DAsync_ptsz_v7000, COPY, p->stream)

#define UB_CUPTI_DRIVER_WORK(X)                                                           \
    X(cuLaunchKernel, COMPUTE, p->hStream)                                                \
    X(cuLaunchKernel_ptsz, COMPUTE, p->hStream)                                           \
    X(cuLaunchKernelEx, COMPUTE, p->config ? p->config->hStream : NULL)                   \
    X(cuLaunchKernelEx_ptsz, COMPUTE, p->config ? p->config->hStream : NULL)              \
    X(cuLaunchCooperativeKernel, COMPUTE, p->hStream)                                     \
    X(cuLaunchCooperativeKernel_ptsz, COMPUTE, p->hStream)                                \
    X(cuGraphLaunch, COMPUTE, p->hStream)                                                 \
    X(cuGraphLaunch_ptsz, COMPUTE, p->hStream)                                            \
    X(cuLaunchHostFunc, COMPUTE, p->hStream)                                              \
    X(cuLaunchHostFunc_ptsz, COMPUTE, p->hStream)                                         \
    X(cuStreamAddCallback, COMPUTE, p->hStream)                                           \
    X(cuStreamAddCallback_ptsz, COMPUTE, p->hStream)                                      \
    X(cuMemcpyHtoDAsync_v2, COPY, p->hStream)                                             \
    X(cuMemcpyHtoDAsync_v2_ptsz, COPY, p->hStream)                                        \
    X(cuMemcpyDtoHAsync_v2, COPY, p->hStream)                                             \
    X(cuMemcpyDtoHAsync_v2_ptsz, COPY, p->hStream)                                        \
    X(cuMemcpyDtoDAsync_v2, COPY, p->hStream)                                             \
    X(cuMemcpyDtoDAsync_v2_ptsz, COPY, p->hStream)                                        \
    X(cuMemcpyAsync, COPY, p->hStream)                                                    \
    X(cuMemcpyAsync_ptsz, COPY, p->hStream)                                               \
    X(cuMemcpyBatchAsync_v2, COPY, p->hStream)                                            \
    X(cuMemcpyBatchAsync_v2_ptsz, COPY, p->hStream)                                       \
    X(cuMemcpy2DAsync_v2, COPY, p->hStream)                                               \
    X(cuMemcpy2DAsync_v2_ptsz, COPY, p->hStream)                                          \
    X(cuMemcpy3DAsync_v2, COPY, p->hStream)                                               \
    X(cuMemcpy3DAsync_v2_ptsz, COPY, p->hStream)                                          \
    X(cuMemcpyPeerAsync, COPY, p->hStream)                                                \
    X(cuMemcpyPeerAsync_ptsz, COPY, p->hStream)                                           \
    X(cuMemcpy3DPeerAsync, COPY, p->hStream)                                              \
    X(cuMemcpy3DPeerAsync_ptsz, COPY, p->hStream)                                         \
    X(cuMemsetD8Async, COPY, p->hStream)                                                  \
    X(cuMemsetD8Async_ptsz, COPY, p->hStream)                                             \
    X(cuMemsetD16Async, COPY, p->hStream)                                                 \
    X(cuMemsetD16Async_ptsz, COPY, p->hStream)                                            \
    X(cuMemsetD32Async, COPY, p->hStream)                                                 \
    X(cuMemsetD32Async_ptsz, COPY, p->hStream)                                            \
    X(cuMemsetD2D8Async, COPY, p->hStream)                                                \
    X(cuMemsetD2D8Async_ptsz, COPY, p->hStream)                                           \
    X(cuMemsetD2D16Async, COPY, p->hStream)                                               \
    X(cuMemsetD2D16Async_ptsz, COPY, p->hStream)                                          \
    X(cuMemsetD2D32Async, COPY, p->hStream)                                               \
    X(cuMemsetD2D32Async_ptsz, COPY, p->hStream)                                          \
    X(cuStreamWriteValue32, COPY, p->stream)                                              \
    X(cuStreamWriteValue32_ptsz, COPY, p->stream)                                         \
    X(cuStreamWriteValue32_v2, COPY, p->stream)                                           \
    X(cuStreamWriteValue32_v2_ptsz, COPY, p->stream)                                      \
    X(cuStreamWriteValue64, COPY, p->stream)                                              \
    X(cuStreamWriteValue64_ptsz, COPY, p->stream)                                         \
    X(cuStreamWriteValue64_v2, COPY, p->stream)                                           \
    X(cuStreamWriteValue64_v2_ptsz, COPY, p->stream)

typedef enum { UB_WORK_NONE, UB_WORK_COMPUTE, UB_WORK_COPY } ub_work_kind;

/* The stream of a stream-ordered call (domain: CUPTI_CB_DOMAIN_RUNTIME_API or _DRIVER_API), and
 * its kind through *kind; UB_WORK_NONE and NULL for any other callback id. */
static inline cudaStream_t ub_cupti_work_stream(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                                const void *params, ub_work_kind *kind)
{
    *kind = UB_WORK_NONE;
    if (!params)
        return NULL;
    /* name is pasted, never expanded: cuda.h maps some driver names to others (cuStreamWriteValue32
     * to cuStreamWriteValue32_v2), and each id here is the one CUPTI reports. */
#define UB_RT(name, k, stream)                       \
    case CUPTI_RUNTIME_TRACE_CBID_##name: {          \
        const name##_params *p = params;             \
        *kind = UB_WORK_##k;                         \
        return (cudaStream_t)(stream);               \
    }
#define UB_DRV(name, k, stream)                      \
    case CUPTI_DRIVER_TRACE_CBID_##name: {           \
        const name##_params *p = params;             \
        *kind = UB_WORK_##k;                         \
        return (cudaStream_t)(stream);               \
    }
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
        switch (cbid) {
            UB_CUPTI_RUNTIME_WORK(UB_RT)
        default:
            return NULL;
        }
    }
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
        switch (cbid) {
            UB_CUPTI_DRIVER_WORK(UB_DRV)
        default:
            return NULL;
        }
    }
#undef UB_RT
#undef UB_DRV
    return NULL;
}

#endif
