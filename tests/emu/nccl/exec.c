/* Running a batch of NCCL operations on a stream worker: wait for the communicator's turn (host
 * issue order), rendezvous with the other ranks in shared memory checking signatures, move the
 * data, and hold the stream until the modelled end time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dtype.h"
#include "nccl_emu.h"
#include "oplog.h"

/* ---- diagnostics ---- */

static void append(char **buf, size_t *len, size_t *cap, const char *s)
{
    size_t n = strlen(s);
    if (*len + n + 1 > *cap) {
        size_t ncap = (*cap + n + 1) * 2;
        char *nb = realloc(*buf, ncap);
        if (nb == NULL)
            return;
        *buf = nb;
        *cap = ncap;
    }
    memcpy(*buf + *len, s, n + 1);
    *len += n;
}

/* Every rank that sees a mismatch gets here; one prints, all exit. */
static _Noreturn void coll_mismatch(struct ncclComm *c, const struct emu_coll *op)
{
    if (!emu_claim_abort(c)) {
        emu_check_aborted(c);
        _exit(EMU_EXIT_MISMATCH);
    }
    int slot = (int)(op->index & 1);
    /* Give the ranks that have not arrived yet a moment, so the line lists every signature;
     * a rank that never arrives is shown as such. */
    uint64_t deadline = emu_now_ns() + 200000000ull;
    for (;;) {
        uint32_t w = atomic_load(&c->shm->wake);
        int all = 1;
        for (int r = 0; r < c->nranks; r++)
            all &= atomic_load(&c->ranks[r].sig[slot].index1) == op->index + 1;
        if (all || emu_now_ns() > deadline)
            break;
        emu_wait_change(c, w);
    }
    char *msg = NULL, line[256];
    size_t len = 0, cap = 0;
    emu_fmt(line, sizeof line, "usbyte-emu: rank signature mismatch on comm %s op #%llu:", c->hash,
             (unsigned long long)op->index);
    append(&msg, &len, &cap, line);
    for (int r = 0; r < c->nranks; r++) {
        struct emu_sig *s = &c->ranks[r].sig[slot];
        char sig[160];
        if (atomic_load(&s->index1) == op->index + 1)
            emu_format_sig(sig, sizeof sig, (enum emu_kind)s->kind, s->count, s->dtype, s->op, s->root);
        else
            emu_fmt(sig, sizeof sig, "(has not reached op #%llu)", (unsigned long long)op->index);
        emu_fmt(line, sizeof line, "%s rank%d %s", r ? ";" : "", r, sig);
        append(&msg, &len, &cap, line);
    }
    append(&msg, &len, &cap, "\n");
    emu_abort_all(c, msg ? msg : "usbyte-emu: rank signature mismatch\n");
}

static _Noreturn void p2p_mismatch(struct ncclComm *c, const struct emu_coll *op, const struct emu_chan *ch,
                                   const char *why)
{
    if (!emu_claim_abort(c)) {
        emu_check_aborted(c);
        _exit(EMU_EXIT_MISMATCH);
    }
    const char *sd = emu_dtype_name(ch->dtype), *rd = emu_dtype_name(op->dtype);
    char msg[512];
    emu_fmt(msg, sizeof msg,
            "usbyte-emu: send/recv mismatch on comm %s (%s): rank%d send #%llu count=%llu %s to rank%d; "
            "rank%d recv #%llu count=%llu %s from rank%d\n",
            c->hash, why, op->root, (unsigned long long)ch->ordinal, (unsigned long long)ch->count, sd ? sd : "?",
            c->rank, c->rank, (unsigned long long)op->index, (unsigned long long)op->count, rd ? rd : "?", op->root);
    emu_abort_all(c, msg);
}

/* The emulator never touches memory outside a live allocation: a buffer freed (or never
 * allocated) by the time the operation runs stops the process with a message. */
static void check_range(struct ncclComm *c, const struct emu_coll *op, const void *p, size_t bytes, const char *which)
{
    if (bytes == 0 || usbyteEmuValidRange(p, bytes))
        return;
    fprintf(stderr, "usbyte-emu: %s #%llu on comm %s: %s buffer %p (+%zu bytes) is not live device memory "
            "when the operation runs (freed too early?)\n", emu_kind_api_name(op->kind),
            (unsigned long long)op->index, c->hash, which, p, bytes);
    abort();
}

