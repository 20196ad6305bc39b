/* The CUDA runtime functions usbyte wraps (docs/design.md section 4) or only calls, once.  The list
 * generates the table of real functions, the name table and the wrappers (cuda_wrap.c).
 *
 * X(name, CLASS, (parameters), (arguments), (hook arguments))
 *   EVREC: cudaEventRecord* (hook: event, stream, flags); SWAIT: cudaStreamWaitEvent* (hook:
 *   stream, event); EVSYNC / EVQUERY: host waits on an event (hook: event); EVELAPSED:
 *   cudaEventElapsedTime (hook: start, end); SSYNC / SQUERY: host waits on a stream (hook:
 *   stream); DSYNC: cudaDeviceSynchronize; SDESTROY / EDESTROY: handles going away (hook: stream
 *   / event); BEGINCAP / ENDCAP: graph capture begins / ends on a stream (hook: stream; always
 *   wrapped, not only on the slow path: every capture must be seen); ENTRY: the lookups of driver
 *   functions (hook: the returned pointer's address; a driver capture function is replaced by
 *   usbyte's wrapper, driver_wrap.c); CALLONLY: not wrapped, resolved because usbyte calls it.
 * The _ptsz variants are the per-thread-default-stream entry points the real runtime exports;
 * a runtime without them leaves them NULL and their wrappers report cudaErrorNotSupported. */
#ifndef USBYTE_CUDA_LIST_H
#define USBYTE_CUDA_LIST_H

#include <stdatomic.h>
#include <stdbool.h>

#include <cuda_runtime_api.h>

#include "usbyte/cuda_exports.h"

#include "cuda_xlist.h"

typedef enum {
#define X(name, cls, params, args, hook) UB_CUDA_##name,
    UB_CUDA_LIST(X)
#undef X
    UB_CUDA_COUNT
} ub_cuda_id;

/* Applications still call the deprecated cudaGetDriverEntryPoint: naming its type is no use of it. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
typedef struct ub_cuda_real {
#define X(name, cls, params, args, hook) __typeof__(name) *name;
    UB_CUDA_LIST(X)
#undef X
} ub_cuda_real;
#pragma GCC diagnostic pop

extern ub_cuda_real ub_cuda;
extern const char *const ub_cuda_names[UB_CUDA_COUNT];

/* Resolves the real runtime once (thread-safe); 0 when the wrapped functions are usable. */
int ub_cuda_resolve(void);
/* Set (release) once the table is filled: read it only after an acquire load of this. */
extern atomic_bool ub_cuda_resolved;

#endif
