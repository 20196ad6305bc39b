/* The hooks behind the wrappers: communicator, stream and event tables, iteration detection and
 * the warm-up recording (see state.h for the life cycle). */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_list.h"
#include "defer.h"
#include "guard.h"
#include "hooks.h"
#include "nccl_list.h"
#include "redirect.h"
#include "runtime.h"
#include "state.h"
#include "usbyte/types.h"

/* The detector's min_span (usbyte/iteration.h). */
#define UB_MIN_SPAN 16u

/* Bytes of the device-to-device copy timed in the warm-up (staging's copy_beta). */
#define COPY_PROBE_BYTES (2u << 20)

atomic_int ub_cuda_tracking;

static pthread_mutex_t state_mutex = PTHREAD_MUTEX_INITIALIZER;
static ub_comm *comms;           /* live communicators by handle */
static ub_comm **all_comms;      /* every communicator ever seen, for the report */
static int n_all, cap_all;
static ub_stream *streams;
static ub_event *events;
static _Thread_local int group_depth;
static _Thread_local int agree_copies_pending; /* agreements this thread issued inside its group */
atomic_int ub_agree_unread;                   /* communicators in AGREE (issued, not read yet) */

/* A profiled call made inside a group is launched at the outermost ncclGroupEnd: the event that
 * marks its end goes on its stream after that (recorded right after the call it would precede
 * the launch and measure nothing).  In a group of several collectives it marks the end of all. */
typedef struct deferred_end {
    ub_comm *comm;
    unsigned gen;
    int iteration, call;
    cudaStream_t stream;
} deferred_end;
#define MAX_DEFERRED_ENDS 64
static _Thread_local deferred_end deferred_ends[MAX_DEFERRED_ENDS];
static _Thread_local int n_deferred_ends;
static bool in_child;

void ub_state_lock(void) { pthread_mutex_lock(&state_mutex); }
void ub_state_unlock(void) { pthread_mutex_unlock(&state_mutex); }

const char *ub_comm_state_name(ub_comm_state s)
{
    switch (s) {
#define X(e, name) case UB_COMM_##e: return name;
        UB_COMM_STATE_LIST(X)
#undef X
    }
    return "?";
}

void ub_state_forget_in_child(void) { in_child = true; }

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

void ub_comm_set_state(ub_comm *c, ub_comm_state s, const char *reason)
{
    if (c->state != s)
        ub_debug("communicator %d: %s -> %s%s%s", c->index, ub_comm_state_name(c->state), ub_comm_state_name(s),
                 reason ? ": " : "", reason ? reason : "");
    c->state = s;
    snprintf(c->reason, sizeof c->reason, "%s", reason ? reason : "");
}

ub_stream *ub_state_streams(void) { return streams; }
int ub_thread_group_depth(void) { return group_depth; }

ub_event *ub_event_get(cudaEvent_t event, bool create)
{
    ub_event *e = NULL;
    HASH_FIND_PTR(events, &event, e);
    if (!e && create && (e = calloc(1, sizeof *e))) {
        e->handle = event;
        HASH_ADD_PTR(events, handle, e);
    }
    return e;
}

static ub_comm *comm_get(ncclComm_t handle, bool create)
{
    ub_comm *c = NULL;
    HASH_FIND_PTR(comms, &handle, c);
    if (c || !create)
        return c;
    c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    if (n_all == cap_all) {
        int cap = cap_all ? 2 * cap_all : 8;
        ub_comm **p = realloc(all_comms, (size_t)cap * sizeof *p);
        if (!p) {
            free(c);
            return NULL;
        }
        all_comms = p;
        cap_all = cap;
    }
    all_comms[n_all] = c;
    c->index = n_all++;
    c->handle = handle;
    c->rank = c->nranks = -1;
    c->cur_iter = c->cur_call = -1;
    ub_comm_report_init(&c->report);
    c->min_period = 0;
    ub_iterdet_config dc = {.min_span = UB_MIN_SPAN};
    c->det = ub_iterdet_new(&dc);
    c->det_full = ub_iterdet_new(&dc);
    c->state = UB_COMM_DETECT;
    if (!c->det)
        ub_comm_set_state(c, UB_COMM_DISABLED, "out of memory");
    ub_inside++;
    if (ub_nccl.CommUserRank)
        ub_nccl.CommUserRank(handle, &c->rank);
    if (ub_nccl.CommCount)
        ub_nccl.CommCount(handle, &c->nranks);
    ub_inside--;
    if (atomic_load(&ub_rank) < 0 && c->rank >= 0)
        atomic_store(&ub_rank, c->rank);
    if (atomic_load(&ub_world) < 0 && c->nranks > 0)
        atomic_store(&ub_world, c->nranks);
    HASH_ADD_PTR(comms, handle, c);
    return c;
}