static void check_buffers(struct ncclComm *c, const struct emu_coll *op)
{
    size_t b = op->count * emu_dtype_size(op->dtype), p = (size_t)c->nranks;
    int root = c->rank == op->root;
    switch (op->kind) {
    case EMU_ALLREDUCE: check_range(c, op, op->send, b, "send"); check_range(c, op, op->recv, b, "recv"); break;
    case EMU_BROADCAST: if (root) check_range(c, op, op->send, b, "send"); check_range(c, op, op->recv, b, "recv"); break;
    case EMU_REDUCE: check_range(c, op, op->send, b, "send"); if (root) check_range(c, op, op->recv, b, "recv"); break;
    case EMU_ALLGATHER: check_range(c, op, op->send, b, "send"); check_range(c, op, op->recv, b * p, "recv"); break;
    case EMU_REDUCESCATTER: check_range(c, op, op->send, b * p, "send"); check_range(c, op, op->recv, b, "recv"); break;
    case EMU_SEND: check_range(c, op, op->send, b, "send"); break;
    case EMU_RECV: check_range(c, op, op->recv, b, "recv"); break;
    }
}

/* ---- collectives ---- */

static unsigned char *slot(struct ncclComm *c, int r)
{
    return c->slots + (size_t)r * EMU_SLOT_BYTES;
}

static int bar(struct ncclComm *c)
{
    return emu_barrier(c, &c->shm->op_bar_count, &c->shm->op_bar_gen);
}

/* Data movement through the per-rank slots, chunk by chunk: publish, barrier, combine in rank
 * order (identical results on every rank), barrier before the slots are reused. */
static int coll_data(struct ncclComm *c, struct emu_coll *op)
{
    if (op->premul && op->scalar_dev != NULL) {
        check_range(c, op, op->scalar_dev, emu_dtype_size(op->dtype), "PreMulSum scalar");
        memcpy(op->scalar, op->scalar_dev, emu_dtype_size(op->dtype));
    }
    const int me = c->rank, p = c->nranks;
    const size_t es = emu_dtype_size(op->dtype);
    const unsigned char *send = op->send;
    unsigned char *recv = op->recv;
    size_t chunk = EMU_SLOT_BYTES / es;
    if (op->kind == EMU_REDUCESCATTER)
        chunk = EMU_SLOT_BYTES / (es * (size_t)p);
    for (size_t off = 0; off < op->count; off += chunk) {
        size_t n = op->count - off < chunk ? op->count - off : chunk, nb = n * es;
        switch (op->kind) {
        case EMU_ALLREDUCE:
        case EMU_REDUCE:
            memcpy(slot(c, me), send + off * es, nb);
            if (op->premul)
                emu_scale(slot(c, me), n, op->dtype, op->scalar);
            if (bar(c))
                return -1;
            if (op->kind == EMU_ALLREDUCE || me == op->root) {
                unsigned char *dst = recv + off * es;
                memcpy(dst, slot(c, 0), nb);
                for (int r = 1; r < p; r++)
                    emu_reduce(dst, slot(c, r), n, op->dtype, op->op);
                if (op->op == ncclAvg)
                    emu_divide(dst, n, op->dtype, p);
            }
            break;
        case EMU_BROADCAST:
            if (me == op->root)
                memcpy(slot(c, me), send + off * es, nb);
            if (bar(c))
                return -1;
            memcpy(recv + off * es, slot(c, op->root), nb);
            break;
        case EMU_ALLGATHER:
            memcpy(slot(c, me), send + off * es, nb);
            if (bar(c))
                return -1;
            for (int r = 0; r < p; r++)
                memmove(recv + ((size_t)r * op->count + off) * es, slot(c, r), nb);
            break;
        case EMU_REDUCESCATTER: {
            for (int d = 0; d < p; d++)
                memcpy(slot(c, me) + (size_t)d * nb, send + ((size_t)d * op->count + off) * es, nb);
            if (op->premul)
                emu_scale(slot(c, me), n * (size_t)p, op->dtype, op->scalar);
            if (bar(c))
                return -1;
            unsigned char *dst = recv + off * es;
            memcpy(dst, slot(c, 0) + (size_t)me * nb, nb);
            for (int r = 1; r < p; r++)
                emu_reduce(dst, slot(c, r) + (size_t)me * nb, n, op->dtype, op->op);
            if (op->op == ncclAvg)
                emu_divide(dst, n, op->dtype, p);
            break;
        }
        case EMU_SEND:
        case EMU_RECV:
            break;
        }
        if (bar(c))
            return -1;
    }
    return 0;
}

static void describe_wait(char *buf, size_t size, const char *head, const int *missing, int nmissing)
{
    emu_fmt(buf, size, "%s: waiting for rank%s ", head, nmissing > 1 ? "s" : "");
    for (int i = 0; i < nmissing; i++) {
        size_t n = strlen(buf);
        emu_fmt(buf + n, size - n, "%s%d", i ? "," : "", missing[i]);
    }
}

