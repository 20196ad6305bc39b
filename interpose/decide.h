/* The decision on the agreed numbers (decide.c), lock held on entry and return. */
#ifndef USBYTE_DECIDE_H
#define USBYTE_DECIDE_H

#include "lock_contract.h"
#include "state.h"
#include "transition.h"

/* Per call of the iteration: its bytes, dtype and op (the warm-up's record, or a copy of it). */
typedef struct ub_call_kinds {
    const uint64_t *bytes;
    const int *dtype, *op;
} ub_call_kinds;
/* The agreed profile (its net fitted on the calls and the n_extra agreed samples: calibration's
 * probes), the verdict and every policy's plan (planned without the lock); false when another
 * thread ended the communicator meanwhile (an abort). */
bool ub_comm_decide(ub_comm *c, const ub_agreed *a, const ub_call_kinds *calls, bool stream_sem,
                    const ub_fit_sample *extra, int n_extra) UB_REQUIRES_UNLOCKS(ub_state_mutex);
/* Lock held: the ranks leave the communicator in pass-through without a decision (their
 * configurations differ, the agreement failed): the verdict is not schedulable with `why` as its
 * one reason, and no plans.  The verdict (schedulable, reasons) and the plans are written here
 * only. */
void ub_comm_verdict_refused(ub_comm *c, const char *why) UB_REQUIRES(ub_state_mutex);
/* Schedule mode, the communicator PLANNED: the executor for a schedulable plan that gains enough
 * (the state stays), or pass-through, saying why; a failure where this rank cannot set the executor
 * up.  The life cycle applies what it returns. */
ub_transition ub_comm_decide_schedule(ub_comm *c) UB_REQUIRES_UNLOCKS(ub_state_mutex);
/* At the call where verification kept or dropped a plan (lifecycle.c, after the call's handling;
 * lock held, released while planning): when verification asks for it (ub_verify_refit_wanted), the
 * model is fitted again with the plan's measured blocks (agreed) beside the samples it was fitted
 * on, the plan's policy plans again on it, and a plan with other blocks predicted to gain
 * USBYTE_MIN_GAIN_PCT there over the kept plan, or over the application's own order where the plan
 * was dropped, becomes verification's next candidate (ub_verify_refit_result).  Agreed numbers and
 * pure functions at a fixed call: the same on every rank. */
void ub_comm_refit(ub_comm *c) UB_REQUIRES_UNLOCKS(ub_state_mutex);
/* One line: what the communicator measured and decided. */
void ub_comm_decision_line(ub_comm *c);
/* Lock held: this rank cannot issue what every rank issues at this call (an agreement, a
 * calibration probe, the plan's executor: what says which and why; r: the error the application
 * gets): the communicator fails here (ub_comm_set_failed).  The caller stops issuing and
 * returns. */
void ub_comm_cannot_take_part(ub_comm *c, ncclResult_t r, const char *what) UB_REQUIRES(ub_state_mutex);

#endif
