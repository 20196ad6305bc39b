/* Queue deadlocks: a wait at the head of a hardware queue that can never be satisfied because
 * the op that would satisfy it (the event's record, a write of the waited word, the work an
 * implicit wait waits for) is queued behind it, in the same queue or behind another such wait.
 *
 * The analysis holds every queue's lock and plays the queues forward from what is submitted
 * now: an op not a wait begins when it reaches the head of its queue (whatever its stream
 * still runs before it is assumed to finish), a wait when it is satisfied by what has begun,
 * for real or in the play (its written values, its records, its stream positions).  The heads
 * left are the waits that nothing submitted can release.  One of them is a deadlock when the
 * op that would release it sits behind it in its queue, or behind another such head whose own
 * releaser leads back round: a wait for work nobody has submitted yet is not one.
 *
 * It runs in the SIGUSR2 handler too, so it allocates nothing, uses no stdio, and there only
 * tries the locks (the interrupted thread may hold one). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "dump_text.h"
#include "export.h"
#include "op.h"
#include "queue.h"
#include "queue_check.h"
#include "record.h"
#include "stream_object.h"
#include "values.h"

#define MAX_QUEUES (64 * 32)

struct snapshot {
    int n;
    struct emu_queue *q[MAX_QUEUES];
};

static void collect(struct emu_queue *q, void *ctx)
{
    struct snapshot *ss = ctx;
    if (ss->n < MAX_QUEUES)
        ss->q[ss->n++] = q;
}

static void unlock_first(struct snapshot *ss, int n)
{
    for (int i = n - 1; i >= 0; i--)
        pthread_mutex_unlock(&ss->q[i]->mu);
}

/* Locks every queue in device/index order (the only place that holds more than one). */
static bool lock_all(struct snapshot *ss, bool try_only)
{
    for (int attempt = 0; attempt < 200; attempt++) {
        int i = 0;
        for (; i < ss->n; i++) {
            if (!try_only)
                pthread_mutex_lock(&ss->q[i]->mu);
            else if (pthread_mutex_trylock(&ss->q[i]->mu) != 0)
                break;
        }
        if (i == ss->n)
            return true;
        unlock_first(ss, i);
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    return false;
}

static uint64_t played_value(const struct snapshot *ss, const struct emu_op *wait)
{
    const struct emu_op *latest = NULL;
    for (int i = 0; i < ss->n; i++)
        for (const struct emu_op *op = ss->q[i]->head; op; op = op->qnext)
            if (op->sim_begun && op->info.kind == EMU_OP_WRITE_VALUE && op->info.addr == wait->info.addr &&
                op->info.is64 == wait->info.is64 && (latest == NULL || op->sim_order > latest->sim_order))
                latest = op;
    return latest ? latest->info.value : emu_value_load(wait->info.addr, wait->info.is64);
}

static bool played_satisfied(const struct snapshot *ss, const struct emu_op *op)
{
    const struct emu_op_info *in = &op->info;
    switch (in->kind) {
    case EMU_OP_WAIT_EVENT:
        return atomic_load_explicit(&in->rec->done, memory_order_acquire) || in->rec->state == EMU_RECORD_BEGUN ||
               (in->rec->state == EMU_RECORD_QUEUED && in->rec->op->sim_begun);
    case EMU_OP_WAIT_VALUE:
        return emu_value_satisfied(in->condition, in->is64, in->value, played_value(ss, op));
    case EMU_OP_WAIT_POSITION:
        return in->target->sim_begun_ops >= in->target_seq;
    default:
        return true;
    }
}

static void play(struct snapshot *ss)
{
    for (struct CUstream_st *s = emu_all_streams(); s; s = s->all_next)
        if (emu_stream_owned(s))
            s->sim_begun_ops = s->begun_ops;
    for (int i = 0; i < ss->n; i++) {
        ss->q[i]->sim_cursor = ss->q[i]->head;
        for (struct emu_op *op = ss->q[i]->head; op; op = op->qnext) {
            op->sim_begun = false;
            op->sim_order = 0;
        }
    }
    uint64_t order = 0;
    bool progress = true;
    while (progress) {
        progress = false;
        for (int i = 0; i < ss->n; i++) {
            struct emu_queue *q = ss->q[i];
            struct emu_op *op;
            while ((op = q->sim_cursor) != NULL) {
                if (emu_op_is_wait(op->info.kind) && !played_satisfied(ss, op))
                    break;
                op->sim_begun = true;
                op->sim_order = ++order;
                op->stream->sim_begun_ops++;
                q->sim_cursor = op->qnext;
                progress = true;
            }
        }
    }
}

/* The op not yet begun (in the play) that would satisfy the stuck wait h, preferring one in
 * h's own queue; NULL when nothing submitted would. */
static struct emu_op *releaser(const struct snapshot *ss, const struct emu_op *h)
{
    const struct emu_op_info *in = &h->info;
    switch (in->kind) {
    case EMU_OP_WAIT_EVENT:
        return in->rec->state == EMU_RECORD_QUEUED && !in->rec->op->sim_begun ? in->rec->op : NULL;
    case EMU_OP_WAIT_VALUE: {
        struct emu_op *found = NULL;
        for (int i = 0; i < ss->n; i++)
            for (struct emu_op *op = ss->q[i]->head; op; op = op->qnext)
                if (!op->sim_begun && op->info.kind == EMU_OP_WRITE_VALUE && op->info.addr == in->addr &&
                    op->info.is64 == in->is64 && emu_value_satisfied(in->condition, in->is64, in->value, op->info.value) &&
                    (found == NULL || (op->queue == h->queue && found->queue != h->queue)))
                    found = op;
        return found;
    }
    case EMU_OP_WAIT_POSITION:
        for (int i = 0; i < ss->n; i++)
            for (struct emu_op *op = ss->q[i]->head; op; op = op->qnext)
                if (op->stream == in->target && op->seq == in->target_seq)
                    return op->sim_begun ? NULL : op;
        return NULL;
    default:
        return NULL;
    }
}

/* Whether the stuck head of q can never begin: following each stuck head to the queue that
 * holds its releaser comes back round (to q, or into a cycle that q waits on). */
static bool deadlocked(const struct snapshot *ss, const struct emu_queue *q)
{
    const struct emu_queue *cur = q;
    for (int steps = 0; steps <= ss->n; steps++) {
        const struct emu_op *rel = cur->sim_cursor ? releaser(ss, cur->sim_cursor) : NULL;
        if (rel == NULL)
            return false;
        if (rel->queue == q)
            return true;
        cur = rel->queue;
    }
    return true;   /* more steps than queues: a cycle that q's head waits on */
}

static size_t put_queue(char *line, size_t n, size_t cap, const struct emu_queue *q)
{
    if (q->device != 0) {
        n = emu_put_str(line, n, cap, "device ");
        n = emu_put_u64(line, n, cap, (unsigned long long)q->device);
        n = emu_put_str(line, n, cap, " ");
    }
    n = emu_put_str(line, n, cap, "queue ");
    return emu_put_u64(line, n, cap, (unsigned long long)q->index);
}

/* "[pid P] queue Q: stream S": how every line of the diagnostic begins. */
static size_t put_head(char *line, size_t n, size_t cap, const struct emu_queue *q, unsigned long long stream)
{
    n = emu_put_str(line, n, cap, "[pid ");
    n = emu_put_u64(line, n, cap, (unsigned long long)getpid());
    n = emu_put_str(line, n, cap, "] ");
    n = put_queue(line, n, cap, q);
    n = emu_put_str(line, n, cap, ": stream ");
    return emu_put_u64(line, n, cap, stream);
}

static size_t put_wait(char *line, size_t n, size_t cap, const struct emu_op *h)
{
    const struct emu_op_info *in = &h->info;
    switch (in->kind) {
    case EMU_OP_WAIT_VALUE:
        n = emu_put_str(line, n, cap, in->is64 ? "cuStreamWaitValue64(" : "cuStreamWaitValue32(");
        n = emu_put_hex(line, n, cap, (unsigned long long)(uintptr_t)in->addr);
        n = emu_put_str(line, n, cap, " ");
        n = emu_put_str(line, n, cap, emu_value_condition_name(in->condition));
        n = emu_put_str(line, n, cap, " ");
        n = emu_put_u64(line, n, cap, (unsigned long long)in->value);
        return emu_put_str(line, n, cap, ")");
    case EMU_OP_WAIT_EVENT:
        n = emu_put_str(line, n, cap, "cudaStreamWaitEvent(event ");
        n = emu_put_u64(line, n, cap, (unsigned long long)in->rec->event_id);
        return emu_put_str(line, n, cap, ")");
    default:
        n = emu_put_str(line, n, cap, "implicit wait for stream ");
        n = emu_put_u64(line, n, cap, (unsigned long long)in->target->id);
        n = emu_put_str(line, n, cap, " op ");
        return emu_put_u64(line, n, cap, (unsigned long long)in->target_seq);
    }
}

static size_t put_releaser(char *line, size_t n, size_t cap, const struct emu_op *h, const struct emu_op *rel)
{
    switch (h->info.kind) {
    case EMU_OP_WAIT_VALUE:
        n = emu_put_str(line, n, cap, "the write of ");
        return emu_put_u64(line, n, cap, (unsigned long long)rel->info.value);
    case EMU_OP_WAIT_EVENT:
        n = emu_put_str(line, n, cap, "the record of event ");
        return emu_put_u64(line, n, cap, (unsigned long long)h->info.rec->event_id);
    default:
        n = emu_put_str(line, n, cap, "op ");
        return emu_put_u64(line, n, cap, (unsigned long long)rel->seq);
    }
}

static void report(int fd, const struct snapshot *ss, const struct emu_queue *q)
{
    const struct emu_op *h = q->sim_cursor;
    const struct emu_op *rel = releaser(ss, h);
    char line[512];
    size_t cap = sizeof line - 1, n = 0;
    n = put_head(line, n, cap, q, h->stream->id);
    n = emu_put_str(line, n, cap, "'s ");
    n = put_wait(line, n, cap, h);
    n = emu_put_str(line, n, cap, " blocks the queue; ");
    n = put_releaser(line, n, cap, h, rel);
    n = emu_put_str(line, n, cap, " that would release it is queued ");
    if (rel->queue == q) {
        n = emu_put_str(line, n, cap, "behind it on stream ");
        n = emu_put_u64(line, n, cap, (unsigned long long)rel->stream->id);
        n = emu_put_str(line, n, cap, rel->stream == h->stream ? " (same stream)" : " (same queue)");
    } else if (rel == rel->queue->sim_cursor) {
        n = emu_put_str(line, n, cap, "on stream ");
        n = emu_put_u64(line, n, cap, (unsigned long long)rel->stream->id);
        n = emu_put_str(line, n, cap, " at the head of ");
        n = put_queue(line, n, cap, rel->queue);
        n = emu_put_str(line, n, cap, ", itself a blocked ");
        n = put_wait(line, n, cap, rel);
    } else {
        const struct emu_op *other = rel->queue->sim_cursor;
        n = emu_put_str(line, n, cap, "on stream ");
        n = emu_put_u64(line, n, cap, (unsigned long long)rel->stream->id);
        n = emu_put_str(line, n, cap, " in ");
        n = put_queue(line, n, cap, rel->queue);
        n = emu_put_str(line, n, cap, ", behind stream ");
        n = emu_put_u64(line, n, cap, (unsigned long long)other->stream->id);
        n = emu_put_str(line, n, cap, "'s ");
        n = put_wait(line, n, cap, other);
    }
    n = emu_put_str(line, n, cap, ": deadlock\n");
    emu_write_all(fd, line, n);
}

/* "[pid N] queue Q: stream S's <op> first, K ops not begun": where each queue stands. */
static void report_head(int fd, const struct emu_queue *q)
{
    uint64_t pending = 0;
    for (const struct emu_op *op = q->head; op; op = op->qnext)
        pending++;
    char line[256];
    size_t cap = sizeof line - 1, n = 0;
    n = put_head(line, n, cap, q, q->head->stream->id);
    n = emu_put_str(line, n, cap, "'s ");
    n = emu_put_str(line, n, cap, q->head->what);
    n = emu_put_str(line, n, cap, " first, ");
    n = emu_put_u64(line, n, cap, (unsigned long long)pending);
    n = emu_put_str(line, n, cap, pending == 1 ? " op not begun\n" : " ops not begun\n");
    emu_write_all(fd, line, n);
}

int emu_queue_deadlocks(int fd, bool try_only, bool heads)
{
    struct snapshot ss;
    ss.n = 0;
    emu_queues_for_each(collect, &ss);
    if (!lock_all(&ss, try_only)) {
        if (fd >= 0) {
            char line[96];
            size_t n = emu_put_str(line, 0, sizeof line, "[pid ");
            n = emu_put_u64(line, n, sizeof line, (unsigned long long)getpid());
            n = emu_put_str(line, n, sizeof line, "] queues: busy, no deadlock analysis\n");
            emu_write_all(fd, line, n);
        }
        return -1;
    }
    if (heads && fd >= 0)
        for (int i = 0; i < ss.n; i++)
            if (ss.q[i]->head != NULL)
                report_head(fd, ss.q[i]);
    play(&ss);
    int count = 0;
    for (int i = 0; i < ss.n; i++) {
        if (ss.q[i]->sim_cursor == NULL || !deadlocked(&ss, ss.q[i]))
            continue;
        count++;
        if (fd >= 0)
            report(fd, &ss, ss.q[i]);
    }
    unlock_first(&ss, ss.n);
    return count;
}

EMU_EXPORT int usbyteEmuQueueDeadlocks(int fd)
{
    return emu_queue_deadlocks(fd, false, false);
}
