/* The warm-up (docs/design.md section 5): detection restarts, profiling whole iterations, the timing
 * events of each profiled call (ready, start, end, need), merge barriers, the CUDA hooks' part that
 * watches producers and consumers, and the staging copy's timing.  Called by the life cycle
 * (lifecycle.c) and the CUDA hooks (cuda_hooks.c), with the global lock held. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "coll_desc.h"
#include "cuda_list.h"
#include "cupti.h"
#include "device.h"
#include "globals.h"
#include "group.h"
#include "guard.h"
#include "log.h"
#include "nccl_list.h"
#include "state.h"
#include "tables.h"
#include "warmup.h"
#include "usbyte/types.h"

/* Compute operations (kernels, host functions) CUPTI saw on any stream while subscribed
 * (ub_warmup_stream_work): a wait with none since the previous one is in the same segment. */
static atomic_ullong work_count;

/* Bytes of the device-to-device copy timed in the warm-up (staging's copy_beta). */
#define COPY_PROBE_BYTES (2u << 20)

atomic_int ub_cuda_tracking;

static int nccl_to_ub_dtype(int nccl)
{
#define X(e, name, size, value) if (nccl == value) return UB_DTYPE_##e;
    UB_DTYPE_LIST(X)
#undef X
    return -1;
}

static int nccl_to_ub_op(int nccl)
{
#define X(e, name, value) if (nccl == value) return UB_OP_##e;
    UB_OP_LIST(X)
#undef X
    return -1;
}

/* Hands the stream's pending upstream timing event to the timing list, with the ready slots of
 * the calls that followed the wait (none: the time is read and dropped). */
void ub_warmup_file_ready(ub_comm *c, ub_stream *st)
{
    if (!st || !st->ready_ev)
        return;
    ub_rec_call *first = st->ready_n ? ub_record_at(&c->rec, st->ready_it, st->ready_first) : NULL;
    ub_timing_file(&c->tm, st->ready_ev, first ? &first->ready : NULL, first ? st->ready_n : 0, sizeof *first, NULL);
    st->ready_ev = NULL;
    st->ready_n = 0;
}

static void forget_comm_refs(ub_comm *c) UB_REQUIRES(ub_state_mutex)
{
    for (ub_stream *s = ub_state_streams(), *next; s; s = next) {
        next = s->hh.next;
        if (s->comm != c)
            continue;
        ub_warmup_file_ready(c, s);
        s->ready_ev = NULL;
        if (!s->sch.comm) /* else schedule mode still redirects its records */
            ub_stream_forget(s);
    }
    ub_event_forget_for(c, atomic_load(&ub_cuda_tracking) == 0);
}

void ub_comm_stop_watching(ub_comm *c) UB_REQUIRES(ub_state_mutex)
{
    ub_comm_unwatch_cupti(c);
    if (c->watching) {
        atomic_fetch_sub(&ub_cuda_tracking, 1);
        c->watching = false;
    }
    forget_comm_refs(c);
}

void ub_comm_stop_profiling(ub_comm *c) UB_REQUIRES(ub_state_mutex)
{
    ub_comm_stop_watching(c);
    ub_timing_stop(&c->tm);
    ub_record_free(&c->rec);
    free(c->pos_call);
    free(c->pos_sig);
    free(c->pos_buf);
    free(c->has_end_event);
    c->pos_call = NULL;
    c->pos_sig = NULL;
    c->pos_buf = NULL;
    c->has_end_event = NULL;
}

/* Staging's cost: one device-to-device copy timed on the private stream (its seconds per byte,
 * overhead included, so a staged block is never under-priced).  Without the buffer the cost is
 * unknown (0, like the profiles without copy_beta). */
