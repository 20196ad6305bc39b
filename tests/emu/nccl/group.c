/* Groups and issuing: every operation call goes through the calling thread's group list (a
 * call outside a group is a group of one).  At the outermost ncclGroupEnd the operations are
 * cut into one batch per communicator, which takes the communicator's next ticket, collective
 * indices and message ordinals in issue order, and is enqueued on its streams. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cupti.h>   /* the driver callback id and params struct of cuLaunchKernelEx */

#include "dtype.h"
#include "group.h"

struct pending {
    struct ncclComm *comm;
    cudaStream_t stream;
    struct emu_coll op;
};

static _Thread_local struct {
    int depth;
    struct pending *ops;
    int n, cap;
    struct ncclComm **inits;
    int ninit, initcap;
    ncclResult_t error;    /* an operation of the open group failed */
} grp;

ncclResult_t emu_group_error(ncclResult_t r)
{
    if (grp.depth > 0 && r != ncclSuccess && r != ncclInProgress && grp.error == ncclSuccess)
        grp.error = r;
    return r;
}

int emu_group_depth(void)
{
    return grp.depth;
}

void emu_group_start(void)
{
    grp.depth++;
}

ncclResult_t emu_group_add_init(struct ncclComm *c)
{
    if (grp.ninit == grp.initcap) {
        int cap = grp.initcap ? grp.initcap * 2 : 8;
        struct ncclComm **p = realloc(grp.inits, sizeof *p * (size_t)cap);
        if (p == NULL)
            return emu_error(ncclSystemError, "out of memory");
        grp.inits = p;
        grp.initcap = cap;
    }
    grp.inits[grp.ninit++] = c;
    c->init_pending = true;
    return ncclSuccess;
}

static void finish_inits(void)
{
    for (int i = 0; i < grp.ninit; i++)
        emu_comm_wait_all_attached(grp.inits[i]);
    free(grp.inits);
    grp.inits = NULL;
    grp.ninit = grp.initcap = 0;
}

static void clear_ops(void)
{
    free(grp.ops);
    grp.ops = NULL;
    grp.n = grp.cap = 0;
}

static void describe_batch(struct emu_unit *u)
{
    struct ncclComm *c = u->comm;
    if (u->ncoll == 1 && u->np2p == 0) {
        char sig[96];
        const struct emu_coll *op = &u->coll[0];
        emu_format_sig(sig, sizeof sig, op->kind, op->count, op->dtype, op->op, op->root);
        emu_fmt(u->what, sizeof u->what, "%s #%llu comm %s %s", emu_kind_api_name(op->kind),
                 (unsigned long long)op->index, c->hash, strchr(sig, ' ') ? strchr(sig, ' ') + 1 : sig);
    } else if (u->ncoll == 0) {
        emu_fmt(u->what, sizeof u->what, "ncclSend/ncclRecv x%d comm %s", u->np2p, c->hash);
    } else {
        emu_fmt(u->what, sizeof u->what, "ncclGroup comm %s ops #%llu-#%llu, %d send/recv", c->hash,
                 (unsigned long long)u->coll[0].index, (unsigned long long)u->coll[u->ncoll - 1].index, u->np2p);
    }
}

/* NCCL launches a batch's kernel with cuLaunchKernelEx on the stream, from the calling thread:
 * a CUPTI driver-domain subscriber sees that launch there (whatever runtime NCCL links). */
static cudaError_t launch_on(cudaStream_t stream, struct emu_unit *u)
{
    CUlaunchConfig config = {1, 1, 1, 1, 1, 1, 0, (CUstream)stream, NULL, 0};
    cuLaunchKernelEx_params p = {&config, (CUfunction)(uintptr_t)emu_unit_run, NULL, NULL};
    uint64_t correlation = 0;
    uint32_t id = usbyteEmuApiCallback(1, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, 0, "cuLaunchKernelEx", &p, NULL, 0,
                                       &correlation);
    cudaError_t e = usbyteEmuStreamEnqueue(stream, emu_unit_run, u, u->what);
    CUresult r = e == cudaSuccess ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
    usbyteEmuApiCallback(1, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, 1, "cuLaunchKernelEx", &p, &r, id, &correlation);
    return e;
}

