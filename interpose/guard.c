/* The guard's counters and its stop (guard.h): CUDA calls made by the runtime, and a real NCCL
 * call attempted with the global lock held. */
#include <stdlib.h>

#include "guard.h"
#include "log.h"

atomic_ullong ub_cuda_calls;
_Thread_local bool ub_holds_state_lock;

void ub_nccl_called_locked(const char *call)
{
    ub_error("internal error: %s called with the global lock held; aborting (USBYTE_MODE=off runs the job "
             "without usbyte)", call);
    abort();
}