void ub_comm_created(ncclComm_t *out, int n, const ncclConfig_t *config, ncclResult_t r)
{
    if ((r != ncclSuccess && r != ncclInProgress) || !out)
        return;
    bool nonblocking = config && config->blocking == 0;
    ub_state_lock();
    for (int i = 0; i < n; i++) {
        if (!out[i])
            continue;
        ub_comm *old = comm_get(out[i], false);
        if (old) /* a handle reused after destroy without our seeing it */
            HASH_DEL(comms, old);
        if (nonblocking) {
            /* Calls on it return before they are enqueued: nothing here may be measured. */
            ub_comm *c = calloc(1, sizeof *c);
            if (c) {
                c->handle = out[i];
                c->nonblocking = true;
                c->state = UB_COMM_DISABLED;
                c->index = -1;
                snprintf(c->reason, sizeof c->reason, "nonblocking communicator");
                HASH_ADD_PTR(comms, handle, c); /* never reported: no rank known */
            }
        } else if (r == ncclSuccess) {
            comm_get(out[i], true);
        }
    }
    ub_state_unlock();
}

static void file_ready(ub_comm *c, ub_stream *st);

static void forget_event(ub_event *e)
{
    HASH_DEL(events, e);
    if (e->companion) {
        ub_inside++;
        ub_cuda.cudaEventDestroy(e->companion);
        ub_inside--;
    }
    free(e);
}

static void forget_comm_refs(ub_comm *c)
{
    ub_stream *s, *ts;
    HASH_ITER(hh, streams, s, ts) if (s->comm == c) {
        file_ready(c, s);
        s->ready_ev = NULL;
        if (s->sch.comm)
            continue; /* schedule mode still redirects its records */
        HASH_DEL(streams, s);
        free(s);
    }
    ub_event *e, *te;
    HASH_ITER(hh, events, e, te) if (e->comm == c || (atomic_load(&ub_cuda_tracking) == 0 && !e->sched_comm))
        forget_event(e);
}

void ub_comm_stop_watching(ub_comm *c)
{
    if (c->cupti_held) {
        ub_cupti_release();
        c->cupti_held = false;
    }
    if (c->watching) {
        atomic_fetch_sub(&ub_cuda_tracking, 1);
        c->watching = false;
    }
    forget_comm_refs(c);
}

void ub_comm_stop_profiling(ub_comm *c)
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

void ub_comm_ending(ncclComm_t handle, int id)
{
    /* Abort (a watchdog after a peer died) never waits for device work: the agreement is not
     * read and nothing is freed that could synchronise behind collectives that never end. */
    bool abort = id == UB_NCCL_CommAbort || id == UB_NCCL_CommRevoke;
    ub_state_lock();
    ub_comm *c = comm_get(handle, false);
    if (c) {
        atomic_store(&c->ending, true);
        HASH_DEL(comms, c);
        if (c->index < 0) {
            free(c);
        } else {
            if (c->state == UB_COMM_AGREE) {
                /* The last chance to read the agreement: every rank issued it before this point
                 * and NCCL's destroy waits for the communicator's work anyway. */
                if (!abort && c->agree_copy_pending)
                    ub_comm_agree_copy_back(c);
                if (!abort)
                    ub_comm_agree_read(c, UB_AGREE_WAIT_OR_GIVE_UP);
                if (c->state == UB_COMM_AGREE) {
                    ub_comm_set_state(c, UB_COMM_PASS_THROUGH, abort ? "aborted before the agreement was read"
                                                                   : "destroyed before the agreement could be read");
                    atomic_fetch_sub(&ub_agree_unread, 1);
                }
            }
            if (c->state == UB_COMM_PROFILE || c->state == UB_COMM_DETECT)
                ub_comm_set_state(c, UB_COMM_DISABLED, "destroyed before the warm-up ended");
            ub_sched_end(c, abort);
            if (!c->issuing_agreement) /* else the issuing thread releases them when it sees `ending` */
                ub_comm_stop_profiling(c);
            if (!abort) {
                ub_inside++;
                if (c->agree_done)
                    ub_cuda.cudaEventDestroy(c->agree_done);
                if (c->agree_dev)
                    ub_cuda.cudaFree(c->agree_dev);
                if (c->copy_buf)
                    ub_cuda.cudaFree(c->copy_buf);
                if (c->agree_host)
                    ub_cuda.cudaFreeHost(c->agree_host);
                ub_inside--;
            }
            c->agree_done = NULL;
            c->agree_dev = NULL;
            c->agree_host = NULL;
            c->copy_buf = NULL;
            ub_iterdet_free(c->det);
            ub_iterdet_free(c->det_full);
            c->det = NULL;
            c->det_full = NULL;
            c->handle = NULL; /* kept in all_comms for the report */
        }
    }
    ub_state_unlock();
}

