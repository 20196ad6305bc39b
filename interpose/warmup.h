/* The warm-up (warmup.c): detection restarts, profiling, and the CUDA hooks' observation, all
 * with the global lock held. */
#ifndef USBYTE_WARMUP_H
#define USBYTE_WARMUP_H

#include <stdatomic.h>

#include "coll_desc.h"
#include "lock_contract.h"
#include "state.h"
#include "transition.h"

/* Nonzero while some stream or event is involved: the CUDA wrappers' fast path reads only this. */
extern atomic_int ub_cuda_tracking;

/* The warm-up's restarts set up what the next state needs and return the move to it, which the
 * life cycle applies (lifecycle.c). */
ub_transition ub_warmup_start(ub_comm *c, uint64_t first) UB_REQUIRES(ub_state_mutex);     /* profile from call `first` */
ub_transition ub_warmup_restart(ub_comm *c, const char *why) UB_REQUIRES(ub_state_mutex);  /* a deviation during the warm-up */
/* The agreed profile began mid-iteration (phase_pos): the warm-up again from call `first`. */
ub_transition ub_warmup_rephase(ub_comm *c, uint64_t first) UB_REQUIRES(ub_state_mutex);
/* Detection of the period again (schedule mode after too many deviations, a refuted period). */
ub_transition ub_warmup_redetect(ub_comm *c, const char *why) UB_REQUIRES(ub_state_mutex);
/* Records call `pos` of profiled iteration `it`; returns its allreduce index or -1. */
int ub_warmup_record_call(ub_comm *c, const ub_coll_desc *d, uint64_t sig, uint64_t it, uint32_t pos) UB_REQUIRES(ub_state_mutex);
/* The call after the warm-up (at agree_at): when it is the first allreduce of an iteration, its
 * ready, measured as every profiled call's, ends the last profiled iteration (rec.end_ready). */
void ub_warmup_record_end(ub_comm *c, const ub_coll_desc *d) UB_REQUIRES(ub_state_mutex);
void ub_warmup_call_end(ub_comm *c, int iteration, int call, cudaStream_t stream);
/* Files the stream's (every stream's of c) pending upstream timing event. */
void ub_warmup_file_ready(ub_comm *c, ub_stream *st);
void ub_comm_file_ready(ub_comm *c) UB_REQUIRES(ub_state_mutex);
/* Per warm-up iteration: every timing event recorded for it has completed (ub_timing_poll first). */
void ub_warmup_settled(ub_comm *c, bool *settled);
/* Seconds per byte of the warm-up's timed device-to-device copy (0 when unknown). */
double ub_comm_copy_beta(const ub_comm *c);
/* Releases the warm-up's CUDA hooks (tracking count, CUPTI, event and stream tables), and with
 * stop_profiling its record and timing events too. */
void ub_comm_stop_watching(ub_comm *c) UB_REQUIRES(ub_state_mutex);
void ub_comm_stop_profiling(ub_comm *c) UB_REQUIRES(ub_state_mutex);
void ub_warmup_event_recorded(cudaEvent_t event, cudaStream_t stream) UB_EXCLUDES(ub_state_mutex);
void ub_warmup_stream_wait(cudaStream_t stream, cudaEvent_t event) UB_EXCLUDES(ub_state_mutex);
void ub_warmup_event_host_wait(cudaEvent_t event, bool poll) UB_EXCLUDES(ub_state_mutex);
void ub_warmup_stream_host_wait(cudaStream_t stream, bool poll) UB_EXCLUDES(ub_state_mutex);
void ub_warmup_device_wait(void) UB_EXCLUDES(ub_state_mutex);
/* CUPTI saw work put on `stream` (cupti_wrap.c's callback; the lock not held): compute (a
 * kernel, graph, host function or stream callback) or a copy, memset or write. */
void ub_warmup_stream_work(cudaStream_t stream, const char *what, bool compute) UB_EXCLUDES(ub_state_mutex);

#endif