/* Graph capture: a batch issued on a capturing stream is a graph node; each launch of the graph
 * issues it afresh (the next ticket and collective indices of its communicator, in launch order,
 * as NCCL's persistent plans run in the order their graphs are launched).  The captured unit is
 * the template, numbered at each clone. */
static void *unit_clone(const void *arg)
{
    const struct emu_unit *t = arg;
    struct emu_unit *u = calloc(1, sizeof *u);
    if (u == NULL)
        return NULL;
    u->coll = calloc((size_t)t->ncoll + 1, sizeof *u->coll);
    u->p2p = calloc((size_t)t->np2p + 1, sizeof *u->p2p);
    if (u->coll == NULL || u->p2p == NULL) {
        free(u->coll);
        free(u->p2p);
        free(u);
        return NULL;
    }
    struct ncclComm *c = t->comm;
    u->comm = c;
    u->ncoll = t->ncoll;
    u->np2p = t->np2p;
    memcpy(u->coll, t->coll, sizeof *u->coll * (size_t)t->ncoll);
    memcpy(u->p2p, t->p2p, sizeof *u->p2p * (size_t)t->np2p);
    pthread_mutex_init(&u->mu, NULL);
    pthread_cond_init(&u->cv, NULL);
    pthread_mutex_lock(&c->mu);
    u->ticket = c->issued++;
    for (int i = 0; i < u->ncoll; i++)
        u->coll[i].index = c->next_coll++;
    for (int i = 0; i < u->np2p; i++)
        u->p2p[i].index = (u->p2p[i].kind == EMU_SEND ? c->send_ordinal : c->recv_ordinal)[u->p2p[i].root]++;
    pthread_mutex_unlock(&c->mu);
    describe_batch(u);
    u->nstreams = 1;
    u->sealed = true;
    u->enqueued_ns = emu_now_ns();
    return u;
}

static void unit_drop(void *arg)
{
    struct emu_unit *u = arg;
    pthread_mutex_destroy(&u->mu);
    pthread_cond_destroy(&u->cv);
    free(u->coll);
    free(u->p2p);
    free(u);
}

static ncclResult_t capture_batch(struct ncclComm *c, const int *idx, int n, cudaStream_t stream)
{
    struct emu_unit *u = calloc(1, sizeof *u);
    if (u == NULL)
        return emu_error(ncclSystemError, "out of memory");
    for (int i = 0; i < n; i++)
        (grp.ops[idx[i]].op.kind == EMU_SEND || grp.ops[idx[i]].op.kind == EMU_RECV) ? u->np2p++ : u->ncoll++;
    u->coll = calloc((size_t)u->ncoll + 1, sizeof *u->coll);
    u->p2p = calloc((size_t)u->np2p + 1, sizeof *u->p2p);
    u->comm = c;
    pthread_mutex_init(&u->mu, NULL);
    pthread_cond_init(&u->cv, NULL);
    if (u->coll == NULL || u->p2p == NULL) {
        unit_drop(u);
        return emu_error(ncclSystemError, "out of memory");
    }
    int nc = 0, np = 0;
    for (int i = 0; i < n; i++) {
        const struct emu_coll *op = &grp.ops[idx[i]].op;
        if (op->kind == EMU_SEND || op->kind == EMU_RECV)
            u->p2p[np++] = *op;
        else
            u->coll[nc++] = *op;
    }
    snprintf(u->what, sizeof u->what, "captured NCCL batch comm %s", c->hash);
    cudaError_t e = usbyteEmuStreamEnqueueCapturable(stream, 0, emu_unit_run, u, u->what, unit_clone, unit_drop);
    if (e != cudaSuccess) {
        unit_drop(u);
        return emu_error(ncclUnhandledCudaError, "capturing on stream failed: CUDA error %d", (int)e);
    }
    return ncclSuccess;
}