void ub_group_start(void) { group_depth++; }
void ub_group_end(void)
{
    if (group_depth > 0)
        group_depth--;
}

/* After the real ncclGroupEnd: the outermost one launched the agreement collectives this thread
 * issued inside the group, so their copy back may now follow them on the private stream. */
void ub_group_ended(void)
{
    if (group_depth > 0 || in_child ||
        (agree_copies_pending == 0 && n_deferred_ends == 0 && atomic_load(&ub_agree_unread) == 0))
        return;
    ub_state_lock();
    for (int i = 0; i < n_deferred_ends; i++) {
        deferred_end *de = &deferred_ends[i];
        ub_comm *dc = de->comm;
        if (dc->state != UB_COMM_PROFILE || dc->local_failure[0] || dc->profile_gen != de->gen)
            continue;
        ub_rec_call *rc = ub_record_at(&dc->rec, de->iteration, de->call);
        if (rc)
            ub_timing_mark(&dc->tm, de->stream, &rc->end, 1, 0, NULL);
    }
    n_deferred_ends = 0;
    unsigned long self = (unsigned long)pthread_self();
    ub_comm *c, *tmp;
    HASH_ITER(hh, comms, c, tmp) {
        if (c->agree_copy_pending && c->agree_thread == self)
            ub_comm_agree_copy_back(c);
        /* Out of every group now: a rank that issues all its calls inside groups reads here. */
        if (c->state == UB_COMM_AGREE && c->issuer == self)
            ub_comm_agree_read(c, UB_AGREE_POLL);
    }
    agree_copies_pending = 0;
    ub_state_unlock();
}

bool ub_thread_in_group(void) { return group_depth > 0; }

void ub_group_split_begin(int depth)
{
    for (int i = 0; i < depth; i++)
        if (UB_REAL(ub_nccl.GroupEnd()) != ncclSuccess) {
            ub_error("ncclGroupEnd failed while usbyte launched the application's open group early: aborting (the "
                     "other ranks would wait for this one forever)");
            abort();
        }
}

void ub_group_split_end(int depth)
{
    for (int i = 0; i < depth; i++)
        if (UB_REAL(ub_nccl.GroupStart()) != ncclSuccess) {
            ub_error("ncclGroupStart failed while usbyte reopened the application's group: aborting");
            abort();
        }
}
void ub_thread_agree_in_group(void) { agree_copies_pending++; }

/* ---- warm-up ---- */

/* Staging's cost: one device-to-device copy timed on the private stream (its seconds per byte,
 * overhead included, so a staged block is never under-priced).  Without the buffer the cost is
 * unknown (0, like the profiles without copy_beta). */
