/* Events.  Each cudaEventRecord creates a refcounted record instance that the stream's worker
 * completes when it reaches it, stamped (CLOCK_MONOTONIC) as a GPU stamps it: when the stream
 * got through the work before it, or when the host recorded it if that is later; never when
 * the worker thread happened to run (see CUstream_st.reached).  The event points at its
 * latest instance.  Waits (cudaStreamWaitEvent, cudaEventSynchronize) capture the instance at
 * call time, so later records of the same event cannot affect them, exactly as in CUDA. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cupti_runtime_cbid.h>
#include <generated_cuda_runtime_api_meta.h>
#include <uthash.h>

#include "capture.h"
#include "device.h"
#include "errors.h"
#include "event.h"
#include "export.h"
#include "op.h"
#include "record.h"
#include "stream.h"
#include "stream_object.h"
#include "trace.h"
#include "unloading.h"

struct CUevent_st {
    unsigned flags;
    bool alive;
    int device;                  /* the device current at its creation */
    /* Recorded in a capture (under the capture lock): that capture's id (0: not captured),
     * the stream and how many nodes it had captured then (for the join back to the origin). */
    uint64_t cap_id;
    struct CUstream_st *cap_stream;
    uint64_t cap_mark;
    struct emu_record *latest;   /* NULL: never recorded, complete */
    uint64_t id;
    struct CUevent_st *self;     /* uthash key */
    UT_hash_handle hh;
    struct CUevent_st *free_next;
};

/* One lock for every event and record: events change rarely compared with the work they
 * order, and it keeps "latest" and the completion flags trivially consistent. */
static pthread_mutex_t events_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t records_cv = PTHREAD_COND_INITIALIZER;
static struct CUevent_st *event_table;
static struct CUevent_st *free_events;
static uint64_t next_event_id = 1;

void emu_record_release(struct emu_record *rec)
{
    if (rec != NULL && atomic_fetch_sub(&rec->refs, 1) == 1)
        free(rec);
}

void emu_record_wait(struct emu_record *rec)
{
    if (atomic_load_explicit(&rec->done, memory_order_acquire))
        return;
    pthread_mutex_lock(&events_mu);
    while (!atomic_load_explicit(&rec->done, memory_order_acquire))
        pthread_cond_wait(&records_cv, &events_mu);
    pthread_mutex_unlock(&events_mu);
}

/* The later of two times. */
static struct timespec later(struct timespec a, struct timespec b)
{
    if (a.tv_sec != b.tv_sec)
        return a.tv_sec > b.tv_sec ? a : b;
    return a.tv_nsec >= b.tv_nsec ? a : b;
}

static void record_run(void *arg)
{
    struct emu_record *rec = arg;
    struct timespec reached;
    if (emu_worker_reached(&reached)) {
        rec->when = later(reached, rec->enqueued);
        emu_worker_op_ends_at(rec->when);   /* a record takes no device time */
    } else {
        clock_gettime(CLOCK_MONOTONIC, &rec->when);   /* completed by the host: nothing to model */
    }
    pthread_mutex_lock(&events_mu);
    atomic_store_explicit(&rec->done, true, memory_order_release);
    pthread_cond_broadcast(&records_cv);
    pthread_mutex_unlock(&events_mu);
    emu_record_release(rec);
}

static void wait_run(void *arg)
{
    struct emu_record *rec = arg;
    /* Ends when the worker gets through (not at the awaited stamp): the work after it really
     * starts then, and a duration measured around that work must not include the wake-up. */
    emu_record_wait(rec);
    emu_worker_op_begun();   /* satisfied: the queue behind it goes on (rec is still ours) */
    emu_record_release(rec);
}

/* Looks the handle up; on success returns with events_mu held. */
static cudaError_t lock_event(cudaEvent_t handle, struct CUevent_st **out)
{
    if (handle == NULL)
        return cudaErrorInvalidResourceHandle;
    struct CUevent_st *e = NULL;
    pthread_mutex_lock(&events_mu);
    HASH_FIND_PTR(event_table, &handle, e);
    if (e == NULL || !e->alive) {
        pthread_mutex_unlock(&events_mu);
        return cudaErrorInvalidResourceHandle;
    }
    *out = e;
    return cudaSuccess;
}

/* Takes a reference on the event's latest record (NULL if never recorded). */
static cudaError_t capture_latest(cudaEvent_t handle, struct emu_record **out, unsigned *flags)
{
    struct CUevent_st *e;
    cudaError_t err = lock_event(handle, &e);
    if (err != cudaSuccess)
        return err;
    *out = e->latest;
    if (e->latest)
        atomic_fetch_add(&e->latest->refs, 1);
    if (flags)
        *flags = e->flags;
    pthread_mutex_unlock(&events_mu);
    return cudaSuccess;
}