/* What the ranks must agree on (USBYTE_EMU_CHECK, fixed by the communicator's creator). */
/* This rank's signature of op, posted for the other ranks to check (the index last). */
static void post_signature(struct ncclComm *c, const struct emu_coll *op)
{
    struct emu_sig *mine = &c->ranks[c->rank].sig[op->index & 1];
    mine->arrival_ns = emu_now_ns();
    mine->count = op->count;
    mine->kind = op->kind;
    mine->dtype = op->dtype;
    mine->op = op->op;
    mine->root = op->root;
    atomic_store(&mine->index1, op->index + 1);
    emu_wake(c);
}

static bool same_signature(const struct ncclComm *c, const struct emu_sig *s, const struct emu_coll *op)
{
    if (s->kind != (int)op->kind || s->root != op->root)
        return false;
    if (c->model.check == EMU_CHECK_BYTES)
        return s->count * emu_dtype_size(s->dtype) == op->count * emu_dtype_size(op->dtype);
    return s->count == op->count && s->dtype == op->dtype && s->op == op->op;
}

void emu_coll_check_posted(struct ncclComm *c, const struct emu_coll *op)
{
    int slotno = (int)(op->index & 1);
    for (int r = 0; r < c->nranks; r++) {
        struct emu_sig *s = &c->ranks[r].sig[slotno];
        if (r == c->rank || atomic_load(&s->index1) != op->index + 1 || same_signature(c, s, op))
            continue;
        post_signature(c, op); /* the line lists this rank's too, as if the operation had run */
        coll_mismatch(c, op);
    }
}

/* Runs one collective that the stream could begin at `queued`; returns when it released the
 * stream, or 0 when it was cut short (an abort, an error). */
static uint64_t run_collective_on_device(struct ncclComm *c, struct emu_coll *op, uint64_t queued)
{
    char head[96];
    emu_fmt(head, sizeof head, "%s #%llu comm %s", emu_kind_api_name(op->kind), (unsigned long long)op->index, c->hash);
    usbyteEmuSetActivity(head);
    check_buffers(c, op);

    const int slotno = (int)(op->index & 1);
    const struct emu_sig *mine = &c->ranks[c->rank].sig[slotno];
    post_signature(c, op);

    int *missing = malloc(sizeof(int) * (size_t)c->nranks);
    int last_reported = -1;
    uint64_t last_arrival = 0;
    for (;;) {
        uint32_t w = atomic_load(&c->shm->wake);
        int nmissing = 0;
        last_arrival = 0;
        for (int r = 0; r < c->nranks; r++) {
            struct emu_sig *s = &c->ranks[r].sig[slotno];
            if (atomic_load(&s->index1) != op->index + 1) {
                if (missing)
                    missing[nmissing] = r;
                nmissing++;
                continue;
            }
            if (!same_signature(c, s, op))
                coll_mismatch(c, op);
            if (s->arrival_ns > last_arrival)
                last_arrival = s->arrival_ns;
        }
        if (nmissing == 0)
            break;
        emu_check_aborted(c);
        if (atomic_load(&c->local_abort)) {
            free(missing);
            return 0;
        }
        if (nmissing != last_reported && missing) {
            char what[160];
            describe_wait(what, sizeof what, head, missing, nmissing);
            usbyteEmuSetActivity(what);
            last_reported = nmissing;
        }
        emu_wait_change(c, w);
    }
    free(missing);
    usbyteEmuSetActivity(head);
    if (c->model.payload && coll_data(c, op) != 0)
        return 0;
    uint64_t data_end = emu_now_ns();
    size_t elem = emu_dtype_size(op->dtype);
    double us = emu_model_collective_inplace_us(&c->model, op->kind, op->count, elem, c->nranks, op->send == op->recv) *
                emu_model_jitter(&c->model, c->rank, op->index);
    uint64_t model_end = last_arrival + (uint64_t)(us * 1000.0);
    emu_sleep_until_ns(model_end);
    uint64_t end = emu_now_ns();
    usbyteEmuWorkerOpEndsAtNs(end); /* the log line below takes no device time */
    emu_oplog_write(c, &(struct emu_oplog_rec){emu_kind_name(op->kind), op->index, op->count * elem, queued,
                                               mine->arrival_ns, last_arrival, data_end, model_end, end});
    return end;
}

/* The collective occupies the device from this rank's arrival to the release of the stream,
 * waiting for its peers included (a real NCCL kernel spins on its SMs meanwhile). */
