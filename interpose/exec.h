/* The executor of schedule mode (docs/design.md): the private stream, the staging buffer and the
 * readiness events of one communicator, and the issue of blocks.
 * A CUDA or NCCL failure while issuing a block is returned (defer.c hands it to the application's
 * call and leaves the communicator in pass-through): NCCL refuses every operation on a
 * communicator whose peer is gone, and the application's own error handling (an abort, an
 * in-process restart) must run, never an abort() of the process. */
#ifndef USBYTE_EXEC_H
#define USBYTE_EXEC_H

#include "lock_contract.h"
#include "state.h"

/* Before the agreement (schedule mode): the device resources a plan of n_calls calls will need,
 * the staging buffer of `staging` bytes among them, so that a failure is a flag of the agreement
 * (every rank stays in pass-through) rather than a rank that cannot follow the plan the others
 * run.  Kept to the end and reused by later plans; a later agreement that wants a larger staging
 * buffer gets one (the smaller one is retired to the end), or lives within the one there is.
 * Called by the thread that issues the agreement.  0, or -1 with the reason in why. */
int ub_exec_reserve(ub_comm *c, int n_calls, uint64_t staging, char *why, size_t len);
/* Once the plan is known (lock held): the host-side tables; the plan must fit what was reserved.
 * 0, or -1 with the reason in why (the same on every rank: the plan is agreed). */
int ub_exec_setup(ub_comm *c, char *why, size_t len) UB_REQUIRES(ub_state_mutex);
/* Issues block b of the current iteration on NCCL communicator `handle` (c's, read under the
 * lock by the caller), restricted to the segments of calls below `arrived` (slot >= 0: between
 * timing events, the slot-th of the UB_SCHED_TRACED iterations recorded for the report; -1: not
 * timed).  Called WITHOUT the global lock, outside any NCCL group, by the thread that issues the
 * communicator's calls (NCCL forbids concurrent use of a communicator).  ncclSuccess, or the
 * first failure's result (a CUDA failure: ncclUnhandledCudaError) with the call and the error
 * in why; what was enqueued before it stays enqueued. */
ncclResult_t ub_exec_issue_block(ub_comm *c, ncclComm_t handle, int b, int arrived, int slot, char *why, size_t len);
/* Lock held: per block of the running plan (the first `max`), the median duration of its allreduce
 * over the timed iterations whose marks have completed (a poll, never a wait), staged blocks less
 * their staging copies at copy_beta seconds per byte (the model's block cost is the link's plus
 * the copies'); NAN where none was timed.  Returns how many blocks were written. */
int ub_exec_block_seconds(ub_comm *c, double copy_beta, double *out, int max) UB_REQUIRES(ub_state_mutex);
/* Lock held: the executor's own wait before a block of the running plan (its first `max`), over
 * the timed iterations whose marks have completed (ub_verify_executor_wait, with the blocks'
 * ready times from the agreed profile); NAN where nothing was timed. */
double ub_exec_block_wait(ub_comm *c, const ub_profile *agreed, int max) UB_REQUIRES(ub_state_mutex);
/* Waits (without the lock) for the blocks issued so far: their times can then be read. */
void ub_exec_drain(ub_comm *c);
/* Releases the executor (the communicator ends).  wait: synchronise its stream first (destroy);
 * otherwise (abort, a dead peer) it never waits for device work: the device resources are left
 * to the process's end. */
void ub_exec_release(ub_comm *c, bool wait);

#endif