static void time_staging_copy(ub_comm *c)
{
    if (!c->copy_buf && UB_REAL(ub_cuda.cudaMalloc(&c->copy_buf, 2 * (size_t)COPY_PROBE_BYTES)) != cudaSuccess) {
        c->copy_buf = NULL;
        return;
    }
    /* A first touch would time the allocation's page faults (the emulator's) or lazy mapping. */
    if (UB_REAL(ub_cuda.cudaMemsetAsync(c->copy_buf, 0, 2 * (size_t)COPY_PROBE_BYTES, c->tm.agree)) != cudaSuccess)
        return;
    ub_timing_mark(&c->tm, c->tm.agree, &c->copy_t0, 1, 0, NULL);
    if (UB_REAL(ub_cuda.cudaMemcpyAsync((char *)c->copy_buf + COPY_PROBE_BYTES, c->copy_buf, COPY_PROBE_BYTES,
                                        cudaMemcpyDeviceToDevice, c->tm.agree)) == cudaSuccess)
        ub_timing_mark(&c->tm, c->tm.agree, &c->copy_t1, 1, 0, NULL);
}

double ub_comm_copy_beta(const ub_comm *c)
{
    double dt = c->copy_t1 - c->copy_t0;
    return isfinite(dt) && dt > 0 ? dt / COPY_PROBE_BYTES : 0.0;
}

/* Failures here are rank-local, so they must not change what this rank issues: the
 * communicator still goes to PROFILE and takes part in the agreement at agree_at, with
 * local_failure set (every rank then stays in pass-through, saying why). */
static void start_profiling(ub_comm *c, uint64_t first)
{
    c->profile_start = first;
    c->agree_at = first + (uint64_t)ub_cfg.warmup * c->period;
    c->n_ar = 0;
    c->other_calls = 0;
    c->cur_iter = c->cur_call = -1;
    c->end_records = false;
    c->stream_host_waits = false;
    c->consumers_stream = c->consumers_host = 0;
    c->stream_ordered = 0;
    c->stream_ordered_example[0] = '\0';
    c->local_failure[0] = '\0';
    c->consumers_host_other = 0;
    c->profile_gen++;
    memset(&c->seq, 0, sizeof c->seq);
    bool recorder = ub_record_init(&c->rec, ub_cfg.warmup, (int)c->period) == 0;
    c->pos_call = calloc(c->period, sizeof *c->pos_call);
    c->pos_sig = calloc(c->period, sizeof *c->pos_sig);
    c->pos_buf = calloc(2 * (size_t)c->period, sizeof *c->pos_buf);
    c->has_end_event = calloc(c->period, sizeof *c->has_end_event);
    c->period_refuted = c->refuted = false;
    c->nccl_stream = NULL;
    c->multi_stream = c->legacy_stream = c->p2p = false;
    c->copy_t0 = c->copy_t1 = NAN;
    if (!recorder || !c->pos_call || !c->pos_sig || !c->pos_buf || !c->has_end_event)
        snprintf(c->local_failure, sizeof c->local_failure, "cannot allocate the warm-up recorder");
    else if (ub_timing_start(&c->tm, &c->ending) != 0)
        snprintf(c->local_failure, sizeof c->local_failure, "cannot create the timing events or private streams");
    else
        time_staging_copy(c);
    c->report.cupti = false;
    if (ub_cfg.cupti) {
        c->cupti_held = ub_cupti_acquire(c->report.cupti_detail, sizeof c->report.cupti_detail);
        c->report.cupti = c->cupti_held;
    } else {
        snprintf(c->report.cupti_detail, sizeof c->report.cupti_detail, "disabled by USBYTE_CUPTI=0");
    }
    ub_comm_set_state(c, UB_COMM_PROFILE, NULL);
    c->watching = true;
    atomic_fetch_add(&ub_cuda_tracking, 1);
    if (c->local_failure[0])
        ub_warn("communicator %d: %s: this rank takes part in the agreement without numbers, and every "
                "rank will stay in pass-through", c->index, c->local_failure);
}

void ub_comm_redetect(ub_comm *c, const char *why)
{
    ub_iterdet_free(c->det);
    ub_iterdet_config dc = {.min_span = UB_MIN_SPAN, .min_period = c->min_period};
    c->det = ub_iterdet_new(&dc); /* det_full keeps its evidence: it spans the restarts */
    c->deviations = 0;
    c->report.have_plans = false;
    if (!c->det) {
        ub_comm_set_state(c, UB_COMM_DISABLED, "out of memory");
        return;
    }
    ub_comm_set_state(c, UB_COMM_DETECT, why);
}

