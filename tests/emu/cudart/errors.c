/* Error state (per-thread last error, process-wide sticky error), error names and strings. */
#include <stdatomic.h>

#include "errors.h"
#include "export.h"

static __thread cudaError_t tl_last_error = cudaSuccess;
static _Atomic cudaError_t sticky_error = cudaSuccess;

cudaError_t emu_result(cudaError_t err)
{
    cudaError_t sticky = atomic_load_explicit(&sticky_error, memory_order_relaxed);
    if (__builtin_expect(sticky != cudaSuccess, 0))
        return sticky;
    if (err != cudaSuccess)
        tl_last_error = err;
    return err;
}

EMU_EXPORT void usbyteEmuSetStickyError(cudaError_t err)
{
    atomic_store(&sticky_error, err);
}

EMU_EXPORT cudaError_t cudaGetLastError(void)
{
    cudaError_t sticky = atomic_load_explicit(&sticky_error, memory_order_relaxed);
    if (sticky != cudaSuccess)
        return sticky;
    cudaError_t e = tl_last_error;
    tl_last_error = cudaSuccess;
    return e;
}

EMU_EXPORT cudaError_t cudaPeekAtLastError(void)
{
    cudaError_t sticky = atomic_load_explicit(&sticky_error, memory_order_relaxed);
    return sticky != cudaSuccess ? sticky : tl_last_error;
}

#define EMU_ERRORS(X)                                                                 \
    X(cudaSuccess, "no error")                                                        \
    X(cudaErrorInvalidValue, "invalid argument")                                      \
    X(cudaErrorMemoryAllocation, "out of memory")                                     \
    X(cudaErrorInitializationError, "initialization error")                           \
    X(cudaErrorCudartUnloading, "driver shutting down")                               \
    X(cudaErrorInvalidConfiguration, "invalid configuration argument")                \
    X(cudaErrorInvalidPitchValue, "invalid pitch argument")                           \
    X(cudaErrorInvalidSymbol, "invalid device symbol")                                \
    X(cudaErrorInvalidMemcpyDirection, "invalid copy direction for memcpy")           \
    X(cudaErrorInsufficientDriver, "CUDA driver version is insufficient for CUDA runtime version") \
    X(cudaErrorNoDevice, "no CUDA-capable device is detected")                        \
    X(cudaErrorInvalidDevice, "invalid device ordinal")                               \
    X(cudaErrorInvalidDeviceFunction, "invalid device function")                      \
    X(cudaErrorInvalidResourceHandle, "invalid resource handle")                      \
    X(cudaErrorIllegalAddress, "an illegal memory access was encountered")            \
    X(cudaErrorNotReady, "device not ready")                                          \
    X(cudaErrorLaunchFailure, "unspecified launch failure")                           \
    X(cudaErrorNotSupported, "operation not supported")                               \
    X(cudaErrorStreamCaptureUnsupported, "operation not permitted when stream is capturing") \
    X(cudaErrorStreamCaptureInvalidated, "operation failed due to a previous error during capture") \
    X(cudaErrorStreamCaptureMerge, "operation would result in a merge of separate capture sequences") \
    X(cudaErrorStreamCaptureUnmatched, "capture was not ended in the same stream as it began") \
    X(cudaErrorStreamCaptureUnjoined, "capturing stream has unjoined work")            \
    X(cudaErrorStreamCaptureIsolation, "dependency created on uncaptured work in another stream") \
    X(cudaErrorStreamCaptureImplicit, "operation would make the legacy stream depend on a capturing blocking stream") \
    X(cudaErrorCapturedEvent, "operation not permitted on an event last recorded in a capturing stream") \
    X(cudaErrorStreamCaptureWrongThread, "attempt to terminate a thread-local capture sequence from another thread") \
    X(cudaErrorIllegalState, "the resource is not valid for this operation")          \
    X(cudaErrorNotPermitted, "operation not permitted")                               \
    X(cudaErrorUnknown, "unknown error")

EMU_EXPORT const char *cudaGetErrorName(cudaError_t error)
{
    switch (error) {
#define NAME_CASE(code, text) case code: return #code;
        EMU_ERRORS(NAME_CASE)
#undef NAME_CASE
    default:
        return "unrecognized error code";
    }
}

EMU_EXPORT const char *cudaGetErrorString(cudaError_t error)
{
    switch (error) {
#define TEXT_CASE(code, text) case code: return text;
        EMU_ERRORS(TEXT_CASE)
#undef TEXT_CASE
    default:
        return "unrecognized error code";
    }
}
