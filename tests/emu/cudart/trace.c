/* The hook behind the emulated CUPTI: libcupti.so.13 installs one function here. */
#include <stdatomic.h>
#include <stdint.h>

#include <cuda.h>

#include "export.h"
#include "trace.h"

_Atomic(usbyteEmuApiHookFn) emu_api_hook = NULL;
static atomic_uint next_correlation_id = 1;

EMU_EXPORT void usbyteEmuSetApiHook(usbyteEmuApiHookFn hook)
{
    atomic_store_explicit(&emu_api_hook, hook, memory_order_release);
}

void emu_trace_enter(struct emu_trace *t, usbyteEmuApiHookFn hook, int domain, uint32_t cbid, const char *name, const void *params)
{
    t->hook = hook;
    t->domain = domain;
    t->cbid = cbid;
    t->name = name;
    t->params = params;
    t->correlation_id = atomic_fetch_add(&next_correlation_id, 1);
    t->correlation_data = 0;
    hook(domain, cbid, 0, name, params, NULL, t->correlation_id, &t->correlation_data);
}

void emu_trace_exit(struct emu_trace *t, const void *ret)
{
    t->hook(t->domain, t->cbid, 1, t->name, t->params, ret, t->correlation_id, &t->correlation_data);
}

EMU_EXPORT uint32_t usbyteEmuApiCallback(int domain, uint32_t cbid, int site, const char *functionName,
                                         const void *params, const void *returnValue,
                                         uint32_t correlationId, uint64_t *correlationData)
{
    usbyteEmuApiHookFn hook = atomic_load_explicit(&emu_api_hook, memory_order_acquire);
    if (site == 0 && correlationId == 0)
        correlationId = atomic_fetch_add(&next_correlation_id, 1);
    if (hook != NULL)
        hook(domain, cbid, site, functionName, params, returnValue, correlationId, correlationData);
    return correlationId;
}

/* ---- driver functions reported inside runtime calls (EMU_NESTED) ---- */
/* The driver's code for a runtime error, as the driver function would have returned it. */
static CUresult driver_result(cudaError_t err)
{
    switch (err) {
    case cudaSuccess: return CUDA_SUCCESS;
    case cudaErrorInvalidValue:
    case cudaErrorInvalidPitchValue:
    case cudaErrorInvalidConfiguration:
    case cudaErrorInvalidMemcpyDirection: return CUDA_ERROR_INVALID_VALUE;
    case cudaErrorMemoryAllocation: return CUDA_ERROR_OUT_OF_MEMORY;
    case cudaErrorInvalidResourceHandle:
    case cudaErrorInvalidDeviceFunction: return CUDA_ERROR_INVALID_HANDLE;
    case cudaErrorInvalidDevice: return CUDA_ERROR_INVALID_DEVICE;
    case cudaErrorCooperativeLaunchTooLarge: return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
    case cudaErrorNotSupported: return CUDA_ERROR_NOT_SUPPORTED;
    case cudaErrorCudartUnloading: return CUDA_ERROR_DEINITIALIZED;
    default: return CUDA_ERROR_UNKNOWN;
    }
}

void emu_nested_enter(struct emu_nested *n, usbyteEmuApiHookFn hook, uint32_t cbid, const char *name, const void *params)
{
    *n = (struct emu_nested){hook, cbid, name, params, atomic_fetch_add(&next_correlation_id, 1), 0};
    hook(1 /* CUPTI_CB_DOMAIN_DRIVER_API */, cbid, 0, name, params, NULL, n->correlation_id, &n->correlation_data);
}

cudaError_t emu_nested_exit(struct emu_nested *n, cudaError_t err)
{
    CUresult r = driver_result(err);
    n->hook(1, n->cbid, 1, n->name, n->params, &r, n->correlation_id, &n->correlation_data);
    return err;
}
