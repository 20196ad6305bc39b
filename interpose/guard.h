/* The reentrancy guard: a call usbyte makes to a real function (and any callback it triggers, such
 * as CUPTI's) must not be observed as the application's.  UB_REAL(expr) evaluates expr with the
 * thread-local guard (ub_inside) raised; it is the only way the runtime raises it (libfaketime's
 * DONT_FAKE_TIME).  A block of real calls goes into a function called through UB_REAL. */
#ifndef USBYTE_GUARD_H
#define USBYTE_GUARD_H

#include <stdatomic.h>
#include <stdbool.h>

#include "globals.h"
#include "lock_contract.h"

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

/* A call to a real NCCL function, never made with the global lock held (NCCL may block for as
 * long as its peers take, and another thread's hook, a watchdog's, needs the lock meanwhile):
 * a call that would be is a bug of the runtime, stopped with one line. */
extern _Thread_local bool ub_holds_state_lock;
void ub_nccl_called_locked(const char *call);
/* Empty: its contract makes the analysis reject a UB_NCCL where the lock is known held. */
static inline void ub_nccl_unlocked(void) UB_EXCLUDES(ub_state_mutex);
static inline void ub_nccl_unlocked(void) {}
#define UB_NCCL(expr) \
    UB_REAL((ub_nccl_unlocked(), ub_holds_state_lock ? ub_nccl_called_locked(#expr) : (void)0, (expr)))

#endif
