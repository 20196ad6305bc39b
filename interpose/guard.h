/* The reentrancy guard: a call usbyte makes to a real function (and any callback it triggers, such
 * as CUPTI's) must not be observed as the application's.  UB_REAL(expr) evaluates expr with the
 * thread-local guard raised, instead of hand-written ub_inside++/-- pairs (libfaketime's
 * DONT_FAKE_TIME). */
#ifndef USBYTE_GUARD_H
#define USBYTE_GUARD_H

#include "runtime.h"

#define UB_REAL(expr)                   \
    __extension__({                     \
        ub_inside++;                    \
        __auto_type ub_real_r_ = (expr);\
        ub_inside--;                    \
        ub_real_r_;                     \
    })

#endif
