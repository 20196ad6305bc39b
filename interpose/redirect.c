/* Pending events, their materialization, and host waits on deferred work (see redirect.h). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "capture.h"
#include "cuda_error.h"
#include "cuda_list.h"
#include "device.h"
#include "globals.h"
#include "guard.h"
#include "log.h"
#include "nccl_list.h"
#include "redirect.h"
#include "tables.h"
#include "usbyte/clock.h"

atomic_int ub_sched_live;
atomic_int ub_events_pending;

/* The streams that carried deferred calls, for the wrappers' lock-free check; past the table's
 * size every stream takes the slow path. */
#define LISTED_MAX 32
static _Atomic(cudaStream_t) listed[LISTED_MAX];
static atomic_int n_listed;
static atomic_bool listed_overflow;

/* Threads waiting (lock held) for an event or a stream: materializations wake them. */
static int n_waiters;

bool ub_sched_stream_listed(cudaStream_t s)
{
    if (atomic_load_explicit(&listed_overflow, memory_order_relaxed))
        return true;
    int n = atomic_load_explicit(&n_listed, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (atomic_load_explicit(&listed[i], memory_order_relaxed) == s)
            return true;
    return false;
}

/* Lock held (the only writer). */
static void list_stream(cudaStream_t s)
{
    if (ub_sched_stream_listed(s))
        return;
    int n = atomic_load(&n_listed);
    for (int i = 0; i < n; i++)
        if (atomic_load(&listed[i]) == NULL) {
            atomic_store(&listed[i], s);
            return;
        }
    if (n == LISTED_MAX) {
        atomic_store(&listed_overflow, true);
        return;
    }
    atomic_store(&listed[n], s);
    atomic_store_explicit(&n_listed, n + 1, memory_order_release);
}

static void unlist_stream(cudaStream_t s)
{
    int n = atomic_load(&n_listed);
    for (int i = 0; i < n; i++)
        if (atomic_load(&listed[i]) == s)
            atomic_store(&listed[i], NULL);
}

static bool on_issuing_thread(const ub_comm *c) { return c->issuer == (unsigned long)pthread_self(); }

/* ---- the pending list of a communicator, ordered by block value ---- */

static void pending_insert(ub_comm *c, ub_event *e)
{
    ub_sched_rt *s = &c->sched;
    ub_event *after = s->pending_tail;
    while (after && after->sched_value > e->sched_value)
        after = after->pprev;
    e->pprev = after;
    e->pnext = after ? after->pnext : s->pending;
    if (e->pnext)
        e->pnext->pprev = e;
    else
        s->pending_tail = e;
    if (after)
        after->pnext = e;
    else
        s->pending = e;
    s->n_pending++;
    atomic_fetch_add(&ub_events_pending, 1);
}

/* Progress events: one per pending event whose stream had other work; reused once the
 * completion stream's wait on it is enqueued (a wait binds to the record current at the call). */
static cudaError_t spare_take(ub_comm *c, cudaEvent_t *out)
{
    ub_sched_rt *s = &c->sched;
    if (s->n_spare > 0) {
        *out = s->spare[--s->n_spare];
        return cudaSuccess;
    }
    int previous = ub_device_enter(c->device);
    cudaError_t e = UB_CUDA(ub_cuda.cudaEventCreateWithFlags(out, cudaEventDisableTiming));
    ub_device_leave(previous);
    return e;
}

static void spare_give(ub_sched_rt *s, cudaEvent_t ev)
{
    if (!ev)
        return;
    if (s->n_spare == s->cap_spare) {
        int cap = s->cap_spare ? 2 * s->cap_spare : 8;
        cudaEvent_t *p = realloc(s->spare, (size_t)cap * sizeof *p);
        if (!p) {
            UB_CUDA(ub_cuda.cudaEventDestroy(ev));
            return;
        }
        s->spare = p;
        s->cap_spare = cap;
    }
    s->spare[s->n_spare++] = ev;
}

/* Lock held: e is no longer pending (materialized, superseded, destroyed). */
static void pending_remove(ub_comm *c, ub_event *e)
{
    ub_sched_rt *s = &c->sched;
    if (e->pprev)
        e->pprev->pnext = e->pnext;
    else
        s->pending = e->pnext;
    if (e->pnext)
        e->pnext->pprev = e->pprev;
    else
        s->pending_tail = e->pprev;
    e->pnext = e->pprev = NULL;
    s->n_pending--;
    atomic_fetch_sub(&ub_events_pending, 1);
    spare_give(s, e->progress);
    e->progress = NULL;
    e->pending = false;
    e->sched_comm = NULL;
}

/* The block of value v, within the current iteration's numbering, for diagnostics (-1: none). */
static int block_of(const ub_sched_rt *s, uint64_t v)
{
    return v > s->base && v - s->base <= (uint64_t)s->sp.n_blocks ? (int)(v - s->base - 1) : -1;
}

/* A CUDA call that would complete an application's event behind its deferred calls failed: why
 * says which; the caller fails the communicator (defer.c), whose end releases the pending events
 * as at an abort.  Recorded anywhere else, the event would complete before the data it stands
 * for without a word; this way the application hears of it from its call. */
static cudaError_t completion_failed(const char *what, cudaError_t e, char *why, size_t len)
{
    snprintf(why, len, "%s failed (%s) while completing an event of the application", what, ub_cuda_error_text(e));
    return e;
}

/* ---- records ---- */

/* Lock held: block_done recorded on the private stream now (made on first use): it completes
 * once every block issued so far has. */
static cudaError_t mark_private(ub_comm *c)
{
    ub_sched_rt *s = &c->sched;
    cudaError_t e = cudaSuccess;
    if (!s->block_done) {
        int previous = ub_device_enter(c->device);
        e = UB_CUDA(ub_cuda.cudaEventCreateWithFlags(&s->block_done, cudaEventDisableTiming));
        ub_device_leave(previous);
    }
    return e == cudaSuccess ? UB_CUDA(ub_cuda.cudaEventRecord(s->block_done, s->priv)) : e;
}

/* Records ev so that it completes after the private stream's work so far and after `progress`
 * (an event of the application's stream): on the completion stream, which waits for both. */
static cudaError_t record_behind(ub_comm *c, cudaEvent_t ev, cudaEvent_t progress, bool *block_done)
{
    ub_sched_rt *s = &c->sched;
    cudaError_t e = cudaSuccess;
    if (!s->comp) {
        int previous = ub_device_enter(c->device);
        e = UB_CUDA(ub_cuda.cudaStreamCreateWithFlags(&s->comp, cudaStreamNonBlocking));
        ub_device_leave(previous);
    }
    if (e == cudaSuccess && !*block_done) {
        e = mark_private(c);
        *block_done = e == cudaSuccess;
    }
    if (e == cudaSuccess)
        e = UB_CUDA(ub_cuda.cudaStreamWaitEvent(s->comp, progress, 0));
    if (e == cudaSuccess)
        e = UB_CUDA(ub_cuda.cudaStreamWaitEvent(s->comp, s->block_done, 0));
    if (e == cudaSuccess)
        e = UB_CUDA(ub_cuda.cudaEventRecord(ev, s->comp));
    return e;
}

/* e recorded where it completes with its blocks, and no longer pending; on failure it stays
 * pending (why says what failed). */
static cudaError_t materialize(ub_comm *c, ub_event *e, bool *block_done, char *why, size_t len)
{
    ub_sched_rt *s = &c->sched;
    cudaError_t r = e->progress ? record_behind(c, e->handle, e->progress, block_done)
                                : UB_CUDA(ub_cuda.cudaEventRecord(e->handle, s->priv));
    if (r != cudaSuccess)
        return completion_failed("the record of a pending event", r, why, len);
    pending_remove(c, e);
    return cudaSuccess;
}

void ub_redirect_deferred(ub_comm *c, ub_stream *st, int k, uint64_t stream_value, uint64_t call_value)
{
    ub_stream_sched *sc = &st->sch;
    sc->comm = c;
    if (stream_value > sc->need_value)
        sc->need_value = stream_value;
    sc->last_value = call_value;
    sc->last_call = k;
    sc->dirty = false;
    sc->settled = false;
    list_stream(st->handle);
}

cudaError_t ub_redirect_block_issued(ub_comm *c, bool iteration_end, char *why, size_t len)
{
    ub_sched_rt *s = &c->sched;
    bool block_done = false, woke = false;
    cudaError_t failed = cudaSuccess;
    while (s->pending && s->pending->sched_value <= s->issued &&
           (failed = materialize(c, s->pending, &block_done, why, len)) == cudaSuccess)
        woke = true;
    if (iteration_end) {
        cudaError_t e = cudaSuccess;
        if (!s->iter_done) {
            int previous = ub_device_enter(c->device);
            e = UB_CUDA(ub_cuda.cudaEventCreateWithFlags(&s->iter_done, cudaEventDisableTiming));
            ub_device_leave(previous);
        }
        if (e == cudaSuccess)
            e = UB_CUDA(ub_cuda.cudaEventRecord(s->iter_done, s->priv));
        /* Without it the streams' records keep going through the private stream: correct, slower. */
        s->iter_done_value = e == cudaSuccess ? s->issued : 0;
    }
    if (woke && n_waiters > 0)
        ub_state_wake_all();
    return failed;
}

void ub_redirect_end(ub_comm *c, bool release) UB_REQUIRES(ub_state_mutex)
{
    ub_sched_rt *s = &c->sched;
    while (s->pending) {
        ub_event *e = s->pending;
        /* Only after an abort (a destroy flushed first): the blocks it waited for will never run,
         * so it completes with its stream's own work, and nothing waits for a dead peer. */
        if (ub_stream_get(e->sched_stream, NULL))
            UB_CUDA(ub_cuda.cudaEventRecord(e->handle, e->sched_stream));
        pending_remove(c, e);
    }
    for (ub_stream *st = ub_state_streams(); st; st = st->hh.next)
        if (st->sch.comm == c) {
            unlist_stream(st->handle);
            memset(&st->sch, 0, sizeof st->sch);
        }
    if (release) {
        for (int i = 0; i < s->n_spare; i++)
            UB_CUDA(ub_cuda.cudaEventDestroy(s->spare[i]));
        if (s->block_done)
            UB_CUDA(ub_cuda.cudaEventDestroy(s->block_done));
        if (s->iter_done)
            UB_CUDA(ub_cuda.cudaEventDestroy(s->iter_done));
        if (s->comp)
            UB_CUDA(ub_cuda.cudaStreamDestroy(s->comp));
        free(s->spare);
        s->spare = NULL;
        s->n_spare = s->cap_spare = 0;
        s->block_done = s->iter_done = NULL;
        s->comp = NULL;
        s->iter_done_value = 0;
    }
    if (n_waiters > 0)
        ub_state_wake_all();
}

bool ub_redirect_record(cudaEvent_t ev, cudaStream_t s, unsigned flags, cudaError_t *r)
{
    /* An external record inside a graph capture is a node of the graph, not a completion; any
     * record on a capturing stream belongs to the graph (recorded elsewhere, it would not be a
     * captured event, and the graph's waits on it would fail). */
    bool listed_stream = ub_sched_stream_listed(s) && !(flags & cudaEventRecordExternal) && !ub_capture_stream(s);
    if (!listed_stream && atomic_load_explicit(&ub_events_pending, memory_order_relaxed) == 0)
        return false;
    ub_state_lock();
    ub_event *e = ub_event_get(ev, false);
    if (e && e->pending) /* re-recorded, anywhere: the new record replaces the pending one */
        pending_remove(e->sched_comm, e);
    if (!listed_stream) {
        ub_state_unlock();
        return false;
    }
    ub_stream *st = ub_stream_get(s, NULL);
    ub_comm *c = st ? st->sch.comm : NULL;
    if (!c || !c->sched.ready || st->sch.settled) {
        ub_state_unlock();
        return false;
    }
    ub_sched_rt *sr = &c->sched;
    ub_stream_sched *sc = &st->sch;
    uint64_t v = sr->stream_semantics ? sc->need_value : sc->last_value;
    cudaError_t res = cudaSuccess;
    if (v > sr->issued) {
        /* Pending: the block that completes it is not issued yet, so nothing may wait for it. */
        if (!e)
            e = ub_event_get(ev, true);
        if (!e) {
            ub_error("communicator %d: out of memory for the record of an event: it cannot be completed", c->index);
            res = cudaErrorMemoryAllocation;
        } else {
            e->progress = NULL;
            if (sc->dirty && (res = spare_take(c, &e->progress)) == cudaSuccess) {
                res = UB_CUDA(ub_cuda.cudaEventRecord(e->progress, s));
                if (res != cudaSuccess) {
                    spare_give(sr, e->progress);
                    e->progress = NULL;
                }
            }
            if (res == cudaSuccess) {
                e->pending = true;
                e->sched_comm = c;
                e->sched_value = v;
                e->sched_call = sc->last_call;
                e->sched_stream = s;
                e->first_poll = 0;
                e->warned = false;
                pending_insert(c, e);
            }
        }
    } else if (!sc->dirty) {
        /* Everything it covers is on the private stream already, and the stream did nothing
         * since: right behind the private stream's work is exactly its place. */
        res = UB_CUDA(ub_cuda.cudaEventRecord(ev, sr->priv));
    } else if (sr->iter_done && sr->iter_done_value >= v &&
               UB_CUDA(ub_cuda.cudaEventQuery(sr->iter_done)) == cudaSuccess) {
        sc->settled = true; /* the deferred calls are complete: the stream's own order is the truth */
        ub_state_unlock();
        return false;
    } else {
        cudaEvent_t progress = NULL;
        bool block_done = false;
        res = spare_take(c, &progress);
        if (res == cudaSuccess)
            res = UB_CUDA(ub_cuda.cudaEventRecord(progress, s));
        if (res == cudaSuccess)
            res = record_behind(c, ev, progress, &block_done);
        spare_give(sr, progress);
    }
    if (res != cudaSuccess)
        /* Recorded on the stream it would complete before the deferred calls: the error is the truth. */
        ub_error("communicator %d: cannot complete an event recorded on a stream with deferred calls (%s)", c->index,
                 ub_cuda_error_text(res));
    *r = res;
    ub_state_unlock();
    return true;
}

void ub_redirect_stream_work_on(ub_stream *st) UB_REQUIRES(ub_state_mutex)
{
    if (st->sch.comm)
        st->sch.dirty = true;
}

void ub_redirect_stream_work_locked(cudaStream_t s) UB_REQUIRES(ub_state_mutex)
{
    if (!ub_sched_stream_listed(s))
        return;
    ub_stream *st = ub_stream_get(s, NULL);
    if (st)
        ub_redirect_stream_work_on(st);
}

void ub_redirect_stream_work(cudaStream_t s)
{
    if (!ub_sched_stream_listed(s))
        return;
    ub_state_lock();
    ub_redirect_stream_work_locked(s);
    ub_state_unlock();
}

/* ---- consumers ---- */

/* Lock held: the pending record of ev, or NULL. */
static ub_event *pending_event(cudaEvent_t ev) UB_REQUIRES(ub_state_mutex)
{
    ub_event *e = ub_event_get(ev, false);
    return e && e->pending ? e : NULL;
}

bool ub_redirect_event_query(cudaEvent_t ev, cudaError_t *r)
{
    if (atomic_load_explicit(&ub_events_pending, memory_order_relaxed) == 0)
        return false;
    ub_state_lock();
    ub_event *e = pending_event(ev);
    if (!e) {
        ub_state_unlock();
        return false;
    }
    /* True: the work it covers is not done.  A query never flushes (a caching allocator polls
     * its events whenever it likes: no rank-consistent point), and never stops the job; a loop
     * of the issuing thread that can only end with its own next call gets one line. */
    ub_comm *c = e->sched_comm;
    if (on_issuing_thread(c) && !e->warned) {
        double t = ub_monotonic_s();
        if (e->first_poll == 0) {
            e->first_poll = t;
        } else if (t - e->first_poll > ub_cfg.hang_s) {
            e->warned = true;
            ub_warn("communicator %d: the thread that issues its calls has polled an event for %.0f s (USBYTE_HANG_S); "
                    "the event waits for allreduce %d of the iteration, whose block %d of the plan goes out only when "
                    "this thread makes a later call. If the program waits for the event before that call, set "
                    "USBYTE_POLICY=wfbp or USBYTE_MODE=observe",
                    c->index, t - e->first_poll, e->sched_call, block_of(&c->sched, e->sched_value));
        }
    }
    *r = cudaErrorNotReady;
    ub_state_unlock();
    return true;
}

bool ub_redirect_elapsed(cudaEvent_t a, cudaEvent_t b, cudaError_t *r)
{
    if (atomic_load_explicit(&ub_events_pending, memory_order_relaxed) == 0)
        return false;
    ub_state_lock();
    bool pending = pending_event(a) || pending_event(b);
    ub_state_unlock();
    if (pending)
        *r = cudaErrorNotReady;
    return pending;
}

ub_comm *ub_redirect_pending_comm(cudaEvent_t ev, int *call) UB_REQUIRES(ub_state_mutex)
{
    if (atomic_load_explicit(&ub_events_pending, memory_order_relaxed) == 0)
        return NULL;
    ub_event *e = pending_event(ev);
    if (e && call)
        *call = e->sched_call;
    return e ? e->sched_comm : NULL;
}

void ub_redirect_wait_submitted(cudaEvent_t ev, cudaStream_t waiter) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    ub_event *e = pending_event(ev);
    if (!e)
        return;
    ub_comm *c = e->sched_comm;
    ub_sched_rt *s = &c->sched;
    /* Both recorded after submitted work (the law): the stream's work so far, whose part before
     * the event's record is what it covers besides deferred calls, and the blocks issued. */
    cudaEvent_t progress = NULL;
    cudaError_t r = mark_private(c);
    if (r == cudaSuccess && ub_stream_get(e->sched_stream, NULL) && (r = spare_take(c, &progress)) == cudaSuccess &&
        (r = UB_CUDA(ub_cuda.cudaEventRecord(progress, e->sched_stream))) != cudaSuccess) {
        spare_give(s, progress);
        progress = NULL;
    }
    if (r == cudaSuccess && waiter) {
        /* A capturing waiter may only wait on its capture's events: the application's own wait
         * (a captured event's, or none) is all it gets. */
        if (!ub_capture_stream(waiter)) {
            r = UB_CUDA(ub_cuda.cudaStreamWaitEvent(waiter, s->block_done, 0));
            if (r == cudaSuccess && progress)
                r = UB_CUDA(ub_cuda.cudaStreamWaitEvent(waiter, progress, 0));
        }
    } else if (r == cudaSuccess) {
        /* Without the lock: a watchdog's hooks must not wait behind device work. */
        cudaEvent_t done = s->block_done;
        ub_state_unlock();
        r = UB_CUDA(ub_cuda.cudaEventSynchronize(done));
        if (r == cudaSuccess && progress)
            r = UB_CUDA(ub_cuda.cudaEventSynchronize(progress));
        ub_state_lock();
    }
    spare_give(s, progress);
    if (r != cudaSuccess)
        ub_error("communicator %d: cannot wait for the work submitted before a pending event (%s)", c->index,
                 ub_cuda_error_text(r));
}