static void restart_detection(ub_comm *c, const char *why)
{
    ub_comm_stop_profiling(c);
    c->deviations++;
    if (c->deviations > 8) {
        ub_comm_set_state(c, UB_COMM_PASS_THROUGH, "the call sequence keeps changing during the warm-up");
        return;
    }
    ub_debug("communicator %d: %s; looking for the period again", c->index, why);
    ub_comm_set_state(c, UB_COMM_DETECT, NULL);
}

ub_stream *ub_stream_get(cudaStream_t s, ub_comm *c)
{
    ub_stream *st = NULL;
    HASH_FIND_PTR(streams, &s, st);
    if (st || !c)
        return st;
    st = calloc(1, sizeof *st);
    if (!st)
        return NULL;
    st->handle = s;
    st->comm = c;
    HASH_ADD_PTR(streams, handle, st);
    return st;
}

/* Hands the stream's pending upstream timing event to the timing list, with the ready slots of
 * the calls that followed the wait (none: the time is read and dropped). */
static void file_ready(ub_comm *c, ub_stream *st)
{
    if (!st || !st->ready_ev)
        return;
    ub_rec_call *first = st->ready_n ? ub_record_at(&c->rec, st->ready_it, st->ready_first) : NULL;
    ub_timing_file(&c->tm, st->ready_ev, first ? &first->ready : NULL, first ? st->ready_n : 0, sizeof *first, NULL);
    st->ready_ev = NULL;
    st->ready_n = 0;
}

void ub_comm_file_ready(ub_comm *c)
{
    ub_stream *st, *tmp;
    HASH_ITER(hh, streams, st, tmp) if (st->comm == c)
        file_ready(c, st);
}

/* Records one call of a profiled iteration; returns its allreduce index or -1. */
static int record_call(ub_comm *c, const ub_coll_desc *d, uint64_t sig, uint64_t it, uint32_t pos)
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
             * (a PreMulSum op handle): a flush point for the next issue, not a profile call. */
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
    if (!c->nccl_stream)
        c->nccl_stream = d->stream;
    else if (c->nccl_stream != d->stream)
        c->multi_stream = true;
    if (d->stream == NULL || d->stream == cudaStreamLegacy || d->stream == cudaStreamPerThread)
        c->legacy_stream = true;
    ub_rec_call *rc = ub_record_at(&c->rec, (int)it, k);
    if (st->ready_ev && st->ready_n > 0 && !(st->ready_it == (int)it && st->ready_first + st->ready_n == k))
        file_ready(c, st); /* that wait belonged to earlier calls only */
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

/* The kind in the portable signature: entry points that NCCL treats as one operation are one
 * kind (ncclBcast(buff, ...) is ncclBroadcast(buff, buff, ...)), so that ranks calling either
 * see the same call sequence. */
static int portable_kind(int id)
{
    return id == UB_NCCL_Bcast ? UB_NCCL_Broadcast : id;
}

/* The op in the portable signature: a handle from ncclRedOpCreatePreMulSum is a rank-local value
 * (the lowest free slot of this rank's communicator), so every user-created op is one value. */
static int portable_op(int op)
{
    return op >= (int)ncclNumOps ? (int)ncclNumOps : op;
}

/* Schedule mode, at call B = agree_at + period on every rank (docs/runtime.md): the agreement's
 * result is needed now.  Outside a group, or inside one when the agreement was launched by an
 * earlier ncclGroupEnd, blocking on it cannot deadlock on this communicator; when this thread's
 * open group still holds it, the group is launched first (ended and reopened). */
static void read_agreement_at_switch(ub_comm *c)
{
    if (c->state != UB_COMM_AGREE)
        return;
    int depth = group_depth;
    bool split = depth > 0 && c->agree_copy_pending && c->agree_thread == (unsigned long)pthread_self();
    if (split) {
        ub_group_split_begin(depth);
        ub_comm_agree_copy_back(c);
        if (agree_copies_pending > 0)
            agree_copies_pending--;
    }
    ub_comm_agree_read(c, UB_AGREE_WAIT);
    if (split)
        ub_group_split_end(depth);
}