/* Builds and enqueues the batch of communicator c from the pending ops in `idx`. */
static ncclResult_t issue_batch(struct ncclComm *c, const int *idx, int n)
{
    int capturing = 0;
    for (int i = 0; i < n; i++)
        capturing += usbyteEmuStreamCapturing(grp.ops[idx[i]].stream, 0);
    if (capturing) {
        for (int i = 1; i < n; i++)
            if (grp.ops[idx[i]].stream != grp.ops[idx[0]].stream)
                return emu_error(ncclInvalidUsage, "a batch over several streams, one of them capturing: the "
                                                   "emulator captures a batch on one stream only");
        return capture_batch(c, idx, n, grp.ops[idx[0]].stream);
    }
    struct emu_unit *u = calloc(1, sizeof *u);
    cudaStream_t *streams = malloc(sizeof *streams * (size_t)n);
    if (u == NULL || streams == NULL) {
        free(u);
        free(streams);
        return emu_error(ncclSystemError, "out of memory");
    }
    for (int i = 0; i < n; i++)
        (grp.ops[idx[i]].op.kind == EMU_SEND || grp.ops[idx[i]].op.kind == EMU_RECV) ? u->np2p++ : u->ncoll++;
    u->coll = calloc((size_t)u->ncoll + 1, sizeof *u->coll);
    u->p2p = calloc((size_t)u->np2p + 1, sizeof *u->p2p);
    int nstreams = 0;
    u->comm = c;
    pthread_mutex_init(&u->mu, NULL);
    pthread_cond_init(&u->cv, NULL);

    pthread_mutex_lock(&c->mu);
    u->ticket = c->issued++;
    int nc = 0, np = 0;
    for (int i = 0; i < n; i++) {
        struct pending *pd = &grp.ops[idx[i]];
        struct emu_coll op = pd->op;
        if (op.kind == EMU_SEND)
            op.index = c->send_ordinal[op.root]++;
        else if (op.kind == EMU_RECV)
            op.index = c->recv_ordinal[op.root]++;
        else
            op.index = c->next_coll++;
        if (op.kind == EMU_SEND || op.kind == EMU_RECV)
            u->p2p[np++] = op;
        else
            u->coll[nc++] = op;
        int seen = 0;
        for (int s = 0; s < nstreams; s++)
            seen |= streams[s] == pd->stream;
        if (!seen)
            streams[nstreams++] = pd->stream;
    }
    describe_batch(u);
    u->nstreams = nstreams;
    u->enqueued_ns = emu_now_ns();
    int ok = 0;
    cudaError_t err = cudaSuccess;
    for (int s = 0; s < nstreams; s++) {
        cudaError_t e = launch_on(streams[s], u);
        if (e == cudaSuccess)
            ok++;
        else
            err = e;
    }
    if (ok == 0) {
        /* Nothing will run it: give the numbers back so later operations do not wait for it. */
        c->issued--;
        c->next_coll -= (uint64_t)u->ncoll;
        for (int i = 0; i < u->np2p; i++)
            (u->p2p[i].kind == EMU_SEND ? c->send_ordinal : c->recv_ordinal)[u->p2p[i].root]--;
    } else {
        pthread_mutex_lock(&u->mu);
        u->nstreams = ok;
        u->sealed = true;
        pthread_cond_broadcast(&u->cv);
        pthread_mutex_unlock(&u->mu);
    }
    pthread_mutex_unlock(&c->mu);
    free(streams);
    if (ok == 0) {
        pthread_mutex_destroy(&u->mu);
        pthread_cond_destroy(&u->cv);
        free(u->coll);
        free(u->p2p);
        free(u);
    }
    if (err != cudaSuccess)
        return emu_error(ncclUnhandledCudaError, "enqueueing on stream failed: CUDA error %d (invalid stream?)", (int)err);
    return ncclSuccess;
}