static cudaError_t event_create(cudaEvent_t *event, unsigned flags)
{
    if (event == NULL)
        return cudaErrorInvalidValue;
    if (flags & ~(unsigned)(cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess))
        return cudaErrorInvalidValue;
    if ((flags & cudaEventInterprocess) && !(flags & cudaEventDisableTiming))
        return cudaErrorInvalidValue;
    pthread_mutex_lock(&events_mu);
    struct CUevent_st *e = free_events;
    if (e != NULL) {
        free_events = e->free_next;
    } else {
        e = calloc(1, sizeof *e);
        if (e == NULL) {
            pthread_mutex_unlock(&events_mu);
            return cudaErrorMemoryAllocation;
        }
        e->self = e;
        HASH_ADD_PTR(event_table, self, e);
    }
    e->flags = flags;
    e->alive = true;
    e->device = emu_current_device();
    e->cap_id = 0;
    e->latest = NULL;
    e->id = next_event_id++;
    pthread_mutex_unlock(&events_mu);
    *event = e;
    return cudaSuccess;
}

EMU_EXPORT cudaError_t cudaEventCreate(cudaEvent_t *event)
{
    return emu_result(event_create(event, cudaEventDefault));
}

EMU_EXPORT cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
{
    return emu_result(event_create(event, flags));
}

static cudaError_t event_destroy(cudaEvent_t handle)
{
    struct CUevent_st *e;
    cudaError_t err = lock_event(handle, &e);
    if (err != cudaSuccess)
        return err;
    /* A pending record still completes (its instance is refcounted); only the handle dies. */
    struct emu_record *old = e->latest;
    e->latest = NULL;
    e->alive = false;
    e->free_next = free_events;
    free_events = e;
    pthread_mutex_unlock(&events_mu);
    emu_record_release(old);
    return cudaSuccess;
}

EMU_EXPORT cudaError_t cudaEventDestroy(cudaEvent_t event)
{
    return emu_result(event_destroy(event));
}

static cudaError_t event_record(cudaEvent_t handle, cudaStream_t stream, unsigned flags, bool ptsz)
{
    if (flags & ~(unsigned)cudaEventRecordExternal)
        return cudaErrorInvalidValue;
    struct CUstream_st *s;
    cudaError_t err = emu_stream_resolve(stream, ptsz, &s);
    if (err != cudaSuccess)
        return err;
    struct emu_record *rec = calloc(1, sizeof *rec);
    if (rec == NULL)
        return cudaErrorMemoryAllocation;
    clock_gettime(CLOCK_MONOTONIC, &rec->enqueued);
    atomic_init(&rec->refs, 2);   /* the event's and the op's */
    atomic_init(&rec->done, false);

    struct CUevent_st *e;
    emu_capture_lock();
    err = lock_event(handle, &e);
    if (err != cudaSuccess) {
        emu_capture_unlock();
        free(rec);
        return err;
    }
    /* An event records work of its own device only (a stream of another device: an invalid
     * handle for that stream's context). */
    struct emu_capture *c = emu_capture_of(s);
    if (e->device != emu_stream_device(s)) {
        err = cudaErrorInvalidResourceHandle;
    } else if (c != NULL && c->invalidated) {
        err = cudaErrorStreamCaptureInvalidated;
    } else if (c != NULL && (flags & cudaEventRecordExternal)) {
        /* An external event node: the event is recorded when the graph runs. */
        struct emu_cnode n = {.kind = EMU_CN_RECORD, .event = handle};
        snprintf(n.what, sizeof n.what, "cudaEventRecord event %llu (graph node)", (unsigned long long)e->id);
        if ((err = emu_capture_add(c, &n)) == cudaSuccess)
            s->cap_nodes++;
        e->cap_id = 0;
    } else if (c != NULL) {
        /* A captured event: it stands for the capture's nodes so far, nothing is recorded. */
        e->cap_id = c->id;
        e->cap_stream = s;
        e->cap_mark = s->cap_nodes;
    } else {
        e->cap_id = 0;
    }
    if (err != cudaSuccess || c != NULL) {
        pthread_mutex_unlock(&events_mu);
        emu_capture_unlock();
        free(rec);
        return err;
    }
    emu_capture_unlock();
    struct emu_record *old = e->latest;
    e->latest = rec;
    uint64_t id = e->id;
    rec->event_id = id;
    rec->stream_id = emu_stream_id(s);
    pthread_mutex_unlock(&events_mu);
    emu_record_release(old);

    char what[64];
    snprintf(what, sizeof what, "cudaEventRecord event %llu", (unsigned long long)id);
    err = emu_enqueue_op(s, &(struct emu_op_info){.kind = EMU_OP_RECORD, .rec = rec}, record_run, rec, what, NULL);
    if (err != cudaSuccess)
        record_run(rec);   /* never leave a record that can never complete */
    return err;
}