/* Lock held (released for the question): a host wait on c's deferred work ends when NCCL reports
 * an asynchronous error (a peer gone): the blocks may never complete, and the application's own
 * error handling (a watchdog's abort) must get to run.  One line says so. */
static bool peer_failed(ub_comm *c, const char *what) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    ncclComm_t handle = c->handle;
    ub_state_unlock();
    ncclResult_t r = ub_comm_async_error(handle);
    ub_state_lock();
    if (r == ncclSuccess)
        return false;
    ub_error("communicator %d: %s stops waiting for deferred calls: NCCL reports an asynchronous error (%s: a peer "
             "gone?)", c->index, what, r == ncclRemoteError ? "ncclRemoteError" : "NCCL error");
    return true;
}

/* Lock held: one diagnostic line for a host wait that lasts. */
static void still_waiting(const ub_comm *c, const char *what, double since, int call, uint64_t v)
{
    ub_warn("communicator %d: thread %lu has waited %.0f s in %s for allreduce %d of the iteration, whose block %d "
            "of the plan goes out when the issuing thread (%lu) makes the call that completes it",
            c->index, (unsigned long)pthread_self(), ub_monotonic_s() - since, what, call, block_of(&c->sched, v), c->issuer);
}

void ub_redirect_wait_event(cudaEvent_t ev, const char *what) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    double start = ub_monotonic_s(), line_at = start + ub_cfg.hang_s;
    n_waiters++;
    for (ub_event *e; (e = pending_event(ev)) && !atomic_load(&e->sched_comm->ending);) {
        ub_state_wait(0.25);
        if ((e = pending_event(ev)) && peer_failed(e->sched_comm, what))
            break;
        if ((e = pending_event(ev)) && ub_monotonic_s() > line_at) {
            still_waiting(e->sched_comm, what, start, e->sched_call, e->sched_value);
            line_at += ub_cfg.hang_s;
        }
    }
    n_waiters--;
}