static uint64_t run_collective(struct ncclComm *c, struct emu_coll *op, uint64_t queued)
{
    usbyteEmuDeviceCommBegin(c->device);
    uint64_t end = run_collective_on_device(c, op, queued);
    usbyteEmuDeviceCommEnd(c->device, end);
    return end;
}

/* ---- point-to-point ---- */

struct p2p_state {
    size_t done;
    bool started, posted_last, finished;
};

static bool blocked_by_earlier(const struct emu_unit *u, const struct p2p_state *st, int i)
{
    for (int j = 0; j < i; j++)
        if (!st[j].finished && u->p2p[j].kind == u->p2p[i].kind && u->p2p[j].root == u->p2p[i].root)
            return true;
    return false;
}

/* One step of a send: post the next chunk when the mailbox is free, or notice the last one taken. */
static bool send_step(struct ncclComm *c, const struct emu_coll *op, struct p2p_state *st, uint64_t arrival,
                      uint64_t *t0)
{
    struct emu_chan *ch = emu_chan(c, c->rank, op->root);
    if (atomic_load(&ch->full))
        return false;
    if (st->posted_last) {
        if (ch->recv_arrival_ns > *t0)
            *t0 = ch->recv_arrival_ns;
        st->finished = true;
        return true;
    }
    size_t total = op->count * emu_dtype_size(op->dtype);
    size_t len = 0;
    if (c->model.payload)
        len = total - st->done < EMU_CHAN_BYTES ? total - st->done : EMU_CHAN_BYTES;
    ch->ordinal = op->index;
    ch->count = op->count;
    ch->dtype = op->dtype;
    ch->offset = st->done;
    ch->len = len;
    ch->send_arrival_ns = arrival;
    ch->last = !c->model.payload || st->done + len == total;
    if (len)
        memcpy(emu_chan_data(ch), (const unsigned char *)op->send + st->done, len);
    st->done += len;
    st->posted_last = ch->last;
    st->started = true;
    atomic_store(&ch->full, 1);
    emu_wake(c);
    return true;
}

static bool recv_step(struct ncclComm *c, const struct emu_coll *op, struct p2p_state *st, uint64_t arrival,
                      uint64_t *t0)
{
    struct emu_chan *ch = emu_chan(c, op->root, c->rank);
    if (!atomic_load(&ch->full))
        return false;
    size_t total = op->count * emu_dtype_size(op->dtype);
    if (!st->started) {
        if (ch->count != op->count || ch->dtype != op->dtype)
            p2p_mismatch(c, op, ch, "different count or type");
        ch->recv_arrival_ns = arrival;
        if (ch->send_arrival_ns > *t0)
            *t0 = ch->send_arrival_ns;
        st->started = true;
    }
    if (ch->offset + ch->len > total || ch->offset != st->done)
        p2p_mismatch(c, op, ch, "chunk outside the receive buffer");
    if (ch->len)
        memcpy((unsigned char *)op->recv + ch->offset, emu_chan_data(ch), ch->len);
    st->done += ch->len;
    st->finished = ch->last;
    atomic_store(&ch->full, 0);
    emu_wake(c);
    return true;
}

/* All the sends and receives of a batch progress together (a ring of sends and receives in one
 * group completes); operations on the same (peer, direction) go in issue order. */