static void time_staging_copy(ub_comm *c)
{
    /* Once per communicator: the copy's cost does not change between warm-ups, and a second
     * probe would write the same buffer as a first one still running on the old private stream
     * (a restart or a new start of the iteration destroys that stream, not its work). */
    if (c->copy_probed)
        return;
    c->copy_probed = true;
    int previous = ub_device_enter(c->device);
    if (!c->copy_buf && UB_UNSAFE(ub_cuda.cudaMalloc(&c->copy_buf, 2 * (size_t)COPY_PROBE_BYTES)) != cudaSuccess)
        c->copy_buf = NULL;
    ub_device_leave(previous);
    if (!c->copy_buf)
        return;
    /* A first touch would time the allocation's page faults (the emulator's) or lazy mapping. */
    if (UB_CUDA(ub_cuda.cudaMemsetAsync(c->copy_buf, 0, 2 * (size_t)COPY_PROBE_BYTES, c->tm.agree)) != cudaSuccess)
        return;
    ub_timing_mark(&c->tm, c->tm.agree, &c->copy_t0, 1, 0, NULL);
    if (UB_CUDA(ub_cuda.cudaMemcpyAsync((char *)c->copy_buf + COPY_PROBE_BYTES, c->copy_buf, COPY_PROBE_BYTES,
                                        cudaMemcpyDeviceToDevice, c->tm.agree)) == cudaSuccess)
        ub_timing_mark(&c->tm, c->tm.agree, &c->copy_t1, 1, 0, NULL);
}

void ub_warmup_settled(ub_comm *c, bool *settled)
{
    for (int it = 0; it < c->rec.warmup; it++) {
        const ub_rec_call *first = ub_record_at(&c->rec, it, 0);
        settled[it] = first && !ub_timing_pending_into(&c->tm, first, first + c->rec.capacity);
    }
}

/* A staged byte is copied twice (in, and back out): copy_beta covers both (docs/model.md). */
double ub_comm_copy_beta(const ub_comm *c)
{
    double dt = c->copy_t1 - c->copy_t0;
    return isfinite(dt) && dt > 0 ? 2.0 * dt / COPY_PROBE_BYTES : 0.0;
}

/* Failures here are rank-local, so they must not change what this rank issues: the
 * communicator still goes to PROFILE and takes part in the agreement at agree_at, with
 * local_failure set (every rank then stays in pass-through, saying why). */
ub_transition ub_warmup_start(ub_comm *c, uint64_t first) UB_REQUIRES(ub_state_mutex)
{
    c->profile_start = first;
    c->agree_at = first + (uint64_t)ub_cfg.warmup * c->period;
    c->n_ar = 0;
    c->other_calls = 0;
    c->cur_iter = c->cur_call = -1;
    c->end_records = false;
    c->stream_host_waits = false;
    c->consumers_stream = c->consumers_host = 0;
    c->stream_ordered = c->stream_compute = c->stream_copies = 0;
    c->stream_ordered_example[0] = '\0';
    c->local_failure[0] = '\0';
    c->consumers_host_other = 0;
    c->profile_gen++;
    c->agree_again = false;
    c->agree_tries = 0;
    c->agree_issued = false;
    memset(&c->seq, 0, sizeof c->seq);
    bool recorder = ub_record_init(&c->rec, ub_cfg.warmup, (int)c->period) == 0;
    c->pos_call = calloc(c->period, sizeof *c->pos_call);
    c->pos_sig = calloc(c->period, sizeof *c->pos_sig);
    c->pos_buf = calloc(2 * (size_t)c->period, sizeof *c->pos_buf);
    c->has_end_event = calloc(c->period, sizeof *c->has_end_event);
    c->period_refuted = c->refuted = false;
    c->nccl_stream = NULL;
    c->multi_stream = c->legacy_stream = c->blocking_stream = c->p2p = false;
    if (!recorder || !c->pos_call || !c->pos_sig || !c->pos_buf || !c->has_end_event)
        snprintf(c->local_failure, sizeof c->local_failure, "cannot allocate the warm-up recorder");
    else if (ub_timing_start(&c->tm, c->device) != 0)
        snprintf(c->local_failure, sizeof c->local_failure, "cannot create the timing events or private streams");
    else
        time_staging_copy(c);
    ub_comm_watch_cupti(c);
    c->watching = true;
    atomic_fetch_add(&ub_cuda_tracking, 1);
    if (c->local_failure[0])
        ub_warn("communicator %d: %s: this rank takes part in the agreement without numbers, and every "
                "rank will stay in pass-through", c->index, c->local_failure);
    return ub_move(UB_COMM_PROFILE, NULL);
}

