/* Kernel launches: cudaLaunchKernel, cudaLaunchKernelExC and cudaLaunchCooperativeKernel (and
 * their _ptsz forms), each reporting the driver launch it corresponds to, and the private entry
 * the driver stand-in's launches enqueue through.
 *
 * There is no device code: `func` must be a host function of type usbyteEmuKernelFn
 * (void fn(void **args)), which the stream's worker calls with the launch's args pointer.
 * Unlike CUDA, the argument values are not copied at launch (their sizes are unknown), so the
 * args array and what it points to must stay valid until the kernel has run. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <cupti.h>   /* the runtime and driver callback ids and params structs */

#include "errors.h"
#include "export.h"
#include "stream.h"
#include "trace.h"
#include "work.h"

static cudaError_t launch(const void *func, dim3 grid, dim3 block, void **args, cudaStream_t stream, bool ptsz,
                          bool cooperative, const char *what)
{
    if (func == NULL)
        return cudaErrorInvalidDeviceFunction;
    cudaError_t err = emu_check_launch(grid.x, grid.y, grid.z, block.x, block.y, block.z, cooperative);
    if (err != cudaSuccess)
        return err;
    struct CUstream_st *s;
    if ((err = emu_stream_resolve(stream, ptsz, &s)) != cudaSuccess)
        return err;
    return emu_kernel_enqueue(s, func, args, what);
}

/* The driver function a runtime launch goes through, with its parameters. */
static CUfunction as_function(const void *func)
{
    return (CUfunction)(uintptr_t)func;
}

static cudaError_t launch_kernel(const void *func, dim3 grid, dim3 block, void **args, size_t shared, cudaStream_t stream,
                                 bool ptsz)
{
    cuLaunchKernel_params d = {as_function(func), grid.x, grid.y, grid.z, block.x, block.y, block.z,
                               (unsigned)shared, (CUstream)stream, args, NULL};
    return ptsz ? EMU_NESTED(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz, "cuLaunchKernel_ptsz", &d,
                             launch(func, grid, block, args, stream, true, false, "cudaLaunchKernel"))
                : EMU_NESTED(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "cuLaunchKernel", &d,
                             launch(func, grid, block, args, stream, false, false, "cudaLaunchKernel"));
}

EMU_EXPORT cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem, cudaStream_t stream)
{
    cudaLaunchKernel_v7000_params p = {func, gridDim, blockDim, args, sharedMem, stream};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, "cudaLaunchKernel", &p,
               launch_kernel(func, gridDim, blockDim, args, sharedMem, stream, false));
}

EMU_EXPORT cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem, cudaStream_t stream)
{
    cudaLaunchKernel_ptsz_v7000_params p = {func, gridDim, blockDim, args, sharedMem, stream};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000, "cudaLaunchKernel_ptsz", &p,
               launch_kernel(func, gridDim, blockDim, args, sharedMem, stream, true));
}

/* cudaLaunchKernelExC: the configuration carries the stream; an attribute list must be there
 * when numAttrs says so, and the cooperative attribute makes it a cooperative launch. */
static cudaError_t launch_ex(const cudaLaunchConfig_t *config, const void *func, void **args, bool ptsz)
{
    if (config == NULL || (config->numAttrs > 0 && config->attrs == NULL))
        return cudaErrorInvalidValue;
    bool cooperative = false;
    for (unsigned i = 0; i < config->numAttrs; i++)
        if (config->attrs[i].id == cudaLaunchAttributeCooperative)
            cooperative = config->attrs[i].val.cooperative != 0;
    return launch(func, config->gridDim, config->blockDim, args, config->stream, ptsz, cooperative,
                  "cudaLaunchKernelExC");
}

