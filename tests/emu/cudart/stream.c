/* Streams: one worker thread per stream executing its ops in FIFO order, each op in its turn
 * in the stream's hardware queue (queue.c), the legacy and per-thread default streams with
 * the legacy stream's implicit synchronization, the table used for handle validation,
 * device-wide synchronization, and the private entries that take a stream handle. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <uthash.h>

#include "capture.h"
#include "device.h"
#include "export.h"
#include "op.h"
#include "queue.h"
#include "stream.h"
#include "stream_object.h"
#include "unloading.h"

static pthread_mutex_t emu_streams_mu = PTHREAD_MUTEX_INITIALIZER;
static struct CUstream_st *stream_table;            /* uthash by pointer: every object ever made */
static uint64_t next_stream_id = 1;
static _Atomic(struct CUstream_st *) legacy_stream;   /* this process's; made on first use */
static pthread_once_t legacy_once = PTHREAD_ONCE_INIT;
static pthread_key_t per_thread_key;
static __thread struct CUstream_st *tl_per_thread;
static __thread struct CUstream_st *tl_worker;
static __thread struct emu_op *tl_op;      /* the op the worker runs */
static __thread bool tl_op_begun;          /* tl_op has begun (waits: once satisfied) */
static __thread bool tl_op_end_set;        /* the running op said when it ends in the model */
static __thread struct timespec tl_op_end;
static void *worker_main(void *arg)
{
    struct CUstream_st *s = arg;
    tl_worker = s;
    pthread_mutex_lock(&s->mu);
    s->worker_ready = true;
    pthread_cond_broadcast(&s->done_cv);
    for (;;) {
        while (s->head == NULL && !s->stop)
            pthread_cond_wait(&s->work_cv, &s->mu);
        if (s->stop)
            break;
        struct emu_op *op = s->head;
        s->head = op->next;
        if (s->head == NULL)
            s->tail = NULL;
        s->running = true;
        pthread_mutex_unlock(&s->mu);

        /* Exiting: the op is dropped, as pending work is when a context dies (it stays
         * reachable from its queue's list). */
        if (!emu_queue_take_turn(s, op)) {
            pthread_mutex_lock(&s->mu);
            break;
        }
        emu_stream_set_activity(s, op->what);
        tl_op = op;
        tl_op_begun = !emu_op_is_wait(op->info.kind);
        tl_op_end_set = false;
        op->run(op->arg);
        emu_worker_op_begun();
        tl_op = NULL;
        if (tl_op_end_set)
            s->reached = tl_op_end;
        else
            clock_gettime(CLOCK_MONOTONIC, &s->reached);
        free(op);
        emu_stream_set_activity(s, "idle");

        pthread_mutex_lock(&s->mu);
        s->running = false;
        s->completed++;
        atomic_store_explicit(&s->depth, s->enqueued - s->completed, memory_order_relaxed);
        pthread_cond_broadcast(&s->done_cv);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* Takes a dead, drained object for reuse, or makes a new one.  Called with emu_streams_mu. */
static struct CUstream_st *take_object(void)
{
    for (struct CUstream_st *s = emu_all_streams(); s; s = s->all_next) {
        if (s->alive || s->is_legacy || !emu_stream_owned(s))
            continue;
        pthread_mutex_lock(&s->mu);
        bool idle = s->completed == s->enqueued && !s->stop;
        pthread_mutex_unlock(&s->mu);
        if (idle)
            return s;
    }
    struct CUstream_st *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->work_cv, NULL);
    pthread_cond_init(&s->done_cv, NULL);
    pthread_cond_init(&s->turn_cv, NULL);
    atomic_init(&s->queue_index, -1);
    emu_stream_set_activity(s, "idle");
    if (pthread_create(&s->thread, NULL, worker_main, s) != 0) {
        pthread_cond_destroy(&s->turn_cv);
        pthread_cond_destroy(&s->done_cv);
        pthread_cond_destroy(&s->work_cv);
        pthread_mutex_destroy(&s->mu);
        free(s);
        return NULL;
    }
    /* A created stream's thread has started before the call returns.  A thread still starting
     * is inside the C library and the sanitizers' allocators (its stack and TLS set-up): a fork
     * at that moment gives the child those locks held by a thread it does not have, and its
     * next thread start or leak check waits forever. */
    pthread_mutex_lock(&s->mu);
    while (!s->worker_ready)
        pthread_cond_wait(&s->done_cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
    s->thread_started = true;
    s->self = s;
    HASH_ADD_PTR(stream_table, self, s);
    emu_stream_object_add(s);
    return s;
}

static struct CUstream_st *stream_create_locked(unsigned flags, int priority, bool legacy, bool implicit)
{
    struct CUstream_st *s = take_object();
    if (s == NULL)
        return NULL;
    /* Under s->mu too: a recycled object's worker and waiters read these under it. */
    pthread_mutex_lock(&s->mu);
    s->id = next_stream_id++;
    s->flags = flags;
    s->priority = priority;
    s->device = emu_current_device();
    s->is_legacy = legacy;
    s->implicit = implicit;
    s->capture = NULL;   /* a recycled object's capture ended with the capture's EndCapture */
    s->cap_nodes = s->cap_joined = 0;
    s->queue = emu_queue_assign(s->device, legacy);
    atomic_store(&s->queue_index, s->queue->index);
    s->alive = true;
    pthread_mutex_unlock(&s->mu);
    return s;
}

struct CUstream_st *emu_stream_create(unsigned flags, int priority)
{
    pthread_mutex_lock(&emu_streams_mu);
    struct CUstream_st *s = stream_create_locked(flags, priority, false, false);
    pthread_mutex_unlock(&emu_streams_mu);
    return s;
}

/* A per-thread default stream dies with its thread; the object is recycled once drained. */
static void per_thread_exit(void *arg)
{
    struct CUstream_st *s = arg;
    pthread_mutex_lock(&emu_streams_mu);
    s->alive = false;
    pthread_mutex_unlock(&emu_streams_mu);
}

static void legacy_init(void)
{
    pthread_key_create(&per_thread_key, per_thread_exit);
}

/* The legacy stream of this process: made on first use, and again in a forked child (which
 * has none of its parent's workers). */
static struct CUstream_st *legacy(void)
{
    pthread_once(&legacy_once, legacy_init);
    struct CUstream_st *s = atomic_load(&legacy_stream);
    if (s != NULL)
        return s;
    pthread_mutex_lock(&emu_streams_mu);
    s = atomic_load(&legacy_stream);
    if (s == NULL) {
        s = stream_create_locked(0, 0, true, false);
        atomic_store(&legacy_stream, s);
    }
    pthread_mutex_unlock(&emu_streams_mu);
    if (s == NULL) {
        fprintf(stderr, "usbyte emulator: cannot start the legacy stream's worker thread\n");
        abort();
    }
    return s;
}

static struct CUstream_st *per_thread_stream(void)
{
    if (tl_per_thread == NULL) {
        pthread_mutex_lock(&emu_streams_mu);
        tl_per_thread = stream_create_locked(0, 0, false, true);
        pthread_mutex_unlock(&emu_streams_mu);
        if (tl_per_thread != NULL)
            pthread_setspecific(per_thread_key, tl_per_thread);
    }
    return tl_per_thread;
}

cudaError_t emu_stream_resolve(cudaStream_t handle, bool ptsz, struct CUstream_st **out)
{
    /* As the real runtime after its teardown: nothing runs any more. */
    if (emu_unloading())
        return cudaErrorCudartUnloading;
    struct CUstream_st *legacy_s = legacy();
    if (handle == cudaStreamPerThread || (handle == NULL && ptsz)) {
        *out = per_thread_stream();
        return *out ? cudaSuccess : cudaErrorMemoryAllocation;
    }
    if (handle == NULL || handle == cudaStreamLegacy) {
        *out = legacy_s;
        return cudaSuccess;
    }
    struct CUstream_st *s = NULL;
    pthread_mutex_lock(&emu_streams_mu);
    HASH_FIND_PTR(stream_table, &handle, s);
    bool ok = s != NULL && s->alive && !s->implicit && !s->is_legacy;
    pthread_mutex_unlock(&emu_streams_mu);
    if (!ok)
        return cudaErrorInvalidResourceHandle;
    *out = s;
    return cudaSuccess;
}

cudaError_t emu_stream_destroy(cudaStream_t handle)
{
    if (handle == NULL || handle == cudaStreamLegacy || handle == cudaStreamPerThread)
        return cudaErrorInvalidResourceHandle;
    struct CUstream_st *s = NULL;
    cudaError_t err = cudaErrorInvalidResourceHandle;
    pthread_mutex_lock(&emu_streams_mu);
    HASH_FIND_PTR(stream_table, &handle, s);
    if (s != NULL && s->alive && !s->implicit && !s->is_legacy) {
        /* As in CUDA, pending work still runs; the object is recycled after it drains. */
        s->alive = false;
        err = cudaSuccess;
    }
    pthread_mutex_unlock(&emu_streams_mu);
    return err;
}

uint64_t emu_stream_id(struct CUstream_st *s)
{
    pthread_mutex_lock(&s->mu);
    uint64_t id = s->id;
    pthread_mutex_unlock(&s->mu);
    return id;
}

bool emu_worker_reached(struct timespec *out)
{
    if (tl_worker == NULL)
        return false;
    *out = tl_worker->reached;
    return true;
}

void emu_worker_op_begun(void)
{
    if (tl_op != NULL && !tl_op_begun) {
        tl_op_begun = true;
        emu_queue_begin(tl_op);
    }
}

void emu_worker_set_activity(const char *what)
{
    if (tl_worker != NULL)
        emu_stream_set_activity(tl_worker, what);
}

void emu_worker_op_ends_at(struct timespec t)
{
    tl_op_end = t;
    tl_op_end_set = true;
}

/* ---- waiting for another stream's position (the legacy stream's implicit dependencies) ---- */
struct position_wait {
    struct CUstream_st *stream;
    uint64_t seq;
};

static void position_wait_run(void *arg)
{
    struct position_wait *w = arg;
    emu_stream_wait_seq(w->stream, w->seq);
    free(w);
}

static cudaError_t push_op(struct CUstream_st *s, const struct emu_op_info *info, usbyteEmuOpFn run, void *arg,
                           const char *what, uint64_t *seq)
{
    /* A stream inherited through fork has no worker here: its work would never run.  CUDA
     * refuses a context used across fork with an initialization error. */
    if (!emu_stream_owned(s))
        return cudaErrorInitializationError;
    struct emu_op *op = malloc(sizeof *op);
    if (op == NULL)
        return cudaErrorMemoryAllocation;
    op->next = NULL;
    op->info = info ? *info : (struct emu_op_info){.kind = EMU_OP_WORK};
    op->sim_begun = false;
    op->sim_order = 0;
    op->run = run;
    op->arg = arg;
    snprintf(op->what, sizeof op->what, "%s", what ? what : "op");
    pthread_mutex_lock(&s->mu);
    if (s->tail)
        s->tail->next = op;
    else
        s->head = op;
    s->tail = op;
    s->enqueued++;
    op->seq = s->enqueued;
    emu_queue_push(s, op);   /* under s->mu: the stream's tickets follow its order */
    atomic_store_explicit(&s->depth, s->enqueued - s->completed, memory_order_relaxed);
    if (seq)
        *seq = s->enqueued;
    pthread_cond_signal(&s->work_cv);
    pthread_mutex_unlock(&s->mu);
    return cudaSuccess;
}

/* If `other` has unfinished work, makes s wait for all of it first. */
static cudaError_t depend_on(struct CUstream_st *s, struct CUstream_st *other)
{
    pthread_mutex_lock(&other->mu);
    uint64_t target = other->enqueued;
    bool pending = other->completed < target;
    unsigned long long other_id = other->id;
    pthread_mutex_unlock(&other->mu);
    if (!pending)
        return cudaSuccess;
    struct position_wait *w = malloc(sizeof *w);
    if (w == NULL)
        return cudaErrorMemoryAllocation;
    w->stream = other;
    w->seq = target;
    char what[64];
    snprintf(what, sizeof what, "implicit wait for stream %llu op %llu",
             other_id, (unsigned long long)target);
    struct emu_op_info info = {.kind = EMU_OP_WAIT_POSITION, .target = other, .target_seq = target};
    cudaError_t err = push_op(s, &info, position_wait_run, w, what, NULL);
    if (err != cudaSuccess)
        free(w);
    return err;
}

/* The legacy default stream waits for all earlier work of every blocking stream, and every
 * blocking stream waits for all earlier work of the legacy stream. */
static cudaError_t legacy_dependencies(struct CUstream_st *s)
{
    if (s->is_legacy) {
        struct CUstream_st *list[256];
        size_t n = 0;
        pthread_mutex_lock(&emu_streams_mu);
        for (struct CUstream_st *o = emu_all_streams(); o; o = o->all_next) {
            if (o == s || (o->flags & cudaStreamNonBlocking) || o->is_legacy || !emu_stream_owned(o))
                continue;
            if (n == sizeof list / sizeof list[0]) {
                /* Rare: more blocking streams than the batch; wait for the rest in the next batch. */
                pthread_mutex_unlock(&emu_streams_mu);
                for (size_t i = 0; i < n; i++)
                    if (depend_on(s, list[i]) != cudaSuccess)
                        return cudaErrorMemoryAllocation;
                n = 0;
                pthread_mutex_lock(&emu_streams_mu);
            }
            list[n++] = o;
        }
        pthread_mutex_unlock(&emu_streams_mu);
        for (size_t i = 0; i < n; i++)
            if (depend_on(s, list[i]) != cudaSuccess)
                return cudaErrorMemoryAllocation;
        return cudaSuccess;
    }
    struct CUstream_st *legacy_s = atomic_load(&legacy_stream);
    if (!(s->flags & cudaStreamNonBlocking) && legacy_s != NULL)
        return depend_on(s, legacy_s);
    return cudaSuccess;
}

cudaError_t emu_enqueue_op(struct CUstream_st *s, const struct emu_op_info *info, usbyteEmuOpFn run, void *arg,
                           const char *what, uint64_t *seq)
{
    cudaError_t err;
    /* A capturing stream records the op instead of running it. */
    if (emu_capture_enqueue(s, info, run, arg, what, &err)) {
        if (seq)
            *seq = 0;
        return err;
    }
    if (s->is_legacy && (err = emu_capture_legacy(s, true)) != cudaSuccess)
        return err;
    err = legacy_dependencies(s);
    if (err != cudaSuccess)
        return err;
    return push_op(s, info, run, arg, what, seq);
}

cudaError_t emu_enqueue(struct CUstream_st *s, usbyteEmuOpFn run, void *arg, const char *what, uint64_t *seq)
{
    return emu_enqueue_op(s, NULL, run, arg, what, seq);
}

cudaError_t emu_enqueue_flat(struct CUstream_st *s, usbyteEmuOpFn run, void *arg, size_t arg_size, const char *what,
                             uint64_t *seq)
{
    return emu_enqueue_op(s, &(struct emu_op_info){.kind = EMU_OP_WORK, .arg_size = arg_size}, run, arg, what, seq);
}

void emu_stream_wait_seq(struct CUstream_st *s, uint64_t seq)
{
    pthread_mutex_lock(&s->mu);
    while (s->completed < seq && !s->stop)   /* a stopped worker never completes its queue */
        pthread_cond_wait(&s->done_cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
}

void emu_device_sync(void)
{
    legacy();
    for (struct CUstream_st *s = emu_all_streams(); s; s = s->all_next) {
        if (!emu_stream_owned(s))
            continue;
        pthread_mutex_lock(&s->mu);
        uint64_t target = s->enqueued;
        pthread_mutex_unlock(&s->mu);
        emu_stream_wait_seq(s, target);
    }
}

/* ---- the private interface ---- */
EMU_EXPORT cudaError_t usbyteEmuStreamEnqueueEx(cudaStream_t stream, int ptsz, usbyteEmuOpFn run, void *arg, const char *what)
{
    if (run == NULL)
        return cudaErrorInvalidValue;
    struct CUstream_st *s;
    cudaError_t err = emu_stream_resolve(stream, ptsz != 0, &s);
    if (err != cudaSuccess)
        return err;
    return emu_enqueue(s, run, arg, what, NULL);
}

EMU_EXPORT cudaError_t usbyteEmuStreamEnqueue(cudaStream_t stream, usbyteEmuOpFn run, void *arg, const char *what)
{
    return usbyteEmuStreamEnqueueEx(stream, 0, run, arg, what);
}

EMU_EXPORT void usbyteEmuSetActivity(const char *what)
{
    if (tl_worker != NULL)
        emu_stream_set_activity(tl_worker, what ? what : "");
}

EMU_EXPORT int usbyteEmuWorkerReachedNs(uint64_t *ns)
{
    struct timespec t;
    if (!emu_worker_reached(&t))
        return 0;
    *ns = (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
    return 1;
}

EMU_EXPORT void usbyteEmuWorkerOpEndsAtNs(uint64_t ns)
{
    if (tl_worker != NULL)
        emu_worker_op_ends_at((struct timespec){.tv_sec = (time_t)(ns / 1000000000ull),
                                                .tv_nsec = (long)(ns % 1000000000ull)});
}

/* For the NCCL stand-in: an op whose arg is made afresh for each launch of a graph it is
 * captured into (clone) and freed unrun with drop. */
EMU_EXPORT cudaError_t usbyteEmuStreamEnqueueCapturable(cudaStream_t stream, int ptsz, usbyteEmuOpFn run, void *arg,
                                                        const char *what, void *(*clone)(const void *arg),
                                                        void (*drop)(void *arg))
{
    if (run == NULL || clone == NULL || drop == NULL)
        return cudaErrorInvalidValue;
    struct CUstream_st *s;
    cudaError_t err = emu_stream_resolve(stream, ptsz != 0, &s);
    if (err != cudaSuccess)
        return err;
    return emu_enqueue_op(s, &(struct emu_op_info){.kind = EMU_OP_WORK, .clone = clone, .drop = drop}, run, arg,
                          what, NULL);
}

EMU_EXPORT int usbyteEmuStreamCapturing(cudaStream_t stream, int ptsz)
{
    struct CUstream_st *s;
    if (emu_stream_resolve(stream, ptsz != 0, &s) != cudaSuccess)
        return 0;
    emu_capture_lock();
    int c = emu_capture_of(s) != NULL;
    emu_capture_unlock();
    return c;
}

EMU_EXPORT int usbyteEmuStreamQueue(cudaStream_t stream)
{
    struct CUstream_st *s;
    if (emu_stream_resolve(stream, false, &s) != cudaSuccess)
        return -1;
    return atomic_load(&s->queue_index);
}

/* fork: the table's lock is held across it, so that the child never inherits it held by a
 * thread it does not have.  The child then gets its own legacy and per-thread default streams
 * on first use and never recycles, waits for or stops its parent's objects. */
static void fork_prepare(void)
{
    pthread_mutex_lock(&emu_streams_mu);
    emu_queues_fork_prepare();
}

static void fork_parent(void)
{
    emu_queues_fork_parent();
    pthread_mutex_unlock(&emu_streams_mu);
}

static void fork_child(void)
{
    emu_stream_objects_forked();
    atomic_store(&legacy_stream, NULL);
    tl_per_thread = NULL;
    emu_queues_fork_child();
    pthread_mutex_unlock(&emu_streams_mu);
}

__attribute__((constructor)) static void emu_streams_init(void)
{
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* At exit, pending work is abandoned as when a CUDA context dies.  Idle workers are stopped
 * and joined; a worker inside an op (possibly blocked forever in a wait or a rendezvous) is
 * left alone: objects are never freed, so it can never touch freed memory. */
__attribute__((destructor)) static void emu_streams_shutdown(void)
{
    emu_unloading_begin();
    emu_queues_wake_all();   /* workers waiting for their turn see emu_unloading() */
    for (struct CUstream_st *s = emu_all_streams(); s; s = s->all_next) {
        /* A forked child's inherited objects: their threads (and maybe a held lock) are the
         * parent's. */
        if (!emu_stream_owned(s))
            continue;
        pthread_mutex_lock(&s->mu);
        s->stop = true;
        bool joinable = !s->running && s->thread_started;
        pthread_cond_broadcast(&s->work_cv);
        pthread_cond_broadcast(&s->done_cv);
        pthread_mutex_unlock(&s->mu);
        if (joinable)
            pthread_join(s->thread, NULL);
        else if (s->thread_started)
            pthread_detach(s->thread);
        s->thread_started = false;
    }
}
