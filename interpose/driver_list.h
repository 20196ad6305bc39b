/* The CUDA driver functions usbyte wraps, once: the ways a program begins or ends a graph capture
 * without the runtime (cuda_list.h holds the runtime's), and the driver's lookup of its own
 * functions.  Every capture must be seen (capture.h): a deferred allreduce on a capturing stream
 * would put usbyte's own work into the application's graph.  The list generates the table of
 * real functions, the names, the wrappers (driver_wrap.c) and the version script's list.
 *
 * X(name, CLASS, (parameters), (arguments), (hook argument))
 *   CUBEGIN: a capture begins on the hook's stream; CUEND: it ends there; CULOOKUP: the hook is
 *   the address of the returned function pointer, whose capture functions are replaced by these
 *   wrappers (a program that looks them up, as the CUDA Python bindings and cudaGetDriverEntryPoint
 *   users do, reaches usbyte as one that links them).
 * libcuda.so.1 exports each name plain (no symbol versions); the legacy one-argument
 * cuStreamBeginCapture and four-argument cuGetProcAddress are still exported under their own
 * names, which cuda.h maps to the _v2 forms: the names are taken literally here
 * (usbyte/cuda_exports.h). */
#ifndef USBYTE_DRIVER_LIST_H
#define USBYTE_DRIVER_LIST_H

#include <stdbool.h>

#include <cuda.h>

#include "usbyte/cuda_exports.h"

#include "driver_xlist.h"

typedef struct ub_cu_real {
#define X(name, cls, params, args, hook) __typeof__(name) *name;
    UB_CU_LIST(X)
#undef X
} ub_cu_real;

/* The real driver's functions, filled by ub_cu_resolve (resolve.c). */
extern ub_cu_real ub_cu;

/* Fills ub_cu from the libcuda.so.1 the process loaded; false while none is loaded (then it
 * tries again at the next call). */
bool ub_cu_resolve(void);

/* The driver function a successful lookup handed out at *pfn (NULL pfn or *pfn: nothing):
 * usbyte's wrapper in place of a real capture function (or lookup), any other unchanged
 * (driver_wrap.c). */
void ub_cu_substitute(void **pfn);

#endif
