/* Completion redirection and host waits (see redirect.h). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_list.h"
#include "driver.h"
#include "guard.h"
#include "redirect.h"

atomic_int ub_sched_live;
_Thread_local bool ub_thread_defers;

/* The streams that carried deferred calls, for the wrappers' lock-free check; past the table's
 * size every stream takes the slow path. */
#define LISTED_MAX 32
static _Atomic(cudaStream_t) listed[LISTED_MAX];
static atomic_int n_listed;
static atomic_bool listed_overflow;

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

static uint64_t counter_now(const ub_comm *c)
{
    return c->sched.counter_host ? __atomic_load_n(c->sched.counter_host, __ATOMIC_ACQUIRE) : UINT64_MAX;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void ub_redirect_deferred(ub_comm *c, ub_stream *st, int k, uint64_t stream_value, uint64_t call_value)
{
    ub_stream_sched *sc = &st->sch;
    sc->comm = c;
    if (stream_value > sc->need_value)
        sc->need_value = stream_value;
    sc->last_value = call_value;
    sc->last_call = k;
    list_stream(st->handle);
}

/* A completion stream that will not hold `value` behind a larger one: the one already waiting
 * for the largest value not above it, else a new one, else the one waiting for the least. */
static int pick_completion_stream(ub_stream_sched *sc, uint64_t value)
{
    int best = -1;
    for (int i = 0; i < sc->n_comp; i++)
        if (sc->comp_value[i] <= value && (best < 0 || sc->comp_value[i] > sc->comp_value[best]))
            best = i;
    if (best >= 0)
        return best;
    if (sc->n_comp < UB_COMPLETION_STREAMS &&
        UB_CUDA(ub_cuda.cudaStreamCreateWithFlags(&sc->comp[sc->n_comp], cudaStreamNonBlocking)) == cudaSuccess)
        return sc->n_comp++;
    best = 0;
    for (int i = 1; i < sc->n_comp; i++)
        if (sc->comp_value[i] < sc->comp_value[best])
            best = i;
    return sc->n_comp ? best : -1;
}

bool ub_redirect_record(cudaEvent_t ev, cudaStream_t s, cudaError_t *r)
{
    if (!ub_sched_stream_listed(s))
        return false;
    ub_state_lock();
    ub_stream *st = ub_stream_get(s, NULL);
    ub_comm *c = st ? st->sch.comm : NULL;
    if (!c || !c->sched.counter_host) {
        ub_state_unlock();
        return false;
    }
    ub_stream_sched *sc = &st->sch;
    uint64_t v = c->sched.stream_semantics ? sc->need_value : sc->last_value;
    if (v <= counter_now(c)) { /* complete already: S's own order is the truth again */
        ub_state_unlock();
        return false;
    }
    int i = pick_completion_stream(sc, v);
    cudaError_t e = i < 0 ? cudaErrorMemoryAllocation : cudaSuccess;
    if (e == cudaSuccess && !sc->progress)
        e = UB_CUDA(ub_cuda.cudaEventCreateWithFlags(&sc->progress, cudaEventDisableTiming));
    if (e == cudaSuccess)
        e = UB_CUDA(ub_cuda.cudaEventRecord(sc->progress, s));
    if (e == cudaSuccess)
        e = UB_CUDA(ub_cuda.cudaStreamWaitEvent(sc->comp[i], sc->progress, 0));
    if (e == cudaSuccess &&
        UB_CUDA(ub_driver.wait_value64((CUstream)sc->comp[i], c->sched.counter_dev, v, CU_STREAM_WAIT_VALUE_GEQ)) !=
            CUDA_SUCCESS)
        e = cudaErrorLaunchFailure;
    if (e == cudaSuccess)
        e = UB_CUDA(ub_cuda.cudaEventRecord(ev, sc->comp[i]));
    if (e != cudaSuccess) {
        /* Recorded on S it would complete before the deferred calls: the error is the truth. */
        ub_error("communicator %d: cannot redirect an event recorded on a stream with deferred calls (%s)",
                 c->index, ub_cuda.cudaGetErrorString ? UB_CUDA(ub_cuda.cudaGetErrorString(e)) : "?");
        *r = e;
        ub_state_unlock();
        return true;
    }
    if (v > sc->comp_value[i])
        sc->comp_value[i] = v;
    if (v > c->sched.waited)
        c->sched.waited = v;
    ub_event *ue = ub_event_get(ev, true);
    if (ue) {
        ue->sched_comm = c;
        ue->sched_value = v;
        ue->sched_call = sc->last_call;
        ue->first_poll = 0;
    }
    *r = cudaSuccess;
    ub_state_unlock();
    return true;
}

/* The block of the current iteration that completes counter value v, for the diagnostic. */
static int block_of(const ub_comm *c, uint64_t v)
{
    return v > c->sched.base ? (int)(v - c->sched.base - 1) : -1;
}

static _Noreturn void early_consumer(ub_comm *c, int call, uint64_t v, const char *wait)
{
    ub_error("communicator %d: early consumer: %s on the thread that issues the calls waits for allreduce %d of "
             "the iteration, whose block %d of the plan can only be issued when later calls arrive, which this "
             "thread will never make while it waits. Every rank is in the same state, so the job would hang: "
             "aborting. Way out: USBYTE_MODE=observe, or USBYTE_POLICY=wfbp (issues each call as it arrives)",
             c->index, wait, call, block_of(c, v));
    abort();
}

/* Lock held: is waiting for v on this thread an early consumer? */
static bool cannot_complete(const ub_comm *c, uint64_t v)
{
    return c->issuer == (unsigned long)pthread_self() && v > c->sched.issued && v > counter_now(c);
}

void ub_redirect_event_wait(cudaEvent_t ev, bool poll)
{
    if (!ub_thread_defers)
        return;
    ub_state_lock();
    ub_event *e = ub_event_get(ev, false);
    ub_comm *c = e ? e->sched_comm : NULL;
    if (c && cannot_complete(c, e->sched_value)) {
        if (!poll)
            early_consumer(c, e->sched_call, e->sched_value, "cudaEventSynchronize");
        double t = now_s();
        if (e->first_poll == 0)
            e->first_poll = t;
        else if (t - e->first_poll > ub_cfg.hang_s)
            early_consumer(c, e->sched_call, e->sched_value, "a cudaEventQuery loop (USBYTE_HANG_S)");
    }
    ub_state_unlock();
}

static void wait_counter(const ub_comm *c, uint64_t v)
{
    long ns = 20000;
    while (counter_now(c) < v) {
        struct timespec t = {0, ns};
        nanosleep(&t, NULL);
        if (ns < 1000000)
            ns *= 2;
    }
}

void ub_redirect_stream_wait(cudaStream_t s, bool poll)
{
    if (!ub_sched_stream_listed(s))
        return;
    ub_state_lock();
    ub_stream *st = ub_stream_get(s, NULL);
    ub_comm *c = st ? st->sch.comm : NULL;
    if (c && !poll && cannot_complete(c, st->sch.need_value))
        early_consumer(c, st->sch.last_call, st->sch.need_value, "cudaStreamSynchronize");
    ub_state_unlock();
}

cudaError_t ub_redirect_stream_waited(cudaStream_t s, bool poll, cudaError_t r)
{
    if (r != cudaSuccess || !ub_sched_stream_listed(s))
        return r;
    ub_state_lock();
    ub_stream *st = ub_stream_get(s, NULL);
    ub_comm *c = st ? st->sch.comm : NULL;
    uint64_t v = c ? st->sch.need_value : 0;
    bool done = !c || counter_now(c) >= v;
    ub_state_unlock();
    if (done)
        return r;
    if (poll)
        return cudaErrorNotReady;
    wait_counter(c, v); /* the communicator outlives the wait: destroy flushes it first */
    return r;
}

void ub_redirect_device_wait(void)
{
    if (!ub_thread_defers)
        return;
    ub_state_lock();
    for (ub_stream *st = ub_state_streams(); st; st = st->hh.next) {
        ub_comm *c = st->sch.comm;
        if (c && cannot_complete(c, st->sch.need_value))
            early_consumer(c, st->sch.last_call, st->sch.need_value, "cudaDeviceSynchronize");
    }
    ub_state_unlock();
}

void ub_redirect_stream_gone(ub_stream *st)
{
    if (st->sch.comm)
        unlist_stream(st->handle);
}

void ub_redirect_forget_comm(ub_comm *c)
{
    for (ub_stream *st = ub_state_streams(); st; st = st->hh.next)
        if (st->sch.comm == c) {
            unlist_stream(st->handle);
            st->sch.comm = NULL;
        }
}
