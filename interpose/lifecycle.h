/* The life cycle (lifecycle.c), as the generated NCCL wrappers and the process hooks call it.
 * Each wrapper calls the real function itself, unless ub_coll_before took the call over. */
#ifndef USBYTE_LIFECYCLE_H
#define USBYTE_LIFECYCLE_H

#include <stdbool.h>

#include <nccl.h>

#include "coll_desc.h"
#include "lock_contract.h"
#include "state.h"

/* True when the call was taken over: deferred (schedule mode: result ncclSuccess), or refused
 * (its communicator was aborted while the call waited); the wrapper returns t->result without
 * forwarding it, and ub_coll_after is not called. */
bool ub_coll_before(const ub_coll_desc *d, ub_coll_token *t) UB_EXCLUDES(ub_state_mutex);
/* The call goes to NCCL unchanged (not deferred) and ub_coll_before did not note its work on its
 * stream (t->stream_work_noted: it did wherever it held the lock): noted here, for schedule mode's
 * completion of events. */
void ub_coll_forwarded(const ub_coll_desc *d);
/* After the real call, where ub_coll_before left a communicator in the token (t->comm: a profiled
 * call, whose end the warm-up records); nothing is left to do after the others. */
void ub_coll_after(const ub_coll_desc *d, const ub_coll_token *t, ncclResult_t r) UB_EXCLUDES(ub_state_mutex);
/* After it: what the application's ncclGroupEnd returns (r, the real one's result, or a failure
 * of what usbyte issued inside the group). */
ncclResult_t ub_group_ended(ncclResult_t r) UB_EXCLUDES(ub_state_mutex);
/* Lock held: a deviation from the plan outside an NCCL call (a graph capture begins on a stream
 * with deferred calls): the cursor flushes what arrived (ub_sched_deviation), and after
 * USBYTE_MAX_DEVIATIONS in a row the communicator is profiled again. */
void ub_comm_deviates(ub_comm *c, const char *why) UB_REQUIRES_UNLOCKS(ub_state_mutex);
/* After a communicator's creation; parent: the communicator it was split or shrunk from. */
void ub_comm_created(ncclComm_t *out, int n, const ncclConfig_t *config, ncclComm_t parent, ncclResult_t r) UB_EXCLUDES(ub_state_mutex);
void ub_comm_ending(ncclComm_t comm, int id) UB_EXCLUDES(ub_state_mutex);
/* The reports at exit (runtime.c's destructor). */
void ub_state_write_reports_at_exit(void);

#endif