ub_comm *ub_redirect_stream_unissued(cudaStream_t s) UB_REQUIRES(ub_state_mutex)
{
    if (!ub_sched_stream_listed(s))
        return NULL;
    ub_stream *st = ub_stream_get(s, NULL);
    ub_comm *c = st ? st->sch.comm : NULL;
    return c && c->sched.ready && st->sch.need_value > c->sched.issued ? c : NULL;
}

void ub_redirect_wait_stream(cudaStream_t s, const char *what) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    double start = ub_monotonic_s(), line_at = start + ub_cfg.hang_s;
    n_waiters++;
    for (ub_comm *c; (c = ub_redirect_stream_unissued(s)) && !atomic_load(&c->ending);) {
        ub_state_wait(0.25);
        if ((c = ub_redirect_stream_unissued(s)) && peer_failed(c, what))
            break;
        ub_stream *st = ub_stream_get(s, NULL);
        if ((c = ub_redirect_stream_unissued(s)) && st && ub_monotonic_s() > line_at) {
            still_waiting(c, what, start, st->sch.last_call, st->sch.need_value);
            line_at += ub_cfg.hang_s;
        }
    }
    n_waiters--;
}

void ub_redirect_wait_comm(ub_comm *c, uint64_t target, const char *what) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    ub_sched_rt *s = &c->sched;
    int last = s->arrived - 1;
    double start = ub_monotonic_s(), line_at = start + ub_cfg.hang_s;
    n_waiters++;
    while (s->issued < target && s->ready && !atomic_load(&c->ending)) {
        ub_state_wait(0.25);
        if (s->issued < target && peer_failed(c, what))
            break;
        if (s->issued < target && ub_monotonic_s() > line_at) {
            still_waiting(c, what, start, last, target);
            line_at += ub_cfg.hang_s;
        }
    }
    n_waiters--;
}