ub_transition ub_warmup_redetect(ub_comm *c, const char *why) UB_REQUIRES(ub_state_mutex)
{
    ub_iterdet_free(c->det);
    ub_iterdet_config dc = {.min_span = UB_MIN_SPAN, .min_period = c->min_period};
    c->det = ub_iterdet_new(&dc); /* det_full keeps its evidence: it spans the restarts */
    c->deviations = 0;
    if (!c->det)
        return ub_move(UB_COMM_DISABLED, "out of memory");
    return ub_move(UB_COMM_DETECT, why);
}

ub_transition ub_warmup_rephase(ub_comm *c, uint64_t first) UB_REQUIRES(ub_state_mutex)
{
    char why[200];
    snprintf(why, sizeof why, "the profiled iterations did not begin where an iteration does (the widest gap "
             "between ready times came %u calls into them): profiling again from call %llu",
             c->phase_pos, (unsigned long long)first);
    ub_info("communicator %d: %s", c->index, why);
    c->rephased = true;
    c->phase_pos = 0;
    ub_warmup_start(c, first);
    return ub_move(UB_COMM_PROFILE, why);
}

ub_transition ub_warmup_restart(ub_comm *c, const char *why) UB_REQUIRES(ub_state_mutex)
{
    ub_comm_stop_profiling(c);
    c->deviations++;
    if (c->deviations > 8)
        return ub_move(UB_COMM_PASS_THROUGH, "the call sequence keeps changing during the warm-up");
    ub_debug("communicator %d: %s; looking for the period again", c->index, why);
    return ub_move(UB_COMM_DETECT, NULL);
}

void ub_comm_file_ready(ub_comm *c) UB_REQUIRES(ub_state_mutex)
{
    for (ub_stream *st = ub_state_streams(); st; st = st->hh.next)
        if (st->comm == c)
            ub_warmup_file_ready(c, st);
}

/* Records one call of a profiled iteration; returns its allreduce index or -1. */
/* A profiled call made inside a group is launched at the outermost ncclGroupEnd: the event that
 * marks its end goes on its stream after that (recorded right after the call it would precede
 * the launch and measure nothing).  In a group of several collectives it marks the end of all. */
typedef struct call_end {
    ub_comm *comm;
    unsigned gen;
    int iteration, call;
    cudaStream_t stream;
} call_end;

static void mark_end(const call_end *e)
{
    ub_comm *c = e->comm;
    if (c->state != UB_COMM_PROFILE || c->local_failure[0] || c->profile_gen != e->gen)
        return;
    ub_rec_call *rc = ub_record_at(&c->rec, e->iteration, e->call);
    if (rc)
        ub_timing_mark(&c->tm, e->stream, &rc->end, 1, 0, NULL);
}

static void mark_end_after_launch(const void *data) UB_REQUIRES(ub_state_mutex) { mark_end(data); }

void ub_warmup_call_end(ub_comm *c, int iteration, int call, cudaStream_t stream)
{
    call_end e = {c, c->profile_gen, iteration, call, stream};
    if (!ub_thread_in_group())
        mark_end(&e);
    else /* beyond the queue's room the call's duration stays unknown */
        ub_group_after_launch(mark_end_after_launch, &e, sizeof e);
}

/* A created stream without cudaStreamNonBlocking: the legacy default stream waits for its work
 * (the default streams themselves are flagged as such). */
static bool blocking_stream(cudaStream_t s)
{
    unsigned flags = cudaStreamNonBlocking;
    if (s == NULL || s == cudaStreamLegacy || s == cudaStreamPerThread || !ub_cuda.cudaStreamGetFlags)
        return false;
    return UB_CUDA(ub_cuda.cudaStreamGetFlags(s, &flags)) == cudaSuccess && !(flags & cudaStreamNonBlocking);
}