EMU_EXPORT cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    cudaEventRecord_v3020_params p = {event, stream};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020, "cudaEventRecord", &p,
               event_record(event, stream, 0, false));
}

EMU_EXPORT cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream)
{
    cudaEventRecord_ptsz_v7000_params p = {event, stream};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_ptsz_v7000, "cudaEventRecord_ptsz", &p,
               event_record(event, stream, 0, true));
}

EMU_EXPORT cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags)
{
    cudaEventRecordWithFlags_v11010_params p = {event, stream, flags};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_v11010, "cudaEventRecordWithFlags", &p,
               event_record(event, stream, flags, false));
}

EMU_EXPORT cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t event, cudaStream_t stream, unsigned int flags)
{
    cudaEventRecordWithFlags_ptsz_v11010_params p = {event, stream, flags};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_ptsz_v11010, "cudaEventRecordWithFlags_ptsz", &p,
               event_record(event, stream, flags, true));
}

/* The capture rules of a wait (capture.c): true, with the wait's result in *out, when the event
 * or the stream is in a capture (or the event is invalid); false when neither is (an ordinary
 * wait follows). */
static bool capture_wait(struct CUstream_st *s, cudaEvent_t event, unsigned flags, cudaError_t *out)
{
    struct CUevent_st *e;
    emu_capture_lock();
    cudaError_t err = lock_event(event, &e);
    if (err != cudaSuccess) {
        emu_capture_unlock();
        *out = err;
        return true;
    }
    struct emu_capture *ec = e->cap_id ? emu_capture_find(e->cap_id) : NULL;
    struct emu_capture *sc = emu_capture_of(s);
    bool ruled = ec != NULL || sc != NULL;
    if (ec != NULL) {
        if (ec->invalidated) {
            err = cudaErrorStreamCaptureInvalidated;
        } else if (sc != NULL && sc != ec) {
            sc->invalidated = true;   /* two capture sequences may not merge */
            err = cudaErrorStreamCaptureMerge;
        } else {
            if (sc == NULL)
                emu_capture_join(ec, s);   /* the waiting stream joins the capture */
            else if (s == ec->origin && e->cap_stream != s && e->cap_stream->capture == ec &&
                     e->cap_stream->cap_joined < e->cap_mark)
                e->cap_stream->cap_joined = e->cap_mark;   /* joined back to the origin */
            err = cudaSuccess;
        }
    } else if (sc != NULL) {
        if (sc->invalidated) {
            err = cudaErrorStreamCaptureInvalidated;
        } else if (flags & cudaEventWaitExternal) {
            struct emu_cnode n = {.kind = EMU_CN_WAIT, .event = event};
            snprintf(n.what, sizeof n.what, "cudaStreamWaitEvent event %llu (graph node)", (unsigned long long)e->id);
            if ((err = emu_capture_add(sc, &n)) == cudaSuccess)
                s->cap_nodes++;
        } else {
            /* "invalid to wait on a non-captured event from a stream which is being captured
             * without specifying the cudaEventWaitExternal flag" */
            sc->invalidated = true;
            err = cudaErrorStreamCaptureIsolation;
        }
    }
    pthread_mutex_unlock(&events_mu);
    emu_capture_unlock();
    *out = err;
    return ruled;
}

/* Querying or synchronizing an event recorded in a live capture: cudaErrorCapturedEvent, the
 * capture invalidated. */
static cudaError_t captured_check(cudaEvent_t event)
{
    struct CUevent_st *e;
    emu_capture_lock();
    cudaError_t err = lock_event(event, &e);
    if (err == cudaSuccess) {
        struct emu_capture *c = e->cap_id ? emu_capture_find(e->cap_id) : NULL;
        if (c != NULL) {
            c->invalidated = true;
            err = cudaErrorCapturedEvent;
        }
        pthread_mutex_unlock(&events_mu);
    }
    emu_capture_unlock();
    return err;
}

static cudaError_t stream_wait_event(cudaStream_t stream, cudaEvent_t event, unsigned flags, bool ptsz)
{
    if (flags & ~(unsigned)cudaEventWaitExternal)
        return cudaErrorInvalidValue;
    struct CUstream_st *s;
    cudaError_t err = emu_stream_resolve(stream, ptsz, &s);
    if (err != cudaSuccess)
        return err;
    if (capture_wait(s, event, flags, &err))
        return err;
    struct emu_record *rec;
    err = capture_latest(event, &rec, NULL);
    if (err != cudaSuccess)
        return err;
    if (rec == NULL)
        return cudaSuccess;   /* never recorded: complete, nothing to wait for */
    char what[96];
    snprintf(what, sizeof what, "cudaStreamWaitEvent event %llu (recorded on stream %llu)",
             (unsigned long long)rec->event_id, (unsigned long long)rec->stream_id);
    err = emu_enqueue_op(s, &(struct emu_op_info){.kind = EMU_OP_WAIT_EVENT, .rec = rec}, wait_run, rec, what, NULL);
    if (err != cudaSuccess)
        emu_record_release(rec);
    return err;
}