cudaError_t ub_redirect_stream_waited(cudaStream_t s, bool poll, cudaError_t r)
{
    if (r != cudaSuccess || !ub_sched_stream_listed(s))
        return r;
    ub_state_lock();
    ub_stream *st = ub_stream_get(s, NULL);
    ub_comm *c = st ? st->sch.comm : NULL;
    if (!c || !c->sched.ready || st->sch.settled) {
        ub_state_unlock();
        return r;
    }
    bool issued = st->sch.need_value <= c->sched.issued;
    if (!issued && poll) { /* true: deferred calls of s are not even issued */
        ub_state_unlock();
        return cudaErrorNotReady;
    }
    /* The private stream's work so far covers every issued block of s's calls.  A blocking wait
     * with calls still deferred is the issuing thread's unexpected wait: what was submitted is
     * done, the deferred calls stay deferred. */
    cudaStream_t priv = c->sched.priv;
    uint64_t covered = st->sch.need_value;
    ub_state_unlock();
    cudaError_t q = poll ? UB_CUDA(ub_cuda.cudaStreamQuery(priv)) : UB_CUDA(ub_cuda.cudaStreamSynchronize(priv));
    if (q == cudaErrorNotReady)
        return cudaErrorNotReady;
    if (q == cudaSuccess && issued) {
        ub_state_lock();
        st = ub_stream_get(s, NULL);
        if (st && st->sch.comm == c && st->sch.need_value == covered) /* no call deferred since */
            st->sch.settled = true;
        ub_state_unlock();
    }
    return r;
}