bool ub_coll_before(const ub_coll_desc *d, ub_coll_token *t)
{
    t->comm = NULL;
    t->call = -1;
    if (in_child)
        return false;
    ub_state_lock();
    ub_comm *c = comm_get(d->comm, true);
    if (!c || c->state == UB_COMM_DISABLED || c->state == UB_COMM_PASS_THROUGH) {
        ub_state_unlock();
        return false;
    }
    c->issuer = (unsigned long)pthread_self();
    ub_call_sig cs = {.kind = portable_kind(d->id), .count = d->count, .dtype = d->dtype, .op = portable_op(d->op), .peer = d->root};
    uint64_t sig = ub_sig_portable(&cs);
    if (c->state == UB_COMM_SCHEDULE) {
        bool held = ub_sched_call(c, d, sig);
        ub_state_unlock();
        return held;
    }
    ub_iter_result res;
    ub_iterdet_feed(c->det, sig, &res);
    if (c->det_full) { /* every call before the plan runs (SCHEDULE returned above) */
        /* Rank-local: only its period goes into the agreement, as evidence. */
        ub_iter_result full;
        ub_call_sig fs = cs;
        fs.sendbuf = (uintptr_t)d->send;
        fs.recvbuf = (uintptr_t)d->recv;
        ub_iterdet_feed(c->det_full, ub_sig_full(&fs), &full);
    }
    if (res.event == UB_ITER_IN_PHASE || res.event == UB_ITER_LOCKED)
        if (res.position == 0 && c->state != UB_COMM_DETECT)
            c->iterations_observed++;

    if (c->state == UB_COMM_PROFILE && res.event != UB_ITER_IN_PHASE) {
        restart_detection(c, res.event == UB_ITER_DEVIATION ? "the call sequence deviated" : "the lock was lost");
        if (c->state != UB_COMM_DETECT) {
            ub_state_unlock();
            return false;
        }
    }
    if (c->state == UB_COMM_DETECT) {
        if (res.event == UB_ITER_LOCKED || res.event == UB_ITER_IN_PHASE) {
            c->period = res.period;
            /* Profile whole iterations only: start at the next iteration boundary. */
            uint64_t next = res.index + (res.period - res.position);
            c->iterations_observed = 0;
            start_profiling(c, next);
            {
                ub_stream_get(d->stream, c); /* its next upstream waits are the first profiled call's */
                ub_debug("communicator %d: period %u calls found at call %llu; profiling %d iterations from call %llu",
                         c->index, res.period, (unsigned long long)res.index, ub_cfg.warmup,
                         (unsigned long long)next);
            }
        } else if (res.event == UB_ITER_GAVE_UP) {
            char why[256];
            snprintf(why, sizeof why, "no repeating call sequence found (%s)", ub_iterdet_gave_up_reason(c->det));
            ub_comm_set_state(c, UB_COMM_PASS_THROUGH, why);
        }
        ub_state_unlock();
        return false;
    }
    if (c->state == UB_COMM_AGREE || c->state == UB_COMM_PLANNED) {
        if (res.index == c->agree_at + c->period && (ub_cfg.mode == UB_MODE_SCHEDULE || c->state == UB_COMM_AGREE)) {
            read_agreement_at_switch(c);
            if (c->state == UB_COMM_PLANNED && c->refuted) {
                /* Agreed: the period is refuted by some rank's buffers.  Every rank restarts at
                 * this same call, looking for a longer period: the one every rank's full
                 * signatures repeat with, when they all found the same multiple, else twice it. */
                char why[200];
                uint32_t next = c->addr_period > c->period && c->addr_period % c->period == 0 ? c->addr_period
                                                                                              : 2 * c->period;
                snprintf(why, sizeof why, "a period of %u calls is refuted by the buffer addresses", c->period);
                if (next > UB_ITER_MAX_PERIOD) {
                    ub_comm_set_state(c, UB_COMM_PASS_THROUGH, why);
                } else {
                    c->min_period = next;
                    ub_debug("communicator %d: %s; looking for a period of at least %u calls", c->index, why, next);
                    ub_comm_redetect(c, why);
                }
            } else if (c->state == UB_COMM_PLANNED && c->sched.ready) {
                ub_sched_begin(c);
                bool held = ub_sched_call(c, d, sig);
                ub_state_unlock();
                return held;
            }
        } else if (c->state == UB_COMM_AGREE && group_depth == 0) {
            /* Reading the result early changes nothing that is issued: the plan takes effect
             * at call agree_at + period, read or not. */
            ub_comm_agree_read(c, UB_AGREE_POLL);
        }
        ub_state_unlock();
        return false;
    }
    if (c->state == UB_COMM_PROFILE) {
        if (!c->local_failure[0])
            ub_timing_poll(&c->tm, false);
        if (res.index >= c->agree_at) {
            /* The first call after the warm-up: the same call index on every rank, inside a
             * group or not (the group structure is rank-local). */
            if (!c->local_failure[0])
                ub_timing_now(&c->tm, &c->rec.end_clock, 1, 0);
            ub_comm_agree_issue(c);
        } else if (res.index < c->profile_start) {
            /* Before the first profiled iteration: know the stream (so that the next waits on it
             * count), and let no upstream wait of an unrecorded call leak into a recorded one. */
            ub_stream *st = c->local_failure[0] ? NULL : ub_stream_get(d->stream, c);
            if (st && st->comm == c)
                file_ready(c, st);
        } else if (res.index < c->agree_at) {
            uint64_t it = (res.index - c->profile_start) / c->period;
            uint32_t pos = (uint32_t)((res.index - c->profile_start) % c->period);
            int k = record_call(c, d, sig, it, pos);
            if (k >= 0) {
                t->comm = c;
                t->call = k;
                t->iteration = it;
            }
        }
    }
    ub_state_unlock();
    return false;
}

