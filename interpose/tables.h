/* The runtime's tables of communicators, streams and events, and the global lock (tables.c;
 * docs: state.h).  The lock is never held across a real NCCL call. */
#ifndef USBYTE_TABLES_H
#define USBYTE_TABLES_H

#include "lock_contract.h"
#include "state.h"

void ub_state_lock(void) UB_ACQUIRE(ub_state_mutex);
void ub_state_unlock(void) UB_RELEASE(ub_state_mutex);
bool ub_state_trylock(void) UB_TRY_ACQUIRE(true, ub_state_mutex);
/* Lock held: sleeps until ub_state_wake_all or `seconds` pass (spurious wake-ups too); the lock
 * is held again on return. */
void ub_state_wait(double seconds) UB_REQUIRES_UNLOCKS(ub_state_mutex);
void ub_state_wake_all(void);
void ub_state_forget_in_child(void);  /* runtime.c, in a forked child */
bool ub_state_in_child(void);
void ub_comm_set_state(ub_comm *c, ub_comm_state s, const char *reason) UB_REQUIRES(ub_state_mutex);
/* This rank cannot issue what the other ranks will on c (what: the call that failed, and why):
 * one line, pass-through with that reason, and c->failed = r, which every later call on c returns
 * without reaching NCCL (the application's error handling, an abort of the communicator, runs).
 * Passing the calls through instead would pair them with the other ranks' blocks: a hang, or
 * wrong sums where the counts happen to match.  The first failure stays. */
void ub_comm_set_failed(ub_comm *c, ncclResult_t r, const char *what) UB_REQUIRES(ub_state_mutex);
/* The communicator's record (NULL: unknown). */
ub_comm *ub_comm_get(ncclComm_t handle) UB_REQUIRES(ub_state_mutex);
/* What the tables know of one collective call on its way in.  In schedule mode the cursor needs
 * the call's stream too, so it is answered here rather than asked for again. */
typedef struct {
    ub_comm *comm;     /* the communicator's record; NULL: unknown (not seen at its creation) */
    ub_stream *stream; /* schedule mode: the stream's record (NULL: none yet) */
    bool capturing;    /* schedule mode: a capture that the wrappers saw holds the stream */
} ub_call_lookup;
/* A collective's way in: false when the runtime stays out of the call, nothing locked (in a
 * forked child; on a communicator this thread noted passing its calls through, while nothing
 * changed in the tables since), else the lock taken and *at what the tables know of the call. */
bool ub_state_lock_call(ncclComm_t handle, cudaStream_t stream, ub_call_lookup *at) UB_TRY_ACQUIRE(true, ub_state_mutex);
/* The test that ub_state_lock_call makes before it locks, alone and lock-free: true when a call
 * on handle goes to NCCL as it is (a forked child; a communicator this thread noted passing its
 * calls through while nothing changed in the tables). */
bool ub_state_call_passes(ncclComm_t handle) UB_EXCLUDES(ub_state_mutex);
/* A communicator the way in did not know (created where usbyte could not see it): the lock taken
 * and its record, made from rank, nranks and device (asked of NCCL without the lock) unless
 * another thread made it meanwhile; NULL when out of memory. */
ub_comm *ub_state_lock_adopted(ncclComm_t handle, int rank, int nranks, int device) UB_ACQUIRE(ub_state_mutex);
/* A communicator that passes its calls through (pass-through, disabled, no failure to answer):
 * noted by the calling thread under the lock, so that its next calls go through without it while
 * nothing changed in the tables (any record's state, failure, creation or end). */
void ub_state_note_passing_through(const ub_comm *c) UB_REQUIRES(ub_state_mutex);
/* NCCL's asynchronous error of a communicator (a peer gone: ncclRemoteError), asked without the
 * lock; ncclSuccess while none (or in progress). */
ncclResult_t ub_comm_async_error(ncclComm_t handle) UB_EXCLUDES(ub_state_mutex);
/* A new record: detection starts.  rank, nranks and device come from NCCL, asked without the
 * lock. */
ub_comm *ub_comm_create(ncclComm_t handle, int rank, int nranks, int device) UB_REQUIRES(ub_state_mutex);
void ub_comm_forget(ub_comm *c) UB_REQUIRES(ub_state_mutex);      /* out of the live table; the record stays for the report */
/* A nonblocking communicator: never observed, reported with why (rank and size -1 when its
 * initialisation is still in progress). */
void ub_comm_add_disabled(ncclComm_t handle, int rank, int nranks, const char *why) UB_REQUIRES(ub_state_mutex);
ub_comm *ub_state_live_comms(void) UB_REQUIRES(ub_state_mutex);   /* walk with hh.next */
/* Every communicator seen since the start (destroyed ones included), for the report. */
ub_comm **ub_state_all_comms(int *n) UB_REQUIRES(ub_state_mutex);
/* The stream's record, created for c when create_for is set. */
ub_stream *ub_stream_get(cudaStream_t s, ub_comm *create_for) UB_REQUIRES(ub_state_mutex);
void ub_stream_forget(ub_stream *st) UB_REQUIRES(ub_state_mutex);
ub_stream *ub_state_streams(void) UB_REQUIRES(ub_state_mutex);    /* walk with hh.next */
ub_event *ub_event_get(cudaEvent_t e, bool create) UB_REQUIRES(ub_state_mutex);
void ub_event_forget(ub_event *e) UB_REQUIRES(ub_state_mutex);
/* The event records of c; with all, every warm-up record (none profiles any more).  An event
 * pending in schedule mode stays. */
void ub_event_forget_for(ub_comm *c, bool all) UB_REQUIRES(ub_state_mutex);

#endif
