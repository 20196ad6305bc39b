/* Hardware queues.  CUDA multiplexes the streams of a device onto CUDA_DEVICE_MAX_CONNECTIONS
 * work queues (default 8, 1..32), and the device processes each queue in submission order: an
 * operation does not begin before every operation submitted earlier to the same queue, from
 * any stream mapped to it, has begun.  A wait (an event wait, a stream memory wait, the legacy
 * stream's implicit wait) begins when it is satisfied, so a wait at the head of a queue holds
 * back everything behind it, whichever stream it came from.
 *
 * Assignment: queue 0 of each device belongs to its legacy default stream, which a real GPU
 * creates with the context; every other stream (created or per-thread default) takes the next
 * queue of its device in creation order, round robin: the k-th (k = 1, 2, ...) gets queue
 * k mod N.  A recycled stream object is a new stream and takes a new queue.
 *
 * Tickets: an op gets its queue's next ticket when it is enqueued, under its stream's mu, so a
 * stream's tickets increase along the stream; the queue's mu protects the tickets, the count of
 * tickets begun and the list of ops not yet begun (in ticket order).  When an op begins, the
 * owner of the next ticket is woken through its stream's turn_cv: one wake-up per op. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device.h"
#include "export.h"
#include "op.h"
#include "queue.h"
#include "record.h"
#include "stream_object.h"
#include "unloading.h"

#define MAX_CONNECTIONS 32
#define DEFAULT_CONNECTIONS 8

struct queue_set {
    struct queue_set *older;   /* in a forked child: the next set inherited from the parent */
    int n;
    uint64_t created;          /* streams other than the legacy one assigned so far */
    struct emu_queue q[];
};

/* Under queues_mu: the configuration and the sets of this process (see fork_child). */
static pthread_mutex_t queues_mu = PTHREAD_MUTEX_INITIALIZER;
static int connections;        /* 0: not read yet in this process */
static _Atomic(struct queue_set *) sets[EMU_MAX_DEVICES];
/* In a forked child: its parents' sets, kept reachable and never used. */
static struct queue_set *inherited;

/* CUDA documents 1..32 (default 8) and no behaviour for other values; the MPS notes say the
 * driver may allocate a different number than requested.  The emulator says what it does in
 * one line and goes on: a number outside the range is clamped, anything else means 8. */
static int read_connections(void)
{
    const char *env = getenv("CUDA_DEVICE_MAX_CONNECTIONS");
    if (env == NULL)
        return DEFAULT_CONNECTIONS;
    char *end;
    long v = strtol(env, &end, 10);
    if (*env == '\0' || *end != '\0' || end == env) {
        fprintf(stderr, "usbyte emulator: CUDA_DEVICE_MAX_CONNECTIONS='%s' is not a number; using the default %d\n",
                env, DEFAULT_CONNECTIONS);
        return DEFAULT_CONNECTIONS;
    }
    if (v < 1 || v > MAX_CONNECTIONS) {
        int n = v < 1 ? 1 : MAX_CONNECTIONS;
        fprintf(stderr, "usbyte emulator: CUDA_DEVICE_MAX_CONNECTIONS=%s is outside 1..%d; using %d\n", env,
                MAX_CONNECTIONS, n);
        return n;
    }
    return (int)v;
}

static int connections_locked(void)
{
    if (connections == 0)
        connections = read_connections();
    return connections;
}

int emu_queue_count(void)
{
    pthread_mutex_lock(&queues_mu);
    int n = connections_locked();
    pthread_mutex_unlock(&queues_mu);
    return n;
}

static struct queue_set *set_of(int device)
{
    struct queue_set *set = atomic_load(&sets[device]);
    if (set != NULL)
        return set;
    int n = connections_locked();
    set = calloc(1, sizeof *set + (size_t)n * sizeof set->q[0]);
    if (set == NULL) {
        fprintf(stderr, "usbyte emulator: out of memory for the hardware queues of device %d\n", device);
        abort();
    }
    set->n = n;
    for (int i = 0; i < n; i++) {
        pthread_mutex_init(&set->q[i].mu, NULL);
        set->q[i].device = device;
        set->q[i].index = i;
    }
    atomic_store(&sets[device], set);
    return set;
}

struct emu_queue *emu_queue_assign(int device, bool legacy)
{
    if (device < 0 || device >= EMU_MAX_DEVICES)
        device = 0;
    pthread_mutex_lock(&queues_mu);
    struct queue_set *set = set_of(device);
    int index = legacy ? 0 : (int)(++set->created % (uint64_t)set->n);
    pthread_mutex_unlock(&queues_mu);
    return &set->q[index];
}