int ub_warmup_record_call(ub_comm *c, const ub_coll_desc *d, uint64_t sig, uint64_t it, uint32_t pos) UB_REQUIRES(ub_state_mutex)
{
    if (pos == 0) {
        c->cur_iter = (int)it;
        c->cur_call = -1;
        if (it == 0)
            ub_seqhash_init(&c->seq);
    }
    /* What the header of the agreement carries is counted even when this rank cannot record
     * (local_failure): it comes from the call sequence alone. */
    bool rec_ok = !c->local_failure[0];
    if (it == 0) {
        ub_seqhash_add(&c->seq, sig);
        int dt = nccl_to_ub_dtype(d->dtype), op = nccl_to_ub_op(d->op);
        if (rec_ok)
            c->pos_sig[pos] = sig;
        if (d->id == UB_NCCL_Send || d->id == UB_NCCL_Recv)
            c->p2p = true;
        if (d->id == UB_NCCL_AllReduce && dt >= 0 && op >= 0) {
            int k = c->n_ar++;
            if (rec_ok) {
                c->pos_call[pos] = k;
                c->rec.bytes[k] = (uint64_t)d->count * ub_dtype_size((ub_dtype)dt);
                c->rec.dtype[k] = dt;
                c->rec.op[k] = op;
                c->rec.n_calls = c->n_ar;
            }
        } else {
            /* Another collective, or an allreduce with a reduction op the planner cannot stage
             * (a PreMulSum op handle): forwarded as it comes, not a profile call. */
            if (rec_ok)
                c->pos_call[pos] = -1;
            c->other_calls++;
        }
    }
    if (!rec_ok)
        return -1;
    int k = c->pos_call[pos];
    /* The portable sequence cannot tell equal-sized calls apart (a repeated block of layers looks
     * like a whole iteration); the buffers can: an allreduce of a true period reduces the same
     * buffers every iteration (parameters' gradients, DDP's buckets).  Rank-local evidence, which
     * the agreement combines. */
    if (k >= 0 && it == 0) {
        c->pos_buf[2 * pos] = d->send;
        c->pos_buf[2 * pos + 1] = d->recv;
    } else if (k >= 0 && (c->pos_buf[2 * pos] != d->send || c->pos_buf[2 * pos + 1] != d->recv)) {
        c->period_refuted = true;
    }
    ub_stream *st = ub_stream_get(d->stream, c);
    if (k < 0 || !st || st->comm != c)
        return -1;
    c->cur_call = k;
    if (!c->nccl_stream) {
        c->nccl_stream = d->stream;
        c->blocking_stream = blocking_stream(d->stream);
    } else if (c->nccl_stream != d->stream) {
        c->multi_stream = true;
    }
    if (d->stream == NULL || d->stream == cudaStreamLegacy || d->stream == cudaStreamPerThread)
        c->legacy_stream = true;
    ub_rec_call *rc = ub_record_at(&c->rec, (int)it, k);
    if (st->ready_ev && st->ready_n > 0 && !(st->ready_it == (int)it && st->ready_first + st->ready_n == k))
        ub_warmup_file_ready(c, st); /* that wait belonged to earlier calls only */
    if (st->ready_ev) {
        if (st->ready_n++ == 0) {
            st->ready_it = (int)it;
            st->ready_first = k;
        }
        rc->upstream = true;
        ub_timing_mark(&c->tm, d->stream, &rc->start, 1, 0, NULL);
    } else {
        rc->upstream = false;
        ub_timing_mark(&c->tm, d->stream, &rc->start, 1, 0, &rc->ready);
    }
    return k;
}