/* Runs the batch's point-to-point part (as run_collective). */
static uint64_t run_p2p_on_device(struct ncclComm *c, const struct emu_unit *u, uint64_t queued)
{
    char head[96];
    emu_fmt(head, sizeof head, "ncclSend/ncclRecv x%d comm %s", u->np2p, c->hash);
    usbyteEmuSetActivity(head);
    struct p2p_state *st = calloc((size_t)u->np2p, sizeof *st);
    int *waiting = malloc(sizeof(int) * (size_t)u->np2p);
    if (st == NULL || waiting == NULL) {
        fprintf(stderr, "usbyte-emu: out of memory in send/recv\n");
        abort();
    }
    uint64_t arrival = emu_now_ns(), t0 = arrival;
    size_t sent = 0, received = 0;
    int with_peer = 0, remaining = u->np2p;
    for (int i = 0; i < u->np2p; i++) {
        const struct emu_coll *op = &u->p2p[i];
        check_buffers(c, op);
        size_t b = op->count * emu_dtype_size(op->dtype);
        if (op->kind == EMU_SEND)
            sent += b;
        else
            received += b;
        with_peer |= op->root != c->rank;
    }
    char last_what[160] = "";
    while (remaining > 0) {
        uint32_t w = atomic_load(&c->shm->wake);
        bool progress = false;
        for (int i = 0; i < u->np2p; i++) {
            if (st[i].finished || blocked_by_earlier(u, st, i))
                continue;
            const struct emu_coll *op = &u->p2p[i];
            bool moved = op->kind == EMU_SEND ? send_step(c, op, &st[i], arrival, &t0)
                                              : recv_step(c, op, &st[i], arrival, &t0);
            if (moved && st[i].finished)
                remaining--;
            progress |= moved;
        }
        if (progress || remaining == 0)
            continue;
        emu_check_aborted(c);
        if (atomic_load(&c->local_abort))
            break;
        int nw = 0;
        for (int i = 0; i < u->np2p; i++)
            if (!st[i].finished && !blocked_by_earlier(u, st, i))
                waiting[nw++] = u->p2p[i].root;
        char what[160];
        describe_wait(what, sizeof what, head, waiting, nw);
        if (strcmp(what, last_what) != 0) {
            usbyteEmuSetActivity(what);
            memcpy(last_what, what, sizeof what);
        }
        emu_wait_change(c, w);
    }
    free(st);
    free(waiting);
    if (remaining != 0)
        return 0;
    uint64_t data_end = emu_now_ns();
    uint64_t model_end = t0 + (uint64_t)(emu_model_p2p_us(&c->model, sent, received, with_peer) * 1000.0);
    emu_sleep_until_ns(model_end);
    uint64_t end = emu_now_ns();
    usbyteEmuWorkerOpEndsAtNs(end);
    emu_oplog_write(c, &(struct emu_oplog_rec){"p2p", u->p2p[0].index, sent + received, queued, arrival, t0,
                                               data_end, model_end, end});
    return end;
}

static uint64_t run_p2p(struct ncclComm *c, const struct emu_unit *u, uint64_t queued)
{
    usbyteEmuDeviceCommBegin(c->device);
    uint64_t end = run_p2p_on_device(c, u, queued);
    usbyteEmuDeviceCommEnd(c->device, end);
    return end;
}

/* ---- batches ---- */

static void wait_turn(struct ncclComm *c, struct emu_unit *u)
{
    pthread_mutex_lock(&c->mu);
    if (c->run_ticket != u->ticket) {
        char what[160];
        emu_fmt(what, sizeof what, "%s: waiting for %llu earlier op(s) of comm %s issued on other streams", u->what,
                 (unsigned long long)(u->ticket - c->run_ticket), c->hash);
        usbyteEmuSetActivity(what);
    }
    while (c->run_ticket != u->ticket && !atomic_load(&c->local_abort))
        pthread_cond_wait(&c->cv, &c->mu);
    pthread_mutex_unlock(&c->mu);
}

static void execute(struct emu_unit *u)
{
    struct ncclComm *c = u->comm;
    /* What an event recorded just before the batch is stamped with (for the op log). */
    uint64_t queued = u->enqueued_ns, reached;
    if (emu_oplog_enabled() && usbyteEmuWorkerReachedNs(&reached) && reached > queued)
        queued = reached;
    wait_turn(c, u);
    for (int i = 0; i < u->ncoll && !atomic_load(&c->local_abort); i++) {
        uint64_t end = run_collective(c, &u->coll[i], queued);
        queued = end ? end : emu_now_ns();
    }
    if (u->np2p > 0 && !atomic_load(&c->local_abort))
        run_p2p(c, u, queued);
    pthread_mutex_lock(&c->mu);
    c->run_ticket++;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

void emu_unit_release(struct emu_unit *u)
{
    pthread_mutex_lock(&u->mu);
    bool last = ++u->left == u->nstreams;
    pthread_mutex_unlock(&u->mu);
    if (!last)
        return;
    pthread_mutex_destroy(&u->mu);
    pthread_cond_destroy(&u->cv);
    free(u->coll);
    free(u->p2p);
    free(u);
}

/* With several streams the batch was enqueued on each; the last worker to reach it (once
 * the host has sealed the stream count) runs it, the others hold their streams until done. */
void emu_unit_run(void *arg)
{
    struct emu_unit *u = arg;
    pthread_mutex_lock(&u->mu);
    u->arrived++;
    for (;;) {
        if (u->done)
            break;
        if (u->sealed && u->arrived == u->nstreams && !u->claimed) {
            u->claimed = true;
            pthread_mutex_unlock(&u->mu);
            execute(u);
            pthread_mutex_lock(&u->mu);
            u->done = true;
            pthread_cond_broadcast(&u->cv);
            break;
        }
        if (u->nstreams > 1)
            usbyteEmuSetActivity(u->what);
        pthread_cond_wait(&u->cv, &u->mu);
    }
    pthread_mutex_unlock(&u->mu);
    emu_unit_release(u);
}