void emu_queue_push(struct CUstream_st *s, struct emu_op *op)
{
    struct emu_queue *q = s->queue;
    pthread_mutex_lock(&q->mu);
    op->queue = q;
    op->stream = s;
    op->ticket = q->next_ticket++;
    op->begun = false;
    op->qnext = NULL;
    if (q->tail)
        q->tail->qnext = op;
    else
        q->head = op;
    q->tail = op;
    if (op->info.kind == EMU_OP_RECORD) {
        op->info.rec->op = op;
        op->info.rec->state = EMU_RECORD_QUEUED;
    }
    pthread_mutex_unlock(&q->mu);
}

/* With q->mu held; op is the queue's head. */
static void begin_locked(struct emu_queue *q, struct emu_op *op)
{
    if (op->begun)
        return;
    op->begun = true;
    q->head = op->qnext;
    if (q->head == NULL)
        q->tail = NULL;
    q->begun++;
    op->stream->begun_ops++;
    if (op->info.kind == EMU_OP_RECORD) {
        op->info.rec->state = EMU_RECORD_BEGUN;
        op->info.rec->op = NULL;
    }
    if (q->head != NULL && q->head->stream != op->stream)
        pthread_cond_signal(&q->head->stream->turn_cv);
}

/* While its op waits for its turn the worker says so; which op holds the queue changes
 * without waking it, so the hang dump names the queue's first op itself (queue_check.c). */
bool emu_queue_take_turn(struct CUstream_st *s, struct emu_op *op)
{
    struct emu_queue *q = op->queue;
    pthread_mutex_lock(&q->mu);
    if (q->head != op && !emu_unloading()) {
        char what[EMU_ACTIVITY_LEN];
        snprintf(what, sizeof what, "%s: waiting for its turn in queue %d", op->what, q->index);
        emu_stream_set_activity(s, what);
        while (q->head != op && !emu_unloading())
            pthread_cond_wait(&s->turn_cv, &q->mu);
    }
    bool mine = q->head == op;
    if (mine && !emu_op_is_wait(op->info.kind))
        begin_locked(q, op);
    pthread_mutex_unlock(&q->mu);
    return mine;
}

void emu_queue_begin(struct emu_op *op)
{
    struct emu_queue *q = op->queue;
    pthread_mutex_lock(&q->mu);
    begin_locked(q, op);
    pthread_mutex_unlock(&q->mu);
}

void emu_queues_for_each(void (*fn)(struct emu_queue *q, void *ctx), void *ctx)
{
    for (int d = 0; d < EMU_MAX_DEVICES; d++) {
        struct queue_set *set = atomic_load(&sets[d]);
        if (set == NULL)
            continue;
        for (int i = 0; i < set->n; i++)
            fn(&set->q[i], ctx);
    }
}

static void wake_queue(struct emu_queue *q, void *ctx)
{
    (void)ctx;
    pthread_mutex_lock(&q->mu);
    for (struct CUstream_st *s = emu_all_streams(); s; s = s->all_next)
        if (emu_stream_owned(s))
            pthread_cond_broadcast(&s->turn_cv);
    pthread_mutex_unlock(&q->mu);
}

void emu_queues_wake_all(void)
{
    emu_queues_for_each(wake_queue, NULL);
}

/* fork: queues_mu is held across it.  The child is a new CUDA process: it reads the variable
 * again when it makes its context and gets fresh queues; its parent's sets (whose locks a
 * thread it does not have may hold) stay reachable and unused, like its parent's streams. */
void emu_queues_fork_prepare(void)
{
    pthread_mutex_lock(&queues_mu);
}

void emu_queues_fork_parent(void)
{
    pthread_mutex_unlock(&queues_mu);
}

void emu_queues_fork_child(void)
{
    connections = 0;
    for (int d = 0; d < EMU_MAX_DEVICES; d++) {
        struct queue_set *set = atomic_load(&sets[d]);
        if (set != NULL) {
            set->older = inherited;
            inherited = set;
            atomic_store(&sets[d], NULL);
        }
    }
    pthread_mutex_unlock(&queues_mu);
}

/* ---- the private interface ---- */
EMU_EXPORT int usbyteEmuQueueCount(void)
{
    return emu_queue_count();
}
