/* Internal structures of the emulated CUDA runtime (libcudart.so.13).  Nothing here is seen
 * outside this folder; the other stand-in libraries use ../emu_internal.h.
 *
 * Object lifetime rule: stream and event objects are never freed while the process runs.  A
 * destroyed one is marked dead and recycled by a later create.  That keeps every pointer a
 * worker, a pending wait or the SIGUSR2 dump may hold valid, and lets handle validation look a
 * pointer up in a table of every object ever made without touching freed memory. */
#ifndef USBYTE_EMU_CUDART_EMU_H
#define USBYTE_EMU_CUDART_EMU_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <cuda_runtime_api.h>
#include <uthash.h>

#include "../emu_internal.h"

#define EMU_EXPORT __attribute__((visibility("default")))

/* ---- errors (errors.c) ---- */
/* Records err as the calling thread's last error (non-sticky) and returns it, or returns the
 * process's sticky error when one is set. */
cudaError_t emu_result(cudaError_t err);

/* ---- operations and streams (stream.c) ---- */
struct emu_op {
    struct emu_op *next;
    usbyteEmuOpFn run;
    void *arg;
    char what[96];
};

#define EMU_ACTIVITY_LEN 160

struct CUstream_st {
    uint64_t id;              /* 1, 2, 3... in creation order; never reused by a recycled object */
    unsigned flags;
    int priority;
    int device;
    bool is_legacy;
    bool implicit;            /* a per-thread default stream */
    bool alive;               /* under emu_streams_mu; false once destroyed */
    bool capturing;           /* only through usbyteEmuSetCapturing */
    pid_t owner;              /* the process that made it and runs its worker (never changes):
                                 a forked child inherits the object but not the thread */

    pthread_mutex_t mu;
    pthread_cond_t work_cv;   /* worker waits for ops */
    pthread_cond_t done_cv;   /* host threads and other workers wait for progress */
    struct emu_op *head, *tail;
    uint64_t enqueued;        /* ops ever enqueued */
    uint64_t completed;       /* ops ever completed: an op's sequence number is enqueued after adding it */
    bool running;
    bool stop;
    pthread_t thread;
    bool thread_started;
    bool worker_ready;        /* under mu: the worker thread runs worker_main (see stream_object) */

    /* Activity text, double-buffered so the signal-time dump reads a finished string. */
    char activity[2][EMU_ACTIVITY_LEN];
    atomic_int activity_idx;
    atomic_ullong depth;      /* enqueued - completed, readable without the lock */
    /* The modelled time at which the stream got through its latest op (its worker only).  A GPU
     * stamps an event when the work before it is done, whether or not anything else runs; the
     * worker is a thread that a loaded machine deschedules between and inside ops, so an op
     * that takes no device time (an event record) ends in the model when the work before it
     * did, not when the worker got to it. */
    struct timespec reached;

    struct CUstream_st *self;       /* uthash key */
    struct CUstream_st *all_next;   /* append-only list of every stream object (for dumps) */
    UT_hash_handle hh;
};

/* Resolves a user handle (NULL, cudaStreamLegacy, cudaStreamPerThread or a created stream) to
 * its object; ptsz selects what NULL means (per-thread default stream for the _ptsz entry
 * points).  Returns cudaErrorInvalidResourceHandle for anything else. */
cudaError_t emu_stream_resolve(cudaStream_t handle, bool ptsz, struct CUstream_st **out);

/* Enqueues run(arg) on s (inserting the implicit legacy-stream dependencies first) and returns
 * the op's sequence number on s through seq (may be NULL).  `what` is copied. */
cudaError_t emu_enqueue(struct CUstream_st *s, usbyteEmuOpFn run, void *arg, const char *what, uint64_t *seq);

/* Blocks until s has completed its op number seq. */
void emu_stream_wait_seq(struct CUstream_st *s, uint64_t seq);

/* Blocks until every op enqueued on any stream before the call has completed. */
void emu_device_sync(void);

struct CUstream_st *emu_stream_create(unsigned flags, int priority);
cudaError_t emu_stream_destroy(cudaStream_t handle);

/* The stream's id (as cudaStreamGetId and the hang dump show it). */
uint64_t emu_stream_id(struct CUstream_st *s);

/* True once the process is exiting and the workers have been stopped. */
bool emu_unloading(void);

/* The stream whose worker is the calling thread, or NULL. */
struct CUstream_st *emu_current_worker(void);
/* Called by an op on its worker: when the stream had got through the previous op in the model
 * (false when not called on a worker), and when this op ends in the model (by default: when its
 * run function returns). */
bool emu_worker_reached(struct timespec *out);
void emu_worker_op_ends_at(struct timespec t);
/* The later of two times. */
struct timespec emu_timespec_max(struct timespec a, struct timespec b);

/* ---- events (event.c) ---- */
struct emu_record {               /* one execution of one cudaEventRecord */
    atomic_int refs;
    atomic_bool done;
    struct timespec when;         /* CLOCK_MONOTONIC time the stream reached the record: the later of
                                   * the end of the work before it and the cudaEventRecord call */
    struct timespec enqueued;     /* when the host called cudaEventRecord */
    uint64_t event_id, stream_id; /* for the hang dump: who waits on what */
};

/* Blocks until rec is done (the worker's activity says so when called on a worker). */
void emu_record_wait(struct emu_record *rec);
void emu_record_release(struct emu_record *rec);

/* ---- memory (memory.c) ---- */
bool emu_range_valid(const void *ptr, size_t bytes);

/* ---- CUPTI hook (trace.c) ---- */
struct emu_trace {
    usbyteEmuApiHookFn hook;
    int domain;
    uint32_t cbid;
    const char *name;
    const void *params;
    uint32_t correlation_id;
    uint64_t correlation_data;
};
extern _Atomic(usbyteEmuApiHookFn) emu_api_hook;
void emu_trace_enter(struct emu_trace *t, usbyteEmuApiHookFn hook, int domain, uint32_t cbid, const char *name, const void *params);
void emu_trace_exit(struct emu_trace *t, const void *ret);

/* Runs `call` (a cudaError_t expression) between the CUPTI enter and exit callbacks when a
 * subscriber is attached; otherwise one predictable branch. */
#define EMU_TRACED(cbid, name, params, call)                                               \
    do {                                                                                   \
        usbyteEmuApiHookFn hook_ = atomic_load_explicit(&emu_api_hook, memory_order_acquire); \
        if (__builtin_expect(hook_ == NULL, 1))                                            \
            return emu_result(call);                                                       \
        struct emu_trace tr_;                                                              \
        emu_trace_enter(&tr_, hook_, 2 /* CUPTI_CB_DOMAIN_RUNTIME_API */, (cbid), (name), (params)); \
        cudaError_t r_ = emu_result(call);                                                 \
        emu_trace_exit(&tr_, &r_);                                                         \
        return r_;                                                                         \
    } while (0)

/* ---- misc ---- */
int emu_device_count(void);
int emu_current_device(void);

#endif
