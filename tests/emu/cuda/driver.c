/* The driver API entry points a program needs around the stream memory operations: init,
 * versions, devices, the (single) context, device pointers and error strings.  Everything is
 * answered from the emulated runtime through the private interface (../emu_internal.h). */
#include <stdint.h>
#include <string.h>

#include <cuda.h>

#include "../emu_internal.h"
#include "driver.h"

CUresult emu_cu_result(cudaError_t err)
{
    switch (err) {
    case cudaSuccess: return CUDA_SUCCESS;
    case cudaErrorInvalidValue: return CUDA_ERROR_INVALID_VALUE;
    case cudaErrorMemoryAllocation: return CUDA_ERROR_OUT_OF_MEMORY;
    case cudaErrorInvalidResourceHandle: return CUDA_ERROR_INVALID_HANDLE;
    case cudaErrorInvalidDevice: return CUDA_ERROR_INVALID_DEVICE;
    case cudaErrorNotReady: return CUDA_ERROR_NOT_READY;
    case cudaErrorInvalidPitchValue:
    case cudaErrorInvalidConfiguration: return CUDA_ERROR_INVALID_VALUE;
    case cudaErrorInvalidDeviceFunction: return CUDA_ERROR_INVALID_HANDLE;
    case cudaErrorNotSupported: return CUDA_ERROR_NOT_SUPPORTED;
    case cudaErrorCudartUnloading: return CUDA_ERROR_DEINITIALIZED;
    case cudaErrorCooperativeLaunchTooLarge: return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
    case cudaErrorIllegalState: return CUDA_ERROR_ILLEGAL_STATE;
    case cudaErrorStreamCaptureUnsupported: return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    case cudaErrorStreamCaptureInvalidated: return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    case cudaErrorStreamCaptureUnmatched: return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
    case cudaErrorStreamCaptureUnjoined: return CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
    case cudaErrorStreamCaptureImplicit: return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    case cudaErrorStreamCaptureWrongThread: return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
    case cudaErrorCapturedEvent: return CUDA_ERROR_CAPTURED_EVENT;
    default: return CUDA_ERROR_UNKNOWN;
    }
}