void ub_coll_after(const ub_coll_desc *d, const ub_coll_token *t, ncclResult_t r)
{
    (void)r;
    if (!t->comm)
        return;
    ub_state_lock();
    ub_comm *c = t->comm;
    if (c->state == UB_COMM_PROFILE && group_depth > 0) {
        if (n_deferred_ends < MAX_DEFERRED_ENDS) /* beyond: the call's duration stays unknown */
            deferred_ends[n_deferred_ends++] =
                (deferred_end){c, c->profile_gen, (int)t->iteration, t->call, d->stream};
    } else if (c->state == UB_COMM_PROFILE) {
        ub_rec_call *rc = ub_record_at(&c->rec, (int)t->iteration, t->call);
        if (rc)
            ub_timing_mark(&c->tm, d->stream, &rc->end, 1, 0, NULL);
    }
    ub_state_unlock();
}

/* ---- CUDA hooks (reached while ub_cuda_tracking or ub_sched_live is nonzero) ---- */

/* The warm-up's hooks: only while some communicator profiles. */
static bool watching(void) { return !in_child && atomic_load(&ub_cuda_tracking) != 0; }
static bool scheduling(void) { return !in_child && atomic_load(&ub_sched_live) != 0; }

bool ub_cuda_event_record_redirect(cudaEvent_t event, cudaStream_t stream, cudaError_t *r)
{
    return scheduling() && ub_redirect_record(event, stream, r);
}

cudaError_t ub_cuda_stream_host_waited(cudaStream_t stream, bool poll, cudaError_t r)
{
    return scheduling() ? ub_redirect_stream_waited(stream, poll, r) : r;
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
    unsigned long long work = atomic_load(&ub_work_count);
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

void ub_cuda_event_recorded(cudaEvent_t event, cudaStream_t stream)
{
    if (!watching())
        return;
    ub_state_lock();
    ub_stream *st = ub_stream_get(stream, NULL);
    ub_event *e = NULL;
    HASH_FIND_PTR(events, &event, e);
    if (!e && (e = calloc(1, sizeof *e))) {
        e->handle = event;
        HASH_ADD_PTR(events, handle, e);
    }
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
        ub_inside++;
        if (!e->companion && ub_cuda.cudaEventCreateWithFlags(&e->companion, cudaEventDefault) != cudaSuccess)
            e->companion = NULL;
        if (e->companion && ub_cuda.cudaEventRecord(e->companion, stream) != cudaSuccess) {
            ub_cuda.cudaEventDestroy(e->companion);
            e->companion = NULL;
        }
        ub_inside--;
    }
    ub_state_unlock();
}