/* NCCL: "When a single thread is managing multiple devices, group semantics must be used.
 * This is because every NCCL call may have to block, waiting for other threads/ranks to arrive,
 * before effectively posting the NCCL operation on the given stream" (connection set-up on a
 * first use, NCCL_LAUNCH_MODE=GROUP's barrier, buffer registration).  The emulator blocks every
 * time for the ranks of the same process: the launch returns once every other rank of c in
 * this process has launched as many collectives.  Ranks in one group (ncclCommInitAll's
 * communicators, a loop over devices inside ncclGroupStart/End) arrive together; a thread that
 * launches one rank's collective alone waits for ever for the rank only it would launch next,
 * as NCCL may. */
#define LOCAL_WAIT_SAY_NS 5000000000ull

static void wait_local_ranks(struct ncclComm *c)
{
    uint64_t mine = atomic_load(&c->ranks[c->rank].launched);
    int32_t pid = (int32_t)getpid();
    uint64_t since = emu_now_ns();
    bool said = false;
    for (int r = 0; r < c->nranks; r++) {
        const struct emu_rank_area *peer = &c->ranks[r];
        if (r == c->rank || peer->pid != pid)
            continue;
        for (;;) {
            uint32_t w = atomic_load(&c->shm->wake);
            if (atomic_load(&peer->launched) >= mine || atomic_load(&peer->left) || atomic_load(&c->local_abort))
                break;
            emu_check_aborted(c);
            if (!said && emu_now_ns() - since > LOCAL_WAIT_SAY_NS) {
                fprintf(stderr, "usbyte-emu: rank %d: comm %s: the launch of collective #%llu waits for rank %d of "
                        "this process to launch it (one thread that drives several ranks must launch their calls in "
                        "one group: NCCL may wait here for ever)\n", c->rank, c->hash, (unsigned long long)(mine - 1), r);
                said = true;
            }
            emu_wait_change(c, w);
        }
    }
}

/* NCCL 2.22 and later (NCCL_RUNTIME_CONNECT=1, its default) set up an algorithm's connections at
 * the first collective that uses it, inside the ncclGroupEnd that launches it (ncclPrepareTasks,
 * then ncclCollPreconnect): bootstrap exchanges with the peers, so the host blocks there until
 * every rank of the communicator gets to its own first use of that algorithm.  The emulator does
 * the same for its algorithms (emu_model_algorithm): before anything of the group is enqueued,
 * each communicator of the group marks the algorithms its collectives need for the first time
 * (all of them first: NCCL connects a group's communicators together), then waits until every
 * rank that has not left has marked them too.  A peer gone or an abort ends the wait with the
 * error, and nothing of the group is enqueued. */
#define CONNECT_WAIT_SAY_NS 5000000000ull

static ncclResult_t wait_connected(struct ncclComm *c, uint32_t need, const struct emu_coll *first)
{
    uint64_t since = emu_now_ns();
    bool said = false;
    for (;;) {
        uint32_t w = atomic_load(&c->shm->wake);
        int missing = -1;
        for (int r = 0; r < c->nranks && missing < 0; r++) {
            const struct emu_rank_area *peer = &c->ranks[r];
            if (r != c->rank && !atomic_load(&peer->left) && (atomic_load(&peer->connected) & need) != need)
                missing = r;
        }
        if (missing < 0)
            return ncclSuccess;
        /* A peer that posted another collective at this index never comes here: a mismatch. */
        emu_coll_check_posted(c, first);
        if (atomic_load(&c->local_abort))
            return emu_error(ncclInvalidUsage, "comm %s: aborted while its connections were set up", c->hash);
        ncclResult_t async = emu_async_error(c);
        if (async != ncclSuccess)
            return emu_error(async, "comm %s: a peer is gone while the connections of its first %s collective were "
                             "set up", c->hash, need & (1u << EMU_ALGO_TREE) ? "small" : "large");
        emu_check_aborted(c);
        if (!said && emu_now_ns() - since > CONNECT_WAIT_SAY_NS) {
            fprintf(stderr, "usbyte-emu: rank %d: comm %s: the first %s collective waits for rank %d to set up its "
                    "connections too (NCCL blocks the host here until every rank gets to its first collective of that "
                    "algorithm)\n", c->rank, c->hash, need & (1u << EMU_ALGO_TREE) ? "small" : "large", missing);
            said = true;
        }
        emu_wait_change(c, w);
    }
}

