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

/* ---- text for the dumps (dump_text.c) ---- */
/* Signal-safe formatting: appends to buf[at..cap-1), returns the new length. */
size_t emu_put_str(char *buf, size_t at, size_t cap, const char *s);
size_t emu_put_u64(char *buf, size_t at, size_t cap, unsigned long long v);
size_t emu_put_hex(char *buf, size_t at, size_t cap, unsigned long long v);
/* Writes all n bytes to fd (again after EINTR and short writes; gives up on an error). */
void emu_write_all(int fd, const char *buf, size_t n);

/* ---- operations and streams (stream.c) ---- */
/* What an operation is, for the hardware-queue model (queue.c): a wait begins when it is
 * satisfied, anything else when its worker starts it; the deadlock analysis (queue_check.c)
 * needs to know what each pending wait waits for and what each pending op would release. */
enum emu_op_kind {
    EMU_OP_WORK,            /* kernel, copy, memset, host function, collective... */
    EMU_OP_RECORD,          /* cudaEventRecord: rec */
    EMU_OP_WAIT_EVENT,      /* cudaStreamWaitEvent: rec */
    EMU_OP_WAIT_VALUE,      /* cuStreamWaitValue32/64: addr, value, condition, is64 */
    EMU_OP_WRITE_VALUE,     /* cuStreamWriteValue32/64: addr, value, is64 */
    EMU_OP_WAIT_POSITION,   /* the legacy stream's implicit wait: target's op number target_seq */
};

struct emu_record;
struct emu_queue;

struct emu_op_info {
    enum emu_op_kind kind;
    struct emu_record *rec;
    void *addr;
    uint64_t value;
    unsigned condition;
    bool is64;
    struct CUstream_st *target;
    uint64_t target_seq;
    /* For graph capture (capture.c): how a captured op is run again at each launch of its
     * graph.  arg_size: arg is one flat malloc'd block that run frees (copied per launch);
     * else clone makes a fresh arg per launch and drop frees one never run.  An op with
     * neither cannot be captured. */
    size_t arg_size;
    void *(*clone)(const void *arg);
    void (*drop)(void *arg);
};

static inline bool emu_op_is_wait(enum emu_op_kind k)
{
    return k == EMU_OP_WAIT_EVENT || k == EMU_OP_WAIT_VALUE || k == EMU_OP_WAIT_POSITION;
}

struct emu_op {
    struct emu_op *next;          /* the stream's FIFO (under the stream's mu) */
    struct emu_op *qnext;         /* the queue's list of ops not yet begun (under the queue's mu) */
    struct CUstream_st *stream;
    struct emu_queue *queue;
    uint64_t ticket;              /* position in the queue, in submission order */
    uint64_t seq;                 /* position on the stream (1, 2, ...) */
    bool begun;                   /* under the queue's mu */
    /* Scratch of the deadlock analysis, written only with every queue's mu held. */
    bool sim_begun;
    uint64_t sim_order;
    struct emu_op_info info;
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
    /* Graph capture (capture.c, under its lock): the capture this stream records into (NULL:
     * none), the nodes it captured and how many of them were joined back to the origin. */
    struct emu_capture *capture;
    uint64_t cap_nodes, cap_joined;
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
    /* The hardware queue (queue.c), assigned at creation.  turn_cv is waited on with the
     * queue's mu: the worker's next op may not begin before every earlier op of the queue. */
    struct emu_queue *queue;
    atomic_int queue_index;   /* for the dump; -1 before the first assignment */
    pthread_cond_t turn_cv;
    uint64_t begun_ops;       /* ops of this stream that have begun (under the queue's mu) */
    uint64_t sim_begun_ops;   /* the deadlock analysis' scratch */
    pthread_t thread;
    bool thread_started;
    bool worker_ready;        /* under mu: the worker thread runs worker_main (see stream_object) */