EMU_EXPORT cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
{
    cudaStreamWaitEvent_v3020_params p = {stream, event, flags};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020, "cudaStreamWaitEvent", &p,
               stream_wait_event(stream, event, flags, false));
}

EMU_EXPORT cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
{
    cudaStreamWaitEvent_ptsz_v7000_params p = {stream, event, flags};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_ptsz_v7000, "cudaStreamWaitEvent_ptsz", &p,
               stream_wait_event(stream, event, flags, true));
}

static cudaError_t event_query(cudaEvent_t event)
{
    struct emu_record *rec;
    cudaError_t err = captured_check(event);
    if (err != cudaSuccess)
        return err;
    err = capture_latest(event, &rec, NULL);
    if (err != cudaSuccess || rec == NULL)
        return err;
    bool done = atomic_load_explicit(&rec->done, memory_order_acquire);
    emu_record_release(rec);
    return done ? cudaSuccess : cudaErrorNotReady;
}

EMU_EXPORT cudaError_t cudaEventQuery(cudaEvent_t event)
{
    cudaEventQuery_v3020_params p = {event};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020, "cudaEventQuery", &p, event_query(event));
}

static cudaError_t event_synchronize(cudaEvent_t event)
{
    if (emu_unloading())
        return cudaErrorCudartUnloading;
    struct emu_record *rec;
    cudaError_t err = captured_check(event);
    if (err != cudaSuccess)
        return err;
    err = capture_latest(event, &rec, NULL);
    if (err != cudaSuccess || rec == NULL)
        return err;
    emu_record_wait(rec);
    emu_record_release(rec);
    return cudaSuccess;
}

EMU_EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
    cudaEventSynchronize_v3020_params p = {event};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020, "cudaEventSynchronize", &p,
               event_synchronize(event));
}

static cudaError_t elapsed(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    if (ms == NULL)
        return cudaErrorInvalidValue;
    struct emu_record *a, *b;
    unsigned fa, fb;
    cudaError_t err = captured_check(start);
    if (err == cudaSuccess)
        err = captured_check(end);
    if (err != cudaSuccess)
        return err;
    err = capture_latest(start, &a, &fa);
    if (err != cudaSuccess)
        return err;
    err = capture_latest(end, &b, &fb);
    if (err != cudaSuccess) {
        emu_record_release(a);
        return err;
    }
    /* CUDA: timing-disabled or never-recorded events give cudaErrorInvalidResourceHandle,
     * events whose record has not completed give cudaErrorNotReady. */
    if ((fa | fb) & cudaEventDisableTiming || a == NULL || b == NULL)
        err = cudaErrorInvalidResourceHandle;
    else if (!atomic_load_explicit(&a->done, memory_order_acquire) || !atomic_load_explicit(&b->done, memory_order_acquire))
        err = cudaErrorNotReady;
    else
        *ms = (float)((double)(b->when.tv_sec - a->when.tv_sec) * 1e3 + (double)(b->when.tv_nsec - a->when.tv_nsec) / 1e6);
    emu_record_release(a);
    emu_record_release(b);
    return err;
}

EMU_EXPORT cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    return emu_result(elapsed(ms, start, end));
}

/* ---- graph launches (graph.c) ---- */
struct emu_record *emu_event_record_at_launch(cudaEvent_t event, uint64_t stream_id)
{
    struct emu_record *rec = calloc(1, sizeof *rec);
    if (rec == NULL)
        return NULL;
    clock_gettime(CLOCK_MONOTONIC, &rec->enqueued);
    atomic_init(&rec->refs, 2);   /* the event's and the launch's */
    atomic_init(&rec->done, false);
    struct CUevent_st *e;
    if (lock_event(event, &e) != cudaSuccess) {
        free(rec);
        return NULL;   /* destroyed since the capture: the node records nothing */
    }
    struct emu_record *old = e->latest;
    e->latest = rec;
    rec->event_id = e->id;
    rec->stream_id = stream_id;
    pthread_mutex_unlock(&events_mu);
    emu_record_release(old);
    return rec;
}

void emu_record_complete(struct emu_record *rec)
{
    record_run(rec);
}

struct emu_record *emu_event_latest_record(cudaEvent_t event)
{
    struct emu_record *rec = NULL;
    if (capture_latest(event, &rec, NULL) != cudaSuccess)
        return NULL;
    return rec;
}