void ub_warmup_record_end(ub_comm *c, const ub_coll_desc *d) UB_REQUIRES(ub_state_mutex)
{
    /* Only the first allreduce's ready begins an iteration: elsewhere the last one's end stays
     * unmeasured (that iteration is not used). */
    if (c->local_failure[0] || !c->pos_call || c->period == 0 || c->pos_call[0] != 0)
        return;
    ub_stream *st = ub_stream_get(d->stream, c);
    if (!st || st->comm != c)
        return;
    if (st->ready_ev && st->ready_n > 0)
        ub_warmup_file_ready(c, st); /* that wait belonged to earlier calls only */
    if (st->ready_ev) {
        ub_timing_file(&c->tm, st->ready_ev, &c->rec.end_ready, 1, 0, NULL);
        st->ready_ev = NULL;
    } else {
        ub_timing_mark(&c->tm, d->stream, &c->rec.end_ready, 1, 0, NULL);
    }
}

/* From the lock on: the waits that precede the first profiled call are already its producers'. */
static bool profiling(const ub_comm *c) { return c && c->state == UB_COMM_PROFILE && !c->local_failure[0]; }

/* A host wait from a thread that does not issue the communicator's calls (Horovod's finalizer,
 * a watchdog) cannot hold back the next call: it is neither a merge barrier nor, by itself,
 * what gates the next forward.  Like a poll, it is only counted (host_waits_other_thread). */
static bool other_thread(ub_comm *c)
{
    if (c->issuer == (unsigned long)pthread_self())
        return false;
    c->consumers_host_other++;
    return true;
}

/* Marks calls [from, to] of iteration `it` as needed now (one timing event for the range). */
static void need_range(ub_comm *c, int it, int from, int to, cudaStream_t stream, bool first_range)
{
    ub_rec_call *first = ub_record_at(&c->rec, it, from);
    /* Structure, where CUPTI lets us see it: a stream wait right after the previous one on the
     * same stream, with no work enqueued anywhere in between, belongs to the same segment. */
    unsigned long long work = atomic_load(&work_count);
    bool split = !(stream && c->cupti_held && stream == c->last_need_stream && work == c->last_need_work);
    c->last_need_stream = stream;
    c->last_need_work = work;
    /* One wait releases every call of the range: only its first call may open a segment. */
    for (int k = from; k <= to; k++) {
        ub_record_at(&c->rec, it, k)->needed = true;
        ub_record_at(&c->rec, it, k)->split = split && first_range && k == from;
    }
    if (stream)
        ub_timing_mark(&c->tm, stream, &first->need, to - from + 1, sizeof *first, NULL);
    else
        ub_timing_now(&c->tm, &first->need, to - from + 1, sizeof *first);
}

/* A wait on the completion of call `call` of iteration `it`; stream: the waiting stream, NULL
 * for a host wait.  It is the first need of that call, and of the calls just before it that
 * have no completion event of their own (an event after several calls stands for all of them);
 * whole_stream (a stream or device synchronisation) needs every call so far. */
static void need(ub_comm *c, int it, int call, cudaStream_t stream, bool whole_stream)
{
    if (it < 0 || it >= c->rec.warmup || call < 0 || call >= c->n_ar)
        return;
    if (it == c->cur_iter && call == c->cur_call)
        ub_record_at(&c->rec, it, call)->barrier = true; /* before the next call arrived */
    if (stream)
        c->consumers_stream++;
    else
        c->consumers_host++;
    if (!whole_stream) {
        if (ub_record_at(&c->rec, it, call)->needed)
            return;
        int k = call;
        while (k > 0 && !c->has_end_event[k - 1] && !ub_record_at(&c->rec, it, k - 1)->needed)
            k--;
        need_range(c, it, k, call, stream, true);
        return;
    }
    bool first_range = true;
    for (int k = call; k >= 0;) {
        while (k >= 0 && ub_record_at(&c->rec, it, k)->needed)
            k--;
        if (k < 0)
            break;
        int to = k;
        while (k >= 0 && !ub_record_at(&c->rec, it, k)->needed)
            k--;
        need_range(c, it, k + 1, to, stream, first_range);
        first_range = false;
    }
}

