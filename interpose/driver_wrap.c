/* The exported CUDA driver wrappers, generated from UB_CU_LIST: a capture begun or ended through
 * the driver is seen as one begun through the runtime (cuda_wrap.c's BEGINCAP / ENDCAP), and a
 * lookup that hands out a driver capture function hands out the wrapper instead, so that a
 * program calling through a looked-up pointer is seen too.  Exported plain, as libcuda.so.1
 * exports them (the version script's USBYTE_CUDA_DRIVER_1 node). */
#include "capture.h"
#include "cuda_hooks.h"
#include "driver_list.h"
#include "globals.h"
#include "log.h"
#include "runtime.h"

#define UB_EXPORT __attribute__((visibility("default")))

static CUresult missing(const char *name)
{
    ub_error("%s: the real CUDA driver function is not available (no libcuda.so.1 loaded, or it lacks it); "
             "returning CUDA_ERROR_NOT_SUPPORTED", name);
    return CUDA_ERROR_NOT_SUPPORTED;
}

/* The runtime's hooks need its table, as the runtime wrappers' prologue makes sure. */
#define PROLOGUE(name, args)                                   \
    if (!ub_cu_resolve() || !ub_cu.name)                       \
        return missing(#name);                                 \
    if (__builtin_expect(!atomic_load_explicit(&ub_cuda_resolved, memory_order_acquire), 0)) { \
        ub_runtime_init();                                     \
        ub_cuda_resolve();                                     \
    }                                                          \
    if (ub_bypass())                                           \
        return ub_cu.name args;

#define WRAP_CUBEGIN(name, params, args, hook)                 \
    UB_EXPORT CUresult name params                             \
    {                                                          \
        PROLOGUE(name, args)                                   \
        return UB_CAPTURE_BEGIN((cudaStream_t)(hook), CUDA_SUCCESS, ub_cu.name args); \
    }
#define WRAP_CUEND(name, params, args, hook)                   \
    UB_EXPORT CUresult name params                             \
    {                                                          \
        PROLOGUE(name, args)                                   \
        return UB_CAPTURE_END((cudaStream_t)(hook), ub_cu.name args); \
    }
#define WRAP_CULOOKUP(name, params, args, hook)                \
    UB_EXPORT CUresult name params                             \
    {                                                          \
        if (!ub_cu_resolve() || !ub_cu.name)                   \
            return missing(#name);                             \
        CUresult r = ub_cu.name args;                          \
        if (r == CUDA_SUCCESS)                                 \
            ub_cu_substitute(hook);                            \
        return r;                                              \
    }
#define X(name, cls, params, args, hook) WRAP_##cls(name, params, args, hook)
UB_CU_LIST(X)
#undef X

void ub_cu_substitute(void **pfn)
{
    if (!pfn || !*pfn || !ub_cu_resolve())
        return;
#define X(name, cls, params, args, hook)   \
    if (*pfn == (void *)ub_cu.name) {     \
        *pfn = (void *)&name;             \
        return;                           \
    }
    UB_CU_LIST(X)
#undef X
}