static cudaError_t launch_ex_nested(const cudaLaunchConfig_t *config, const void *func, void **args, bool ptsz)
{
    if (config == NULL)
        return launch_ex(config, func, args, ptsz);
    _Static_assert(sizeof(CUlaunchAttribute) == sizeof(cudaLaunchAttribute), "one attribute layout");
    CUlaunchConfig c = {config->gridDim.x, config->gridDim.y, config->gridDim.z, config->blockDim.x,
                        config->blockDim.y, config->blockDim.z, (unsigned)config->dynamicSmemBytes,
                        (CUstream)config->stream, (CUlaunchAttribute *)config->attrs, config->numAttrs};
    cuLaunchKernelEx_params d = {&c, as_function(func), args, NULL};
    return ptsz ? EMU_NESTED(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz, "cuLaunchKernelEx_ptsz", &d,
                             launch_ex(config, func, args, true))
                : EMU_NESTED(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, "cuLaunchKernelEx", &d,
                             launch_ex(config, func, args, false));
}

EMU_EXPORT cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *config, const void *func, void **args)
{
    cudaLaunchKernelExC_v11060_params p = {config, func, args};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060, "cudaLaunchKernelExC", &p,
               launch_ex_nested(config, func, args, false));
}

EMU_EXPORT cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *config, const void *func, void **args)
{
    cudaLaunchKernelExC_ptsz_v11060_params p = {config, func, args};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060, "cudaLaunchKernelExC_ptsz", &p,
               launch_ex_nested(config, func, args, true));
}

static cudaError_t launch_cooperative(const void *func, dim3 grid, dim3 block, void **args, size_t shared,
                                      cudaStream_t stream, bool ptsz)
{
    cuLaunchCooperativeKernel_params d = {as_function(func), grid.x, grid.y, grid.z, block.x, block.y, block.z,
                                          (unsigned)shared, (CUstream)stream, args};
    return ptsz ? EMU_NESTED(CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz, "cuLaunchCooperativeKernel_ptsz",
                             &d, launch(func, grid, block, args, stream, true, true, "cudaLaunchCooperativeKernel"))
                : EMU_NESTED(CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, "cuLaunchCooperativeKernel", &d,
                             launch(func, grid, block, args, stream, false, true, "cudaLaunchCooperativeKernel"));
}

EMU_EXPORT cudaError_t cudaLaunchCooperativeKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                                                   size_t sharedMem, cudaStream_t stream)
{
    cudaLaunchCooperativeKernel_v9000_params p = {func, gridDim, blockDim, args, sharedMem, stream};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000, "cudaLaunchCooperativeKernel", &p,
               launch_cooperative(func, gridDim, blockDim, args, sharedMem, stream, false));
}

EMU_EXPORT cudaError_t cudaLaunchCooperativeKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                                                        size_t sharedMem, cudaStream_t stream)
{
    cudaLaunchCooperativeKernel_ptsz_v9000_params p = {func, gridDim, blockDim, args, sharedMem, stream};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000, "cudaLaunchCooperativeKernel_ptsz", &p,
               launch_cooperative(func, gridDim, blockDim, args, sharedMem, stream, true));
}

/* ---- the private entries of the driver stand-in (../emu_internal.h) ---- */
EMU_EXPORT cudaError_t usbyteEmuLaunchKernel(const void *func, const unsigned grid[3], const unsigned block[3],
                                             int cooperative, void **args, cudaStream_t stream, int ptsz,
                                             const char *what)
{
    if (grid == NULL || block == NULL)
        return cudaErrorInvalidValue;
    return launch(func, (dim3){grid[0], grid[1], grid[2]}, (dim3){block[0], block[1], block[2]}, args, stream,
                  ptsz != 0, cooperative != 0, what);
}

EMU_EXPORT cudaError_t usbyteEmuLaunchHost(cudaStream_t stream, void (*fn)(void *), void *arg, int ptsz, const char *what)
{
    if (fn == NULL)
        return cudaErrorInvalidValue;
    struct CUstream_st *s;
    cudaError_t err = emu_stream_resolve(stream, ptsz != 0, &s);
    if (err != cudaSuccess)
        return err;
    return emu_host_enqueue(s, fn, arg, what);
}