void ub_cuda_stream_wait(cudaStream_t stream, cudaEvent_t event)
{
    if (!watching())
        return;
    ub_state_lock();
    ub_event *e = NULL;
    HASH_FIND_PTR(events, &event, e);
    ub_stream *st = ub_stream_get(stream, NULL);
    if (e && e->comm && profiling(e->comm)) {
        if (!(st && st->comm == e->comm)) /* a wait of S on its own event is no consumer */
            need(e->comm, e->iteration, e->call, stream, false);
    } else if (st && profiling(st->comm)) {
        /* The NCCL stream waits on a producer: the gradients that follow are ready when that
         * event is: exactly (the companion of its record) or, for an event recorded before we
         * watched, when a probe stream waiting on it gets through. */
        ub_comm *c = st->comm;
        file_ready(c, st);
        if (e && e->companion) {
            st->ready_ev = e->companion;
            e->companion = NULL;
        } else {
            st->ready_ev = ub_timing_probe(&c->tm, event);
        }
    }
    ub_state_unlock();
}

void ub_cuda_event_host_wait(cudaEvent_t event, bool poll)
{
    if (scheduling())
        ub_redirect_event_wait(event, poll);
    if (!watching())
        return;
    ub_state_lock();
    ub_event *e = NULL;
    HASH_FIND_PTR(events, &event, e);
    (void)poll; /* a poll from the issuing thread is a need like a synchronisation */
    if (e && profiling(e->comm) && !other_thread(e->comm))
        need(e->comm, e->iteration, e->call, NULL, false);
    ub_state_unlock();
}

void ub_cuda_stream_host_wait(cudaStream_t stream, bool poll)
{
    if (scheduling())
        ub_redirect_stream_wait(stream, poll);
    if (!watching())
        return;
    ub_state_lock();
    ub_stream *st = ub_stream_get(stream, NULL);
    (void)poll;
    if (st && profiling(st->comm))
        st->comm->stream_host_waits = true;
    if (st && profiling(st->comm) && !other_thread(st->comm))
        need(st->comm, st->comm->cur_iter, st->comm->cur_call, NULL, true);
    ub_state_unlock();
}

void ub_cuda_device_wait(void)
{
    if (scheduling())
        ub_redirect_device_wait();
    if (!watching())
        return;
    ub_state_lock();
    ub_comm *c, *tmp;
    HASH_ITER(hh, comms, c, tmp) if (profiling(c) && !other_thread(c))
        need(c, c->cur_iter, c->cur_call, NULL, true);
    ub_state_unlock();
}

void ub_cuda_stream_destroyed(cudaStream_t stream)
{
    if (in_child)
        return;
    ub_state_lock();
    ub_stream *st = ub_stream_get(stream, NULL);
    if (st) {
        if (st->comm)
            file_ready(st->comm, st);
        /* Deferred calls on it still complete: their blocks wait on readiness events recorded
         * on it already, and its completion streams stay with the communicator. */
        ub_redirect_stream_gone(st);
        HASH_DEL(streams, st);
        free(st);
    }
    ub_state_unlock();
}

void ub_cuda_event_destroyed(cudaEvent_t event)
{
    if (in_child)
        return;
    ub_state_lock();
    ub_event *e = NULL;
    HASH_FIND_PTR(events, &event, e);
    if (e)
        forget_event(e);
    ub_state_unlock();
}

void ub_state_stream_work(cudaStream_t stream, const char *what)
{
    if (in_child)
        return;
    ub_state_lock();
    ub_stream *st = ub_stream_get(stream, NULL);
    if (st && profiling(st->comm)) {
        st->comm->stream_ordered += 1;
        if (!st->comm->stream_ordered_example[0])
            snprintf(st->comm->stream_ordered_example, sizeof st->comm->stream_ordered_example, "%s", what);
    }
    ub_state_unlock();
}

/* ---- reports ---- */

ub_comm **ub_state_all_comms(int *n)
{
    *n = n_all;
    return all_comms;
}

static bool exiting;
bool ub_state_exiting(void) { return exiting; }

void ub_state_write_reports_at_exit(void)
{
    if (in_child)
        return;
    exiting = true;
    /* trylock: a thread may have died holding it (exit from a signal handler); a report from
     * slightly inconsistent state beats a hang at exit. */
    bool locked = pthread_mutex_trylock(&state_mutex) == 0;
    for (int i = 0; i < n_all; i++)
        if (all_comms[i]->state == UB_COMM_SCHEDULE && all_comms[i]->handle)
            ub_sched_summary(all_comms[i]);
    ub_state_write_reports(false);
    if (locked)
        ub_state_unlock();
}
