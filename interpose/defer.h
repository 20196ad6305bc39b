/* Schedule mode's cursor (docs/design.md section 1): which call of the plan's iteration this is, the
 * deferral of allreduces, what each arrival issues, deviations and their flush.  Every decision
 * here depends only on the call sequence and the agreed plan (usbyte/schedule.h). */
#ifndef USBYTE_DEFER_H
#define USBYTE_DEFER_H

#include <jansson.h>

#include "coll_desc.h"
#include "lock_contract.h"
#include "state.h"
#include "tables.h"

/* Lock held, at the agreement: schedule mode takes over the agreed period's tables (position ->
 * portable signature, position -> allreduce index, malloc'd; the caller forgets them), which
 * outlive the warm-up. */
void ub_sched_take_period(ub_comm *c, uint64_t *pos_sig, int *pos_call, uint32_t period);
/* What the decision predicts for a plan it hands to schedule mode, for the report and the summary. */
typedef struct ub_sched_predictions {
    double iteration;            /* the plan's */
    double wfbp;                 /* the application's own order */
    double other_completion;     /* the plan's policy under the other completion semantics; NAN: none */
    const char *completion_note; /* what that would give or why it was refused; "" for nothing */
} ub_sched_predictions;
/* Lock held.  Takes the plan (validated by the caller) and its predictions (copied) and sets up
 * the executor; 0, or -1 with the reason in why (rank-local: the caller cannot continue
 * consistently). */
int ub_sched_prepare(ub_comm *c, const ub_plan *plan, const ub_sched_predictions *pred, bool stream_semantics, char *why,
                     size_t len) UB_REQUIRES(ub_state_mutex);
/* Lock held: the plan's cursor starts at this iteration boundary, call index `call` (agree_at +
 * period, or calibration's apply call); the life cycle moves the communicator to SCHEDULE. */
void ub_sched_begin(ub_comm *c, uint64_t call) UB_REQUIRES(ub_state_mutex);
/* What a call on the cursor asks the life cycle to do after it (each left false unless asked). */
typedef struct ub_sched_asks {
    bool profile_again; /* the call is the deviation after USBYTE_MAX_DEVIATIONS in a row */
    bool refit;         /* verification's verdict at this call: the model fitted again (ub_comm_refit) */
    bool stream_work_noted; /* a call not held: its work on its stream is noted (forwarded next) */
} ub_sched_asks;
/* Lock held on entry and exit (released while blocks are issued).  A call on a communicator in
 * SCHEDULE; cs is its portable signature's fields (the cursor checks it), at what the tables answered on its way in
 * (ub_state_lock_call: the stream's record, a capture on it; NULL where the communicator entered
 * schedule mode at this call, after the way in: asked here).  Returns true when the call is deferred (the wrapper
 * returns ncclSuccess without forwarding it), or answered with the failure of the block issue it
 * triggered (c->failed, ub_comm_set_failed); asks says what the life cycle does next. */
bool ub_sched_call(ub_comm *c, const ub_coll_desc *d, const ub_call_sig *cs, const ub_call_lookup *at, ub_sched_asks *asks)
    UB_REQUIRES_UNLOCKS(ub_state_mutex);
/* Lock held: a deviation that is not a call of the sequence (a graph capture begins on a stream
 * with deferred calls): flushes what arrived; true where it is the one after
 * USBYTE_MAX_DEVIATIONS in a row (the life cycle then profiles again, ub_comm_deviates). */
bool ub_sched_deviation(ub_comm *c, const char *why) UB_REQUIRES_UNLOCKS(ub_state_mutex);
/* Lock held: a wait of the thread that issues c's calls (`what`: the CUDA call) on deferred
 * call `call` of this iteration (-1: every call so far), whose block is not issued.  The warm-up did not see it (a wait it
 * saw is a merge barrier, whose blocks go out at the call's arrival), so it may be made on some
 * ranks only: it changes nothing that is issued.  Counted; the first one gets one line. */
void ub_sched_unexpected_wait(ub_comm *c, const char *what, int call);
/* Lock held: the block value that completes every call deferred so far in this iteration, when
 * it is not issued yet (0: nothing unissued). */
uint64_t ub_sched_unissued(const ub_comm *c) UB_REQUIRES(ub_state_mutex);
/* Lock held.  A CUDA or NCCL call of schedule mode failed (a block issue: after a peer's death NCCL
 * refuses every operation with the communicator's asynchronous error; a record that completes an
 * application's event): schedule mode stops, the communicator's pending events are released as at
 * an abort (recorded on their own streams, waiters woken), and it fails on this rank
 * (ub_comm_set_failed: the call that triggered it, or the next one, returns r, and so does every
 * later one).  what: the call that failed and its error. */
void ub_sched_fail(ub_comm *c, ncclResult_t r, const char *what) UB_REQUIRES(ub_state_mutex);
/* Whether the issuing thread is issuing blocks (without the lock) right now. */
bool ub_sched_issuing(const ub_comm *c);
/* Lock held: the communicator ends.  abort: never waits for device work. */
void ub_sched_end(ub_comm *c, bool abort) UB_REQUIRES_UNLOCKS(ub_state_mutex);
/* The report's `schedule` object (NULL before a plan ran), from the times read so far: only the
 * issuing thread reads the timing events (it appends to them without the lock while it issues
 * blocks), at each iteration start and when the communicator ends. */
json_t *ub_sched_report_json(ub_comm *c);
/* The summary line (USBYTE_LOG=info): measured speedup next to the predicted one. */
void ub_sched_summary(ub_comm *c);

#endif
