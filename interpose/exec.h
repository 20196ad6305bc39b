/* The executor of schedule mode (docs/design.md): the private stream, the staging buffer and the
 * readiness events of one communicator, and the issue of blocks.
 * Failures that would leave the other ranks waiting stop the process with a diagnostic (they are
 * rank-local: no consistent way around them exists). */
#ifndef USBYTE_EXEC_H
#define USBYTE_EXEC_H

#include "state.h"

/* Creates everything a plan needs (called once the plan is known, with the global lock held).
 * Returns 0, or -1 with the reason in why. */
int ub_exec_setup(ub_comm *c, char *why, size_t len);
/* Issues block b of the current iteration, restricted to the segments of calls below `arrived`
 * (slot >= 0: between timing events, the slot-th of the UB_SCHED_TRACED iterations recorded for
 * the report; -1: not timed).  Called WITHOUT the global lock, outside any
 * NCCL group, by the thread that issues the communicator's calls (NCCL forbids concurrent use of
 * a communicator). */
void ub_exec_issue_block(ub_comm *c, int b, int arrived, int slot);
/* Waits (without the lock) for the blocks issued so far: their times can then be read. */
void ub_exec_drain(ub_comm *c);
/* Releases the executor.  wait: synchronise its stream first (destroy); otherwise (abort, a dead
 * peer) it never waits for device work: the device resources are left to the process's end. */
void ub_exec_release(ub_comm *c, bool wait);

#endif