static ncclResult_t connect_algorithms(void)
{
    struct ncclComm **comms = malloc(sizeof *comms * (size_t)(grp.n + 1));
    uint32_t *need = calloc((size_t)grp.n + 1, sizeof *need);
    uint64_t *seen = calloc((size_t)grp.n + 1, sizeof *seen);          /* collectives of comms[k] so far */
    struct emu_coll *first = calloc((size_t)grp.n + 1, sizeof *first); /* its first needing a set-up */
    int n = 0;
    if (!comms || !need || !seen || !first) {
        free(comms);
        free(need);
        free(seen);
        free(first);
        return emu_error(ncclSystemError, "out of memory");
    }
    for (int i = 0; i < grp.n; i++) {
        const struct emu_coll *op = &grp.ops[i].op;
        struct ncclComm *c = grp.ops[i].comm;
        if (op->kind == EMU_SEND || op->kind == EMU_RECV)
            continue;
        int k = 0;
        while (k < n && comms[k] != c)
            k++;
        if (k == n)
            comms[n++] = c;
        uint64_t index = c->next_coll + seen[k]++; /* as issue_batch numbers it */
        uint32_t bit = 1u << emu_model_algorithm(&c->model, op->kind, (uint64_t)op->count * emu_dtype_size(op->dtype));
        struct emu_rank_area *mine = &c->ranks[c->rank];
        if (atomic_load(&mine->connected) & bit)
            continue;
        atomic_fetch_or(&mine->connected, bit);
        emu_wake(c);
        if (!need[k]) {
            first[k] = *op;
            first[k].index = index;
        }
        need[k] |= bit;
    }
    ncclResult_t res = ncclSuccess;
    for (int k = 0; k < n && res == ncclSuccess; k++)
        if (need[k])
            res = wait_connected(comms[k], need[k], &first[k]);
    free(comms);
    free(need);
    free(seen);
    free(first);
    return res;
}

static ncclResult_t flush(void)
{
    ncclResult_t res = ncclSuccess;
    finish_inits();
    if ((res = connect_algorithms()) != ncclSuccess) {
        clear_ops();
        return res;
    }
    int *idx = malloc(sizeof(int) * (size_t)(grp.n + 1));
    char *taken = calloc((size_t)grp.n + 1, 1);
    struct ncclComm **launched = malloc(sizeof *launched * (size_t)(grp.n + 1));
    int nlaunched = 0;
    if (idx == NULL || taken == NULL || launched == NULL) {
        free(idx);
        free(taken);
        free(launched);
        clear_ops();
        return emu_error(ncclSystemError, "out of memory");
    }
    /* Batches go out in the order of their communicators' ids, not of first appearance: real
     * NCCL launches a group's communicators together, so ranks may list them in different
     * orders, and enqueueing them in a rank-independent order keeps a shared stream from
     * waiting on comm A on one rank and comm B on another. */
    for (;;) {
        int first = -1;
        for (int i = 0; i < grp.n; i++)
            if (!taken[i] && (first < 0 || strcmp(grp.ops[i].comm->id_text, grp.ops[first].comm->id_text) < 0))
                first = i;
        if (first < 0)
            break;
        int n = 0;
        for (int j = first; j < grp.n; j++)
            if (!taken[j] && grp.ops[j].comm == grp.ops[first].comm) {
                taken[j] = 1;
                idx[n++] = j;
            }
        struct ncclComm *c = grp.ops[first].comm;
        bool collective = false;
        for (int i = 0; i < n; i++)
            collective |= grp.ops[idx[i]].op.kind != EMU_SEND && grp.ops[idx[i]].op.kind != EMU_RECV;
        ncclResult_t r = issue_batch(c, idx, n);
        if (r != ncclSuccess && res == ncclSuccess)
            res = r;
        if (r == ncclSuccess && collective) {
            pthread_mutex_lock(&c->mu);
            atomic_store(&c->ranks[c->rank].launched, c->next_coll);
            pthread_mutex_unlock(&c->mu);
            emu_wake(c);
            launched[nlaunched++] = c;
        }
    }
    /* Every batch of the group is launched before any waits: ranks of one group arrive together. */
    for (int i = 0; i < nlaunched; i++)
        wait_local_ranks(launched[i]);
    free(idx);
    free(taken);
    free(launched);
    clear_ops();
    return res;
}