    /* Activity text, written by the worker only, read by the dump (in a signal handler too)
     * without a lock: a sequence lock over atomic characters, so that a reader never sees a
     * half-written string and never races with the writer. */
    atomic_uint activity_seq;   /* odd while the worker writes */
    _Atomic char activity[EMU_ACTIVITY_LEN];
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
/* The same for an op that the queue model must know more of (info copied; NULL: EMU_OP_WORK). */
cudaError_t emu_enqueue_op(struct CUstream_st *s, const struct emu_op_info *info, usbyteEmuOpFn run, void *arg,
                           const char *what, uint64_t *seq);

/* The same for an op whose arg is one flat block of arg_size bytes that run frees: such an op
 * can be captured into a graph and run again at each launch. */
cudaError_t emu_enqueue_flat(struct CUstream_st *s, usbyteEmuOpFn run, void *arg, size_t arg_size, const char *what,
                             uint64_t *seq);

/* Blocks until s has completed its op number seq. */
void emu_stream_wait_seq(struct CUstream_st *s, uint64_t seq);

/* Blocks until every op enqueued on any stream before the call has completed. */
void emu_device_sync(void);

struct CUstream_st *emu_stream_create(unsigned flags, int priority);
cudaError_t emu_stream_destroy(cudaStream_t handle);

/* The stream's id (as cudaStreamGetId and the hang dump show it). */
uint64_t emu_stream_id(struct CUstream_st *s);

/* Called by an op on its worker: when the stream had got through the previous op in the model
 * (false when not called on a worker), and when this op ends in the model (by default: when its
 * run function returns). */
bool emu_worker_reached(struct timespec *out);
void emu_worker_op_ends_at(struct timespec t);
/* Called by a wait op on its worker once the wait is satisfied, before it releases what it
 * waited on: the queue behind it may go on.  The worker calls it after every wait op anyway. */
void emu_worker_op_begun(void);
/* Sets the calling worker's activity text (no-op outside a worker). */
void emu_worker_set_activity(const char *what);

/* ---- stream objects (stream_object.c) ---- */
/* Every stream object ever made (append-only list through all_next). */
struct CUstream_st *emu_all_streams(void);
/* Adds a new object, this process's, to that list. */
void emu_stream_object_add(struct CUstream_st *s);
/* Whether this process runs s's worker.  A forked child inherits every object but none of the
 * threads: an inherited stream would accept work and never run it. */
bool emu_stream_owned(const struct CUstream_st *s);
/* In a forked child (with only the calling thread): the objects made so far are its parent's. */
void emu_stream_objects_forked(void);
/* Sets s's activity text (its worker only); a consistent copy of it, in a signal handler too
 * (after a few tries against a busy writer, "(changing)"). */
void emu_stream_set_activity(struct CUstream_st *s, const char *what);
void emu_stream_read_activity(struct CUstream_st *s, char out[EMU_ACTIVITY_LEN]);

/* ---- the process's exit (unloading.c) ---- */
/* True once the process is exiting and the workers are being stopped. */
bool emu_unloading(void);
void emu_unloading_begin(void);
/* The later of two times. */
struct timespec emu_timespec_max(struct timespec a, struct timespec b);

/* ---- hardware queues (queue.c, queue_check.c) ---- */
/* CUDA_DEVICE_MAX_CONNECTIONS queues per device.  Every op takes a ticket in its stream's
 * queue when it is enqueued (under the stream's mu, so tickets follow stream order) and may
 * not begin before every earlier ticket of the queue has begun. */
struct emu_queue {
    pthread_mutex_t mu;
    int device, index;
    uint64_t next_ticket;      /* tickets handed out */
    uint64_t begun;            /* tickets 0..begun-1 have begun */
    struct emu_op *head, *tail;   /* ops not yet begun, in ticket order */
    struct emu_op *sim_cursor;    /* the deadlock analysis' scratch */
};

/* The number of queues per device (reads CUDA_DEVICE_MAX_CONNECTIONS on the first call of the
 * process: the emulated context's creation). */
int emu_queue_count(void);
/* The queue of a new stream on `device`: queue 0 for the legacy stream, else the next in
 * round-robin order.  Called with the stream table's lock held. */
struct emu_queue *emu_queue_assign(int device, bool legacy);
/* Under the stream's mu: gives op its ticket and appends it to its queue's list. */
void emu_queue_push(struct CUstream_st *s, struct emu_op *op);
/* On the worker, before running op: waits until every earlier ticket has begun; a non-wait
 * op then begins.  False when the process is exiting (op must not run). */
bool emu_queue_take_turn(struct CUstream_st *s, struct emu_op *op);
/* Marks op (at the head of its queue) begun, if not yet, and lets the next ticket go. */
void emu_queue_begin(struct emu_op *op);
/* Wakes every worker waiting for its turn (the process is exiting). */
void emu_queues_wake_all(void);
/* fork handlers, called by stream.c's with the stream table's lock held. */
void emu_queues_fork_prepare(void);
void emu_queues_fork_parent(void);
void emu_queues_fork_child(void);
/* Calls fn on every queue of this process (device order, then index order). */
void emu_queues_for_each(void (*fn)(struct emu_queue *q, void *ctx), void *ctx);

/* Writes one line per queue deadlock found now to fd (fd < 0: none) and returns how many;
 * with heads, first one line per queue with ops not begun, naming the first.  With try_only
 * the queue locks are only tried (for the signal handler); returns -1 when one was busy.
 * Allocates nothing and uses no stdio. */
int emu_queue_deadlocks(int fd, bool try_only, bool heads);

/* ---- stream memory operations (values.c) ---- */
bool emu_value_satisfied(unsigned condition, bool is64, uint64_t wanted, uint64_t now);
uint64_t emu_value_load(const void *addr, bool is64);
const char *emu_value_condition_name(unsigned condition);

/* ---- events (event.c) ---- */
enum emu_record_state {
    EMU_RECORD_UNSUBMITTED,      /* its op is not in a queue yet */
    EMU_RECORD_QUEUED,           /* op points at its op, not yet begun */
    EMU_RECORD_BEGUN,
};
struct emu_record {               /* one execution of one cudaEventRecord */
    atomic_int refs;
    atomic_bool done;
    /* Under the queue's mu of the record's stream (for the deadlock analysis). */
    enum emu_record_state state;
    struct emu_op *op;
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

/* ---- graph capture (capture.c) ---- */
/* One capture sequence: begun on its origin stream, joined by other streams through events
 * recorded in it, recorded as nodes in call order (a topological order of the captured work). */
enum emu_cnode_kind { EMU_CN_OP, EMU_CN_RECORD, EMU_CN_WAIT };
struct emu_cnode {
    enum emu_cnode_kind kind;
    usbyteEmuOpFn run;        /* EMU_CN_OP: run(a fresh arg) at each launch */
    void *arg;                /* the template */
    size_t arg_size;
    void *(*clone)(const void *arg);
    void (*drop)(void *arg);
    cudaEvent_t event;        /* EMU_CN_RECORD / EMU_CN_WAIT: an external event node */
    char what[96];
};
struct emu_capture {
    uint64_t id;
    enum cudaStreamCaptureMode mode;
    pthread_t thread;         /* the thread that began it */
    struct CUstream_st *origin;
    int device;
    bool invalidated;
    size_t n, cap;
    struct emu_cnode *nodes;
    /* cudaStreamBeginCaptureToGraph: the graph the nodes go into, after these nodes of it
     * (into NULL: a new graph). */
    cudaGraph_t into;
    cudaGraphNode_t *deps;
    size_t n_deps;
    struct emu_capture *next; /* the live captures */
};
void emu_capture_lock(void);
void emu_capture_unlock(void);
/* Lock held: s's capture, or NULL. */
struct emu_capture *emu_capture_of(struct CUstream_st *s);
/* Lock held: the live capture of that id, or NULL (ended). */
struct emu_capture *emu_capture_find(uint64_t id);
/* Lock held: appends a node to c. */
cudaError_t emu_capture_add(struct emu_capture *c, const struct emu_cnode *node);
/* Lock held: s joins c (a wait on an event recorded in c). */
void emu_capture_join(struct emu_capture *c, struct CUstream_st *s);
/* Called for every op before it is enqueued: true when s is capturing, the op then recorded
 * (cudaSuccess) or refused (*err). */
bool emu_capture_enqueue(struct CUstream_st *s, const struct emu_op_info *info, usbyteEmuOpFn run, void *arg,
                         const char *what, cudaError_t *err);
/* Use of the legacy stream while a blocking stream of its device captures: the error
 * (cudaErrorStreamCaptureImplicit), those captures invalidated when `invalidate`. */
cudaError_t emu_capture_legacy(struct CUstream_st *legacy, bool invalidate);
/* cudaStreamQuery/Synchronize of s: cudaErrorStreamCaptureUnsupported on a capturing stream
 * (the capture invalidated), the legacy stream's rule, else cudaSuccess. */
cudaError_t emu_capture_sync_check(struct CUstream_st *s);
/* A potentially unsafe call of this thread (cudaMalloc, a synchronous copy...): prohibited by
 * the thread's capture mode while captures run (cudaErrorStreamCaptureUnsupported, the
 * captures that prohibit it invalidated). */
cudaError_t emu_capture_unsafe(void);
/* cudaDeviceSynchronize: encompasses every capture of the device (whatever the mode). */
cudaError_t emu_capture_device_sync(void);
/* cudaStreamIsCapturing / cudaStreamGetCaptureInfo (stream_api.c): s's capture status and the
 * capture's id; on the legacy stream while a blocking stream captures, the legacy stream's error. */
cudaError_t emu_capture_status(struct CUstream_st *s, enum cudaStreamCaptureStatus *status, unsigned long long *id);
/* capture_api.c: c (allocated by the caller, its nodes none yet) begins on s in mode;
 * cudaErrorIllegalState when s already captures (c is then the caller's to free). */
cudaError_t emu_capture_begin(struct emu_capture *c, struct CUstream_st *s, enum cudaStreamCaptureMode mode);
/* capture_api.c: ends s's capture: *out is the capture, out of every stream and of the live
 * ones, for the caller to free, with cudaSuccess, cudaErrorStreamCaptureInvalidated or
 * cudaErrorStreamCaptureUnjoined; or *out is NULL with the error (none, not the origin, the
 * wrong thread). */
cudaError_t emu_capture_end(struct CUstream_st *s, struct emu_capture **out);
/* A captured op's arg that will never run goes (its drop, else free). */
void emu_cnode_drop(struct emu_cnode *n);
/* graph.c: a graph of captured nodes (takes every node, also when it fails): a new one when
 * into is NULL, else into itself (*out = into), the first node after deps, each next node
 * after the one before; cudaErrorInvalidValue when into or one of deps is gone. */
cudaError_t emu_graph_from_capture(struct emu_cnode *nodes, size_t n, cudaGraph_t into, const cudaGraphNode_t *deps,
                                   size_t n_deps, cudaGraph_t *out);
/* cudaErrorInvalidValue unless graph is live and deps (n_deps of them) are distinct nodes of it. */
cudaError_t emu_graph_check_deps(cudaGraph_t graph, const cudaGraphNode_t *deps, size_t n_deps);
/* event.c: at a graph launch, an external record node's record of `event` (NULL when the event
 * is gone), completed with emu_record_complete; an external wait's record to wait on. */
struct emu_record *emu_event_record_at_launch(cudaEvent_t event, uint64_t stream_id);
void emu_record_complete(struct emu_record *rec);
struct emu_record *emu_event_latest_record(cudaEvent_t event);

/* ---- misc ---- */
#define EMU_MAX_DEVICES 64   /* the most USBYTE_EMU_DEVICES allows */
int emu_device_count(void);
int emu_current_device(void);

/* interference.c: USBYTE_EMU_INTERFERENCE (0 when unset or bad, after one warning line), and
 * compute work of `device`: runs fn(arg), then holds the caller (the stream's worker) F times
 * the time an NCCL operation occupied the device while fn ran. */
double emu_interference(void);
void emu_compute_run(int device, void (*fn)(void *), void *arg);

#endif
