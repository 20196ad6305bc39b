/* cudaGetDriverEntryPoint (deprecated in CUDA 13, still exported) and
 * cudaGetDriverEntryPointByVersion, with their _ptsz forms.  As the real runtime does, they load
 * the driver by its soname and ask that library's own cuGetProcAddress_v2, found with dlsym on
 * its handle: an LD_PRELOAD library's cuGetProcAddress_v2 is not consulted.  The driver's
 * answer is mapped as cuda_runtime_api.h documents: a symbol not found, or found only in a
 * newer version, is cudaSuccess with *funcPtr NULL and the reason in *driverStatus. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <cuda.h>

#include "errors.h"
#include "export.h"

typedef CUresult (*proc_address_fn)(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult *symbolStatus);

static pthread_once_t driver_once = PTHREAD_ONCE_INIT;
static proc_address_fn driver_proc_address;

/* The handle stays open: the pointers handed out live as long as the process. */
static void driver_load(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h != NULL)
        *(void **)&driver_proc_address = dlsym(h, "cuGetProcAddress_v2");
}

static cudaError_t entry_point(const char *symbol, void **funcPtr, int cudaVersion, unsigned long long flags,
                               enum cudaDriverEntryPointQueryResult *driverStatus, bool ptsz)
{
    if (symbol == NULL || funcPtr == NULL)
        return cudaErrorInvalidValue;
    /* The _ptsz forms are what a program built for the per-thread default stream calls:
     * there cudaEnableDefault means cudaEnablePerThreadDefaultStream. */
    if (ptsz && flags == cudaEnableDefault)
        flags = cudaEnablePerThreadDefaultStream;
    pthread_once(&driver_once, driver_load);
    if (driver_proc_address == NULL)
        return cudaErrorInsufficientDriver;   /* no driver to ask */
    /* cudaEnable* and CU_GET_PROC_ADDRESS_* have the same values. */
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    void *fn = NULL;
    CUresult r = driver_proc_address(symbol, &fn, cudaVersion, flags, &status);
    if (r != CUDA_SUCCESS && r != CUDA_ERROR_NOT_FOUND)
        return r == CUDA_ERROR_INVALID_VALUE ? cudaErrorInvalidValue : cudaErrorNotSupported;
    *funcPtr = r == CUDA_SUCCESS ? fn : NULL;
    if (driverStatus)
        *driverStatus = status == CU_GET_PROC_ADDRESS_SUCCESS ? cudaDriverEntryPointSuccess
                        : status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT ? cudaDriverEntryPointVersionNotSufficent
                                                                               : cudaDriverEntryPointSymbolNotFound;
    return cudaSuccess;
}

/* Without a version: the runtime's own (CUDART_VERSION). */
EMU_EXPORT cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **funcPtr, unsigned long long flags,
                                               enum cudaDriverEntryPointQueryResult *driverStatus)
{
    return emu_result(entry_point(symbol, funcPtr, CUDART_VERSION, flags, driverStatus, false));
}

EMU_EXPORT cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr, unsigned long long flags,
                                                    enum cudaDriverEntryPointQueryResult *driverStatus)
{
    return emu_result(entry_point(symbol, funcPtr, CUDART_VERSION, flags, driverStatus, true));
}

EMU_EXPORT cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr, unsigned int cudaVersion,
                                                        unsigned long long flags,
                                                        enum cudaDriverEntryPointQueryResult *driverStatus)
{
    if (cudaVersion > (unsigned)INT32_MAX)
        return emu_result(cudaErrorInvalidValue);
    return emu_result(entry_point(symbol, funcPtr, (int)cudaVersion, flags, driverStatus, false));
}

EMU_EXPORT cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char *symbol, void **funcPtr,
                                                             unsigned int cudaVersion, unsigned long long flags,
                                                             enum cudaDriverEntryPointQueryResult *driverStatus)
{
    if (cudaVersion > (unsigned)INT32_MAX)
        return emu_result(cudaErrorInvalidValue);
    return emu_result(entry_point(symbol, funcPtr, (int)cudaVersion, flags, driverStatus, true));
}
