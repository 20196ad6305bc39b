/* ByteScheduler (placeholder until the simulation lands): one block per call. */
#include "usbyte/policy.h"

int ub_policy_bytescheduler(const ub_profile *prof, ub_plan *out)
{
    if (prof->n_calls <= 0)
        return -1;
    ub_plan_clear(out);
    for (int k = 0; k < prof->n_calls; k++) {
        ub_plan_begin_block(out);
        ub_plan_add_segment(out, k, 0, prof->calls[k].bytes);
    }
    return 0;
}