void ub_warmup_event_recorded(cudaEvent_t event, cudaStream_t stream)
{
    ub_state_lock();
    ub_stream *st = ub_stream_get(stream, NULL);
    ub_event *e = ub_event_get(event, true);
    if (e && st && profiling(st->comm)) {
        ub_comm *c = st->comm;
        e->comm = c;
        e->iteration = c->cur_iter;
        e->call = c->cur_call;
        if (e->call < 0) { /* recorded before this iteration's first allreduce */
            e->iteration = c->cur_iter - 1;
            e->call = c->n_ar - 1;
        } else {
            c->has_end_event[e->call] = true;
        }
        c->end_records = true;
    } else if (e) {
        e->comm = NULL; /* re-recorded elsewhere: it no longer marks our calls */
        if (!e->companion && UB_CUDA(ub_cuda.cudaEventCreateWithFlags(&e->companion, cudaEventDefault)) != cudaSuccess)
            e->companion = NULL;
        if (e->companion && UB_CUDA(ub_cuda.cudaEventRecord(e->companion, stream)) != cudaSuccess) {
            UB_CUDA(ub_cuda.cudaEventDestroy(e->companion));
            e->companion = NULL;
        }
    }
    ub_state_unlock();
}

void ub_warmup_stream_wait(cudaStream_t stream, cudaEvent_t event)
{
    ub_state_lock();
    ub_event *e = ub_event_get(event, false);
    ub_stream *st = ub_stream_get(stream, NULL);
    if (e && e->comm && profiling(e->comm)) {
        if (!(st && st->comm == e->comm)) /* a wait of S on its own event is no consumer */
            need(e->comm, e->iteration, e->call, stream, false);
    } else if (st && profiling(st->comm)) {
        /* The NCCL stream waits on a producer: the gradients that follow are ready when that
         * event is: exactly (the companion of its record) or, for an event recorded before we
         * watched, when a probe stream waiting on it gets through. */
        ub_comm *c = st->comm;
        ub_warmup_file_ready(c, st);
        if (e && e->companion) {
            st->ready_ev = e->companion;
            e->companion = NULL;
        } else {
            st->ready_ev = ub_timing_probe(&c->tm, event);
        }
    }
    ub_state_unlock();
}

void ub_warmup_event_host_wait(cudaEvent_t event, bool poll)
{
    ub_state_lock();
    ub_event *e = ub_event_get(event, false);
    (void)poll; /* a poll from the issuing thread is a need like a synchronisation */
    if (e && profiling(e->comm) && !other_thread(e->comm))
        need(e->comm, e->iteration, e->call, NULL, false);
    ub_state_unlock();
}

void ub_warmup_stream_host_wait(cudaStream_t stream, bool poll)
{
    ub_state_lock();
    ub_stream *st = ub_stream_get(stream, NULL);
    (void)poll;
    if (st && profiling(st->comm))
        st->comm->stream_host_waits = true;
    if (st && profiling(st->comm) && !other_thread(st->comm))
        need(st->comm, st->comm->cur_iter, st->comm->cur_call, NULL, true);
    ub_state_unlock();
}

void ub_warmup_device_wait(void)
{
    ub_state_lock();
    for (ub_comm *c = ub_state_live_comms(); c; c = c->hh.next)
        if (profiling(c) && !other_thread(c))
            need(c, c->cur_iter, c->cur_call, NULL, true);
    ub_state_unlock();
}

void ub_warmup_stream_work(cudaStream_t stream, const char *what, bool compute)
{
    /* Compute (kernels, host functions) separates forward segments; copies do not (DDP copies
     * each bucket back right after waiting for it). */
    if (compute)
        atomic_fetch_add_explicit(&work_count, 1, memory_order_relaxed);
    if (ub_state_in_child())
        return;
    ub_state_lock();
    ub_stream *st = ub_stream_get(stream, NULL);
    if (st && profiling(st->comm)) {
        ub_comm *c = st->comm;
        c->stream_ordered += 1;
        *(compute ? &c->stream_compute : &c->stream_copies) += 1;
        if (!c->stream_ordered_example[0])
            snprintf(c->stream_ordered_example, sizeof c->stream_ordered_example, "%s", what);
        ub_debug("communicator %d: %s on its NCCL stream during the warm-up", c->index, what);
    }
    ub_state_unlock();
}
