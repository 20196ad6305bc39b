/* Devices, versions and the one emulated context.  Every emulated device shares the host's
 * memory and the same stream machinery; the device number is bookkeeping only. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "errors.h"
#include "export.h"

struct CUctx_st {
    int device;
};
static struct CUctx_st emu_context;
static __thread int tl_device;

/* USBYTE_EMU_DEVICES (1..64), default 8 like one DGX node, so that each rank of an emulated
 * node can cudaSetDevice(LOCAL_RANK). */
int emu_device_count(void)
{
    static atomic_int count;
    int n = atomic_load_explicit(&count, memory_order_relaxed);
    if (n == 0) {
        n = 8;
        const char *env = getenv("USBYTE_EMU_DEVICES");
        if (env != NULL && *env) {
            char *end;
            long v = strtol(env, &end, 10);
            if (*end || v < 1 || v > EMU_MAX_DEVICES)
                fprintf(stderr, "usbyte emulator: USBYTE_EMU_DEVICES=%s is not 1..64, using 8\n", env);
            else
                n = (int)v;
        }
        atomic_store_explicit(&count, n, memory_order_relaxed);
    }
    return n;
}

int emu_current_device(void)
{
    return tl_device;
}

EMU_EXPORT int usbyteEmuCurrentDevice(void)
{
    return emu_current_device();
}

EMU_EXPORT int usbyteEmuDeviceCount(void)
{
    return emu_device_count();
}

EMU_EXPORT void *usbyteEmuContext(void)
{
    return &emu_context;
}

EMU_EXPORT cudaError_t cudaGetDeviceCount(int *count)
{
    if (count == NULL)
        return emu_result(cudaErrorInvalidValue);
    *count = emu_device_count();
    return emu_result(cudaSuccess);
}

EMU_EXPORT cudaError_t cudaSetDevice(int device)
{
    if (device < 0 || device >= emu_device_count())
        return emu_result(cudaErrorInvalidDevice);
    tl_device = device;
    return emu_result(cudaSuccess);
}

EMU_EXPORT cudaError_t cudaGetDevice(int *device)
{
    if (device == NULL)
        return emu_result(cudaErrorInvalidValue);
    *device = tl_device;
    return emu_result(cudaSuccess);
}

EMU_EXPORT cudaError_t cudaSetDeviceFlags(unsigned int flags)
{
    (void)flags;
    return emu_result(cudaSuccess);
}

EMU_EXPORT cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
{
    if (prop == NULL)
        return emu_result(cudaErrorInvalidValue);
    if (device < 0 || device >= emu_device_count())
        return emu_result(cudaErrorInvalidDevice);
    memset(prop, 0, sizeof *prop);
    snprintf(prop->name, sizeof prop->name, "usbyte CPU emulator device %d", device);
    prop->uuid.bytes[0] = (char)device;
    prop->totalGlobalMem = (size_t)80 << 30;
    prop->sharedMemPerBlock = 48 << 10;
    prop->regsPerBlock = 65536;
    prop->warpSize = 32;
    prop->maxThreadsPerBlock = 1024;
    prop->maxThreadsDim[0] = prop->maxThreadsDim[1] = 1024;
    prop->maxThreadsDim[2] = 64;
    prop->maxGridSize[0] = 0x7fffffff;
    prop->maxGridSize[1] = prop->maxGridSize[2] = 65535;
    prop->major = 9;
    prop->minor = 0;
    prop->multiProcessorCount = 132;
    prop->canMapHostMemory = 1;
    prop->concurrentKernels = 1;
    prop->pciBusID = device + 1;
    prop->asyncEngineCount = 2;
    prop->unifiedAddressing = 1;
    prop->streamPrioritiesSupported = 1;
    prop->managedMemory = 1;
    prop->maxThreadsPerMultiProcessor = 2048;
    return emu_result(cudaSuccess);
}

EMU_EXPORT cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device)
{
    if (value == NULL)
        return emu_result(cudaErrorInvalidValue);
    if (device < 0 || device >= emu_device_count())
        return emu_result(cudaErrorInvalidDevice);
    switch (attr) {
    case cudaDevAttrComputeCapabilityMajor: *value = 9; break;
    case cudaDevAttrComputeCapabilityMinor: *value = 0; break;
    case cudaDevAttrMultiProcessorCount: *value = 132; break;
    case cudaDevAttrWarpSize: *value = 32; break;
    case cudaDevAttrMaxThreadsPerBlock: *value = 1024; break;
    case cudaDevAttrPciBusId: *value = device + 1; break;
    case cudaDevAttrUnifiedAddressing: *value = 1; break;
    case cudaDevAttrConcurrentKernels: *value = 1; break;
    case cudaDevAttrAsyncEngineCount: *value = 2; break;
    case cudaDevAttrStreamPrioritiesSupported: *value = 1; break;
    case cudaDevAttrCanMapHostMemory: *value = 1; break;
    default: *value = 0; break;
    }
    return emu_result(cudaSuccess);
}

EMU_EXPORT cudaError_t cudaDeviceGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
    if (leastPriority)
        *leastPriority = 0;
    if (greatestPriority)
        *greatestPriority = -5;
    return emu_result(cudaSuccess);
}

EMU_EXPORT cudaError_t cudaRuntimeGetVersion(int *runtimeVersion)
{
    if (runtimeVersion == NULL)
        return emu_result(cudaErrorInvalidValue);
    *runtimeVersion = 13000;
    return emu_result(cudaSuccess);
}

EMU_EXPORT cudaError_t cudaDriverGetVersion(int *driverVersion)
{
    if (driverVersion == NULL)
        return emu_result(cudaErrorInvalidValue);
    *driverVersion = 13000;
    return emu_result(cudaSuccess);
}