EMU_CU_EXPORT CUresult cuInit(unsigned int flags)
{
    return flags == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EMU_CU_EXPORT CUresult cuDriverGetVersion(int *driverVersion)
{
    if (driverVersion == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *driverVersion = EMU_CU_DRIVER_VERSION;
    return CUDA_SUCCESS;
}

EMU_CU_EXPORT CUresult cuDeviceGetCount(int *count)
{
    if (count == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *count = usbyteEmuDeviceCount();
    return CUDA_SUCCESS;
}

EMU_CU_EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    if (device == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (ordinal < 0 || ordinal >= usbyteEmuDeviceCount())
        return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

EMU_CU_EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    if (name == NULL || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= usbyteEmuDeviceCount())
        return CUDA_ERROR_INVALID_DEVICE;
    strncpy(name, "usbyte CPU emulator", (size_t)len - 1);
    name[len - 1] = '\0';
    return CUDA_SUCCESS;
}

EMU_CU_EXPORT CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    if (pi == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= usbyteEmuDeviceCount())
        return CUDA_ERROR_INVALID_DEVICE;
    switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR:
    case CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS:
    case CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES:
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
        *pi = 1;
        break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *pi = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *pi = 0; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *pi = 132; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *pi = 32; break;
    default: *pi = 0; break;
    }
    return CUDA_SUCCESS;
}

EMU_CU_EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    if (pctx == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = (CUcontext)usbyteEmuContext();
    return CUDA_SUCCESS;
}

EMU_CU_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx)
{
    return ctx == NULL || ctx == (CUcontext)usbyteEmuContext() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

EMU_CU_EXPORT CUresult cuCtxGetDevice(CUdevice *device)
{
    if (device == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *device = 0;
    return CUDA_SUCCESS;
}

EMU_CU_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    if (pctx == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= usbyteEmuDeviceCount())
        return CUDA_ERROR_INVALID_DEVICE;
    *pctx = (CUcontext)usbyteEmuContext();
    return CUDA_SUCCESS;
}

/* cuda.h maps cuDevicePrimaryCtxRelease to the _v2 name. */
EMU_CU_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
    return dev >= 0 && dev < usbyteEmuDeviceCount() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

EMU_CU_EXPORT CUresult cuMemAlloc(CUdeviceptr *dptr, size_t bytesize)
{
    if (dptr == NULL || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    void *p;
    CUresult r = emu_cu_result(usbyteEmuMemAlloc(&p, bytesize));
    if (r == CUDA_SUCCESS)
        *dptr = (CUdeviceptr)(uintptr_t)p;
    return r;
}

EMU_CU_EXPORT CUresult cuMemFree(CUdeviceptr dptr)
{
    if (dptr == 0)
        return CUDA_ERROR_INVALID_VALUE;
    return emu_cu_result(usbyteEmuMemFree((void *)(uintptr_t)dptr));
}

/* Host and "device" share one address space: pinned host memory is its own device pointer. */
EMU_CU_EXPORT CUresult cuMemHostGetDevicePointer(CUdeviceptr *pdptr, void *p, unsigned int flags)
{
    if (pdptr == NULL || flags != 0 || usbyteEmuPointerKind(p) != 2)
        return CUDA_ERROR_INVALID_VALUE;
    *pdptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

EMU_CU_EXPORT CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    if (data == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    int kind = usbyteEmuPointerKind((const void *)(uintptr_t)ptr);
    if (kind == 0)
        return CUDA_ERROR_INVALID_VALUE;
    switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        *(CUcontext *)data = (CUcontext)usbyteEmuContext();
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(unsigned int *)data = kind == 1 ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        *(CUdeviceptr *)data = ptr;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        *(void **)data = (void *)(uintptr_t)ptr;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *(int *)data = 0;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

#define EMU_CU_ERRORS(X)                                              \
    X(CUDA_SUCCESS, "no error")                                       \
    X(CUDA_ERROR_INVALID_VALUE, "invalid argument")                   \
    X(CUDA_ERROR_OUT_OF_MEMORY, "out of memory")                      \
    X(CUDA_ERROR_NOT_INITIALIZED, "initialization error")             \
    X(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal")            \
    X(CUDA_ERROR_INVALID_CONTEXT, "invalid device context")           \
    X(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle")           \
    X(CUDA_ERROR_NOT_READY, "device not ready")                       \
    X(CUDA_ERROR_NOT_SUPPORTED, "operation not supported")            \
    X(CUDA_ERROR_DEINITIALIZED, "driver shutting down")               \
    X(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, "too many blocks in cooperative launch") \
    X(CUDA_ERROR_NOT_FOUND, "named symbol not found")                \
    X(CUDA_ERROR_ILLEGAL_STATE, "the operation cannot be performed in the present state") \
    X(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "operation not permitted when stream is capturing") \
    X(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "operation failed due to a previous error during capture") \
    X(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, "capture was not ended in the same stream as it began") \
    X(CUDA_ERROR_STREAM_CAPTURE_UNJOINED, "capturing stream has unjoined work") \
    X(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, "operation would make the legacy stream depend on a capturing blocking stream") \
    X(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, "attempt to terminate a thread-local capture sequence from another thread") \
    X(CUDA_ERROR_CAPTURED_EVENT, "operation not permitted on an event last recorded in a capturing stream") \
    X(CUDA_ERROR_UNKNOWN, "unknown error")

EMU_CU_EXPORT CUresult cuGetErrorName(CUresult error, const char **pStr)
{
    if (pStr == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    switch (error) {
#define NAME_CASE(code, text) case code: *pStr = #code; return CUDA_SUCCESS;
        EMU_CU_ERRORS(NAME_CASE)
#undef NAME_CASE
    default:
        *pStr = NULL;
        return CUDA_ERROR_INVALID_VALUE;
    }
}

EMU_CU_EXPORT CUresult cuGetErrorString(CUresult error, const char **pStr)
{
    if (pStr == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    switch (error) {
#define TEXT_CASE(code, text) case code: *pStr = text; return CUDA_SUCCESS;
        EMU_CU_ERRORS(TEXT_CASE)
#undef TEXT_CASE
    default:
        *pStr = NULL;
        return CUDA_ERROR_INVALID_VALUE;
    }
}