/* Lock held: s waits for the blocks issued so far (block_done recorded after them), so that its
 * own order covers its deferred calls again; what is recorded on it afterwards is left to it.
 * Nothing when its deferred calls are not all issued (nothing may wait for them yet); a CUDA
 * failure leaves it unsettled, with why. */
static cudaError_t settle(ub_comm *c, ub_stream *st, const char *what, char *why, size_t len) UB_REQUIRES(ub_state_mutex)
{
    if (st->sch.settled || st->sch.need_value > c->sched.issued)
        return cudaSuccess;
    cudaError_t e = mark_private(c);
    if (e == cudaSuccess)
        e = UB_CUDA(ub_cuda.cudaStreamWaitEvent(st->handle, c->sched.block_done, 0));
    if (e != cudaSuccess)
        return completion_failed(what, e, why, len);
    st->sch.settled = true;
    return cudaSuccess;
}

ub_comm *ub_redirect_capture_begins(cudaStream_t s, char *why, size_t len) UB_REQUIRES(ub_state_mutex)
{
    ub_stream *st = ub_stream_get(s, NULL);
    ub_comm *c = st ? st->sch.comm : NULL;
    if (!c || !c->sched.ready)
        return NULL;
    return settle(c, st, "making a stream whose graph capture begins wait for its deferred calls", why, len) ==
                   cudaSuccess
               ? NULL
               : c;
}

cudaError_t ub_redirect_pass_through_begins(ub_comm *c, char *why, size_t len) UB_REQUIRES(ub_state_mutex)
{
    if (!c->sched.ready)
        return cudaSuccess;
    cudaError_t e = cudaSuccess;
    for (ub_stream *st = ub_state_streams(); st && e == cudaSuccess; st = st->hh.next)
        if (st->sch.comm == c)
            e = settle(c, st, "making a stream wait for its deferred calls before an iteration in the application's "
                       "order", why, len);
    return e;
}

void ub_redirect_event_gone(ub_event *e)
{
    if (e->pending)
        pending_remove(e->sched_comm, e);
}

void ub_redirect_stream_gone(ub_stream *st)
{
    if (st->sch.comm)
        unlist_stream(st->handle);
}
