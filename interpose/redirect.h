/* Completion without stalling the application's stream (DESIGN.md section 3).  While a stream S
 * has deferred calls that have not completed, every event the application records on S is
 * recorded, inside that same call, on a completion stream that first waits for S's progress and
 * for the completion counter value of the deferred calls; host waits on S see the deferred work;
 * a host wait of the issuing thread on a call whose block cannot be issued yet is an early
 * consumer: nothing consistent across ranks can save the job, so usbyte says why and aborts. */
#ifndef USBYTE_REDIRECT_H
#define USBYTE_REDIRECT_H

#include <stdatomic.h>
#include <stdbool.h>

#include <cuda_runtime_api.h>

#include "state.h"

/* Communicators that ran a plan and are not ended: the CUDA wrappers' slow path then also serves
 * the streams listed here (read without the lock). */
extern atomic_int ub_sched_live;
bool ub_sched_stream_listed(cudaStream_t s);
/* The calling thread issued a deferred call: its host waits are checked for early consumers. */
extern _Thread_local bool ub_thread_defers;

/* Lock held: call k was deferred on st; stream_value / call_value: the counter values at which
 * calls 0..k (of st) and call k are complete. */
void ub_redirect_deferred(ub_comm *c, ub_stream *st, int k, uint64_t stream_value, uint64_t call_value);
/* Before the real cudaEventRecord*: true when the record was made on a completion stream
 * instead (*r is its result). */
bool ub_redirect_record(cudaEvent_t ev, cudaStream_t s, cudaError_t *r);
/* Host waits, before the real call (early consumers) and after it (deferred work). */
void ub_redirect_event_wait(cudaEvent_t ev, bool poll);
void ub_redirect_stream_wait(cudaStream_t s, bool poll);
cudaError_t ub_redirect_stream_waited(cudaStream_t s, bool poll, cudaError_t r);
void ub_redirect_device_wait(void);
/* Lock held: the stream goes away; its completion streams stay with the communicator. */
void ub_redirect_stream_gone(ub_stream *st);
/* Lock held: forget every stream of c (communicator destroyed). */
void ub_redirect_forget_comm(ub_comm *c);

#endif