ncclResult_t emu_group_add(struct ncclComm *c, cudaStream_t stream, const struct emu_coll *op)
{
    if (grp.n == grp.cap) {
        int cap = grp.cap ? grp.cap * 2 : 16;
        struct pending *p = realloc(grp.ops, sizeof *p * (size_t)cap);
        if (p == NULL)
            return emu_error(ncclSystemError, "out of memory");
        grp.ops = p;
        grp.cap = cap;
    }
    grp.ops[grp.n++] = (struct pending){c, stream, *op};
    return grp.depth == 0 ? flush() : ncclSuccess;
}

ncclResult_t emu_group_end(void)
{
    if (grp.depth == 0)
        return emu_error(ncclInvalidUsage, "ncclGroupEnd: not in a group (missing ncclGroupStart)");
    if (--grp.depth > 0)
        return ncclSuccess;
    ncclResult_t error = grp.error;
    grp.error = ncclSuccess;
    if (error != ncclSuccess) {
        /* NCCL drops the whole group (groupCleanup); communicators created in it still finish. */
        finish_inits();
        clear_ops();
        return error;
    }
    return flush();
}

/* The model's time of what is pending: collectives one after the other, plus each
 * communicator's point-to-point part. */
static double estimate_us(void)
{
    double total = 0.0;
    char *taken = calloc((size_t)grp.n + 1, 1);
    for (int i = 0; taken && i < grp.n; i++) {
        if (taken[i])
            continue;
        struct ncclComm *c = grp.ops[i].comm;
        size_t sent = 0, received = 0;
        int with_peer = 0, any_p2p = 0;
        for (int j = i; j < grp.n; j++) {
            if (taken[j] || grp.ops[j].comm != c)
                continue;
            taken[j] = 1;
            const struct emu_coll *op = &grp.ops[j].op;
            size_t es = emu_dtype_size(op->dtype);
            if (op->kind == EMU_SEND || op->kind == EMU_RECV) {
                any_p2p = 1;
                *(op->kind == EMU_SEND ? &sent : &received) += op->count * es;
                with_peer |= op->root != c->rank;
            } else {
                total += emu_model_collective_us(&c->model, op->kind, op->count, es, c->nranks);
            }
        }
        if (any_p2p)
            total += emu_model_p2p_us(&c->model, sent, received, with_peer);
    }
    free(taken);
    return total;
}

ncclResult_t emu_group_simulate_end(ncclSimInfo_t *info)
{
    if (info == NULL || info->magic != 0x74685283u || info->size < sizeof(ncclSimInfo_t))
        return emu_error(ncclInvalidArgument, "ncclGroupSimulateEnd: simInfo not initialised with NCCL_SIM_INFO_INITIALIZER");
    if (grp.depth == 0)
        return emu_error(ncclInvalidUsage, "ncclGroupSimulateEnd: not in a group (missing ncclGroupStart)");
    info->estimatedTime = (float)estimate_us();
    if (--grp.depth > 0)
        return ncclSuccess;
    grp.error = ncclSuccess;
    /* Like NCCL: the simulated operations are dropped, not launched. */
    finish_inits();
    clear_ops();
    return ncclSuccess;
}
