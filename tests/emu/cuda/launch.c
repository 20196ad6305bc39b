/* Driver-API launches: cuLaunchKernel, cuLaunchKernelEx, cuLaunchCooperativeKernel,
 * cuLaunchHostFunc, cuStreamAddCallback and cuGraphLaunch, each with its _ptsz form (the names
 * cuda.h binds a program to, with and without CUDA_API_PER_THREAD_DEFAULT_STREAM).  Each checks
 * its arguments as the driver does, reports itself to a CUPTI driver-domain subscriber, and
 * enqueues through the emulated runtime's private interface.
 *
 * A CUfunction here is an emulated kernel, a host function void fn(void **args) (the runtime's
 * convention, docs/emulator-cuda.md), called with kernelParams; the "extra" argument packing is
 * not emulated (CUDA_ERROR_NOT_SUPPORTED). */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include <cupti.h>   /* the driver params structs need its v1 typedefs */

#include "../emu_internal.h"
#include "driver.h"

#undef cuLaunchKernel
#undef cuLaunchKernelEx
#undef cuLaunchCooperativeKernel
#undef cuLaunchHostFunc
#undef cuStreamAddCallback
#undef cuGraphLaunch

static CUresult kernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                       CUstream stream, void **params, void **extra, bool cooperative, bool ptsz, const char *what)
{
    if (f == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (params != NULL && extra != NULL)
        return CUDA_ERROR_INVALID_VALUE;   /* "both kernelParams and extra" */
    if (extra != NULL)
        return CUDA_ERROR_NOT_SUPPORTED;
    unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
    return emu_cu_result(usbyteEmuLaunchKernel((const void *)(uintptr_t)f, grid, block, cooperative, params,
                                               (cudaStream_t)stream, ptsz, what));
}

#define LAUNCH_KERNEL(NAME, PTSZ)                                                                             \
    EMU_CU_EXPORT CUresult NAME(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, \
                                unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,           \
                                unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra) \
    {                                                                                                         \
        NAME##_params p = {f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes,  \
                           hStream, kernelParams, extra};                                                     \
        EMU_CU_TRACED(NAME, &p, kernel(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,       \
                                       hStream, kernelParams, extra, false, PTSZ, #NAME));                    \
    }
LAUNCH_KERNEL(cuLaunchKernel, false)
LAUNCH_KERNEL(cuLaunchKernel_ptsz, true)

static CUresult kernel_ex(const CUlaunchConfig *config, CUfunction f, void **params, void **extra, bool ptsz,
                          const char *what)
{
    if (config == NULL || (config->numAttrs > 0 && config->attrs == NULL))
        return CUDA_ERROR_INVALID_VALUE;
    bool cooperative = false;
    for (unsigned i = 0; i < config->numAttrs; i++)
        if (config->attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE)
            cooperative = config->attrs[i].value.cooperative != 0;
    return kernel(f, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX, config->blockDimY,
                  config->blockDimZ, config->hStream, params, extra, cooperative, ptsz, what);
}

#define LAUNCH_KERNEL_EX(NAME, PTSZ)                                                                          \
    EMU_CU_EXPORT CUresult NAME(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra) \
    {                                                                                                         \
        NAME##_params p = {config, f, kernelParams, extra};                                                   \
        EMU_CU_TRACED(NAME, &p, kernel_ex(config, f, kernelParams, extra, PTSZ, #NAME));                       \
    }
LAUNCH_KERNEL_EX(cuLaunchKernelEx, false)
LAUNCH_KERNEL_EX(cuLaunchKernelEx_ptsz, true)

#define LAUNCH_COOPERATIVE(NAME, PTSZ)                                                                        \
    EMU_CU_EXPORT CUresult NAME(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, \
                                unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,           \
                                unsigned int sharedMemBytes, CUstream hStream, void **kernelParams)               \
    {                                                                                                         \
        NAME##_params p = {f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes,  \
                           hStream, kernelParams};                                                            \
        EMU_CU_TRACED(NAME, &p, kernel(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,       \
                                       hStream, kernelParams, NULL, true, PTSZ, #NAME));                      \
    }
LAUNCH_COOPERATIVE(cuLaunchCooperativeKernel, false)
LAUNCH_COOPERATIVE(cuLaunchCooperativeKernel_ptsz, true)

/* ---- host functions and stream callbacks ---- */
#define HOST_FUNC(NAME, PTSZ)                                                                                 \
    EMU_CU_EXPORT CUresult NAME(CUstream hStream, CUhostFn fn, void *userData)                                \
    {                                                                                                         \
        NAME##_params p = {hStream, fn, userData};                                                            \
        EMU_CU_TRACED(NAME, &p,                                                                               \
                      fn == NULL ? CUDA_ERROR_INVALID_VALUE                                                   \
                                 : emu_cu_result(usbyteEmuLaunchHost((cudaStream_t)hStream, fn, userData, PTSZ, #NAME))); \
    }
HOST_FUNC(cuLaunchHostFunc, false)
HOST_FUNC(cuLaunchHostFunc_ptsz, true)

/* A stream callback runs as a host function that calls it with the stream and CUDA_SUCCESS (a
 * failed stream would pass its error; emulated work does not fail). */
struct callback {
    CUstreamCallback fn;
    CUstream stream;
    void *user_data;
};

static void callback_run(void *arg)
{
    struct callback c = *(struct callback *)arg;
    free(arg);
    c.fn(c.stream, CUDA_SUCCESS, c.user_data);
}

static CUresult add_callback(CUstream stream, CUstreamCallback fn, void *user_data, unsigned flags, bool ptsz,
                             const char *what)
{
    if (fn == NULL || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct callback *c = malloc(sizeof *c);
    if (c == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *c = (struct callback){fn, stream, user_data};
    CUresult r = emu_cu_result(usbyteEmuLaunchHost((cudaStream_t)stream, callback_run, c, ptsz, what));
    if (r != CUDA_SUCCESS)
        free(c);
    return r;
}

#define ADD_CALLBACK(NAME, PTSZ)                                                                              \
    EMU_CU_EXPORT CUresult NAME(CUstream hStream, CUstreamCallback callback, void *userData, unsigned int flags) \
    {                                                                                                         \
        NAME##_params p = {hStream, callback, userData, flags};                                               \
        EMU_CU_TRACED(NAME, &p, add_callback(hStream, callback, userData, flags, PTSZ, #NAME));                \
    }
ADD_CALLBACK(cuStreamAddCallback, false)
ADD_CALLBACK(cuStreamAddCallback_ptsz, true)

/* ---- graphs (made with the runtime's cudaGraph* functions: one object for both APIs) ---- */
#define GRAPH_LAUNCH(NAME, PTSZ)                                                                              \
    EMU_CU_EXPORT CUresult NAME(CUgraphExec hGraphExec, CUstream hStream)                                     \
    {                                                                                                         \
        NAME##_params p = {hGraphExec, hStream};                                                              \
        EMU_CU_TRACED(NAME, &p, emu_cu_result(usbyteEmuGraphLaunch(hGraphExec, (cudaStream_t)hStream, PTSZ))); \
    }
GRAPH_LAUNCH(cuGraphLaunch, false)
GRAPH_LAUNCH(cuGraphLaunch_ptsz, true)
