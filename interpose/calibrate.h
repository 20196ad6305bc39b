/* Schedule mode's calibration (docs/runtime.md, "Calibration"): where the warm-up's calls do not
 * show the sizes the chosen plan would issue, every rank issues the same probe allreduces at a
 * fixed call, agrees on their times by one fixed-size collective one iteration later, and one
 * iteration after that re-plans on a net fitted with them and switches to the plan.  calibrate.c
 * is the only writer of ub_calib_rt; the probe sizes and the agreed vector are
 * usbyte/calibrate.h's (pure). */
#ifndef USBYTE_CALIBRATE_RT_H
#define USBYTE_CALIBRATE_RT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "calibrate_rt.h"
#include "lock_contract.h"
#include "transition.h"
#include "usbyte/calibrate.h"
#include "usbyte/record.h"

struct ub_comm;

/* Without the lock, before the agreement (with the executor): the probes' timing events, the
 * vector's buffers and the tables of the calls' kinds for the re-plan.  0, or -1 with why (the agreement carries it as the executor's failure). */
int ub_calib_reserve(struct ub_comm *c, char *why, size_t len);
/* Lock held, schedule mode, the agreement adopted and planned: true when the chosen plan issues
 * sizes the calls do not show, so calibration runs first (from call agree_at + period); it then
 * takes *agreed (left empty) for the re-plan.  Also true, with *failed set, when this rank cannot
 * calibrate as every rank does.  False: the schedule is decided now, the switch at agree_at +
 * period. */
bool ub_calib_hold(struct ub_comm *c, ub_agreed *agreed, bool stream_sem, ub_transition *failed)
    UB_REQUIRES(ub_state_mutex);
/* A calibration step is due at this call. */
bool ub_calib_due(const struct ub_comm *c, uint64_t call);
/* Lock held on entry and return (released while work is enqueued or waited for).  The step due
 * at `call`: the probes, the vector, or the re-plan.  True when the re-plan is done at this call:
 * the caller decides the schedule (ub_comm_decide_schedule) and switches to it here when it
 * schedules. */
bool ub_calib_step(struct ub_comm *c, uint64_t call) UB_REQUIRES_UNLOCKS(ub_state_mutex);
/* Lock held on entry and return: the communicator ends (abort: nothing waits for device work,
 * nothing is freed that device work may still touch). */
void ub_calib_end(struct ub_comm *c, bool abort) UB_REQUIRES_UNLOCKS(ub_state_mutex);
/* Whether the issuing thread is enqueueing probes or their vector (without the lock) right now. */
bool ub_calib_issuing(const struct ub_comm *c);

#endif
