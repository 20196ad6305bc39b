/* Completion of deferred calls for the application's events and host waits (docs/design.md,
 * "Stream semantics").  The law: usbyte never enqueues a device-side wait on work that has not
 * been submitted.  So an event the application records on a stream S that has deferred calls not
 * yet covered by issued blocks is kept PENDING: nothing is recorded on it until the host issues
 * the block that completes what it covers (calls 0..k of S in stream completion, call k in call
 * completion).  Then it is MATERIALIZED: recorded on the private stream right after that block,
 * or, when S had other work since its last deferred call, on a completion stream that waits for
 * an event recorded on S at the application's record (S's progress) and for one recorded after
 * that block.  Until then a query says cudaErrorNotReady, and a blocking consumer waits on the
 * host for the issuing thread to issue the block; when the consumer IS the issuing thread, the
 * wait (one the plan did not expect, maybe on some ranks only) waits for what was submitted to
 * the device, and changes nothing that is issued (cuda_hooks.c). */
#ifndef USBYTE_REDIRECT_H
#define USBYTE_REDIRECT_H

#include <stdatomic.h>
#include <stdbool.h>

#include "lock_contract.h"
#include <cuda_runtime_api.h>

#include "state.h"

/* Communicators that ran a plan and are not ended: the CUDA wrappers' slow path then also serves
 * the streams listed here (read without the lock). */
extern atomic_int ub_sched_live;
bool ub_sched_stream_listed(cudaStream_t s);
/* Events pending on some communicator, for the consumers' lock-free fast path. */
extern atomic_int ub_events_pending;

/* ---- from the cursor and the executor (defer.c), lock held ---- */
/* Call k was deferred on st; stream_value / call_value: the block values at which calls 0..k
 * (of st) and call k are complete. */
void ub_redirect_deferred(ub_comm *c, ub_stream *st, int k, uint64_t stream_value, uint64_t call_value) UB_REQUIRES(ub_state_mutex);
/* By the issuing thread, right after the block of value c->sched.issued went onto the private
 * stream: materializes every pending event it completes; at the iteration's last block
 * (iteration_end) also marks the iteration's end on the private stream.  A CUDA failure to record
 * one is returned, with why (that event stays pending). */
cudaError_t ub_redirect_block_issued(ub_comm *c, bool iteration_end, char *why, size_t len) UB_REQUIRES(ub_state_mutex);
/* The communicator ends.  Its pending events are recorded on their own streams (the deferred
 * calls they covered were flushed, or, after an abort, will never run); never waits.  release:
 * the completion resources are destroyed too (not after an abort). */
void ub_redirect_end(ub_comm *c, bool release) UB_REQUIRES(ub_state_mutex);

/* ---- from the CUDA hooks ---- */
/* Before the real cudaEventRecord*: true when the record was made (or kept pending) here, *r its
 * result. */
bool ub_redirect_record(cudaEvent_t ev, cudaStream_t s, unsigned flags, cudaError_t *r) UB_EXCLUDES(ub_state_mutex);
/* The application enqueued work on stream s (a wait, a call forwarded to NCCL): an event recorded
 * on it from now on also waits for the stream's own progress.  _locked: with the lock held; _on:
 * on the stream's record, found under the lock still held. */
void ub_redirect_stream_work(cudaStream_t s) UB_EXCLUDES(ub_state_mutex);
void ub_redirect_stream_work_locked(cudaStream_t s) UB_REQUIRES(ub_state_mutex);
void ub_redirect_stream_work_on(ub_stream *st) UB_REQUIRES(ub_state_mutex);
/* cudaEventQuery / cudaEventElapsedTime: true when an event is pending (*r = cudaErrorNotReady). */
bool ub_redirect_event_query(cudaEvent_t ev, cudaError_t *r) UB_EXCLUDES(ub_state_mutex);
bool ub_redirect_elapsed(cudaEvent_t a, cudaEvent_t b, cudaError_t *r) UB_EXCLUDES(ub_state_mutex);
/* Lock held: the communicator whose block a pending event waits for (NULL: not pending), and
 * in *call (when not NULL) the deferred call of the iteration it waits for. */
ub_comm *ub_redirect_pending_comm(cudaEvent_t ev, int *call) UB_REQUIRES(ub_state_mutex);
/* Lock held: the issuing thread's wait on pending event ev, which no block issue can end here
 * (it would wait for this thread's own later calls): waiter (cudaStreamWaitEvent), or the host
 * when NULL, waits for the work submitted to the device that ev covers (its stream's so far and
 * the blocks issued); ev stays pending and completes with its block. */
void ub_redirect_wait_submitted(cudaEvent_t ev, cudaStream_t waiter) UB_REQUIRES_UNLOCKS(ub_state_mutex);
/* Lock held: waits (releasing the lock meanwhile) until ev is no longer pending; a line every
 * USBYTE_HANG_S names the thread, the event and the block it waits for. */
void ub_redirect_wait_event(cudaEvent_t ev, const char *what) UB_REQUIRES_UNLOCKS(ub_state_mutex);
/* Lock held: the communicator of stream s whose deferred calls are not all issued (NULL: none). */
ub_comm *ub_redirect_stream_unissued(cudaStream_t s) UB_REQUIRES(ub_state_mutex);
/* Lock held: waits until every deferred call of s is issued (as ub_redirect_wait_event). */
void ub_redirect_wait_stream(cudaStream_t s, const char *what) UB_REQUIRES_UNLOCKS(ub_state_mutex);
/* Lock held: waits until c's block value `target` is issued. */
void ub_redirect_wait_comm(ub_comm *c, uint64_t target, const char *what) UB_REQUIRES_UNLOCKS(ub_state_mutex);
/* After the real cudaStreamSynchronize/Query of s: the deferred calls are part of s. */
cudaError_t ub_redirect_stream_waited(cudaStream_t s, bool poll, cudaError_t r) UB_EXCLUDES(ub_state_mutex);
/* Lock held, before graph capture begins on s and after its deferred calls were issued: s waits
 * for their blocks (an event recorded on the private stream after them), so that its own order
 * covers them again; usbyte then leaves s alone while it captures.  Returns the communicator
 * whose stream could not be made to wait (a CUDA failure, why says which), NULL when none. */
ub_comm *ub_redirect_capture_begins(cudaStream_t s, char *why, size_t len) UB_REQUIRES(ub_state_mutex);
/* Lock held, at the first call of an iteration that passes through (verification), every block
 * of the previous iterations issued: each stream with deferred calls of c waits once for their
 * blocks and is settled, so that the application's records on it go through as they are.  Left
 * unsettled, every record would go through the completion stream (three more operations each)
 * until the device reports the plan's last iteration done, which a host that queues iterations
 * ahead makes several iterations: the pass-through side would carry the plan's overhead.  A CUDA
 * failure is returned, with why. */
cudaError_t ub_redirect_pass_through_begins(ub_comm *c, char *why, size_t len) UB_REQUIRES(ub_state_mutex);
/* Lock held: the event or the stream goes away. */
void ub_redirect_event_gone(ub_event *e) UB_REQUIRES(ub_state_mutex);
void ub_redirect_stream_gone(ub_stream *st) UB_REQUIRES(ub_state_mutex);

#endif
