/* The reentrancy guard: a call usbyte makes to a real function (and any callback it triggers, such
 * as CUPTI's) must not be observed as the application's.  UB_REAL(expr) evaluates expr with the
 * thread-local guard raised, instead of hand-written ub_inside++/-- pairs (libfaketime's
 * DONT_FAKE_TIME). */
#ifndef USBYTE_GUARD_H
#define USBYTE_GUARD_H

#include <stdatomic.h>

#include "runtime.h"

#define UB_REAL(expr)                   \
    __extension__({                     \
        ub_inside++;                    \
        __auto_type ub_real_r_ = (expr);\
        ub_inside--;                    \
        ub_real_r_;                     \
    })

/* A call to a real CUDA runtime function, counted: the report gives schedule mode's CUDA calls per
 * deferred allreduce from this count (host cost measured by counting, not timing). */
extern atomic_ullong ub_cuda_calls;
#define UB_CUDA(expr) UB_REAL((atomic_fetch_add_explicit(&ub_cuda_calls, 1, memory_order_relaxed), (expr)))

#endif
