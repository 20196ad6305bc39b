/* The exported NCCL 2.28 API: argument checking in the NCCL manner, then group.c / shm.c.
 * Every function is defined as pnccl<Name> (GLOBAL) with nccl<Name> a WEAK alias, like the
 * real libnccl.so.2. */
#include <errno.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dtype.h"
#include "group.h"

#define NCCL_CONFIG_MAGIC 0xcafebeefu

static ncclResult_t check_comm(const struct ncclComm *c, const char *fn)
{
    if (c == NULL)
        return emu_error(ncclInvalidArgument, "%s: comm argument is NULL", fn);
    if (c->magic != EMU_COMM_MAGIC)
        return emu_error(ncclInvalidArgument, "%s: comm %p is not a live communicator", fn, (const void *)c);
    return ncclSuccess;
}

static ncclResult_t check_buf(const void *p, size_t bytes, const char *fn, const char *which)
{
    if (bytes == 0)
        return ncclSuccess;
    if (p == NULL)
        return emu_error(ncclInvalidArgument, "%s: %s is NULL", fn, which);
    if (!usbyteEmuValidRange(p, bytes))
        return emu_error(ncclInvalidArgument, "%s: %s %p (+%zu bytes) is not inside one device allocation", fn,
                         which, p, bytes);
    return ncclSuccess;
}

#define TRY(x)                              \
    do {                                    \
        ncclResult_t r_ = (x);              \
        if (r_ != ncclSuccess)              \
            return r_;                      \
    } while (0)


/* USBYTE_EMU_FAIL_COUNT=N: the first allreduce of N elements in each process is refused as after
 * a peer's death, and its communicator keeps that asynchronous error (every later operation is
 * refused, ncclCommGetAsyncError says so): a death at exactly that call, which a real one cannot
 * be timed to (e.g. the first collective the runtime issues on its own at some iteration). */
static bool injected_death(struct ncclComm *comm, size_t count)
{
    static atomic_bool fired;
    const char *env = getenv("USBYTE_EMU_FAIL_COUNT");
    if (env == NULL || *env == '\0' || atomic_load(&fired))
        return false;
    char *end;
    unsigned long long n = strtoull(env, &end, 10);
    if (*end != '\0' || n != count || atomic_exchange(&fired, true))
        return false;
    int expected = ncclSuccess;
    atomic_compare_exchange_strong(&comm->async_error, &expected, ncclRemoteError);
    fprintf(stderr, "usbyte-emu: rank %d: comm %s: a peer's death injected at an allreduce of %zu elements "
            "(USBYTE_EMU_FAIL_COUNT): ncclRemoteError\n", comm->rank, comm->hash, count);
    return true;
}

/* Common checks and issue of one operation.  As NCCL 2.28's ncclEnqueueCheck: a communicator
 * with an asynchronous error (a peer gone) refuses every later operation with that error
 * (ncclCommEnsureReady), and an error inside a group is the group's too: its outermost
 * ncclGroupEnd returns it and launches nothing (ncclGroupErrCheck). */
static ncclResult_t issue_checked(enum emu_kind kind, const void *send, void *recv, size_t count, int dtype, int op,
                                  int root, ncclComm_t comm, cudaStream_t stream);

static ncclResult_t issue(enum emu_kind kind, const void *send, void *recv, size_t count, int dtype, int op, int root,
                          ncclComm_t comm, cudaStream_t stream)
{
    ncclResult_t r = issue_checked(kind, send, recv, count, dtype, op, root, comm, stream);
    return r == ncclSuccess ? r : emu_group_error(r);
}

static ncclResult_t issue_checked(enum emu_kind kind, const void *send, void *recv, size_t count, int dtype, int op, int root,
                          ncclComm_t comm, cudaStream_t stream)
{
    const char *fn = emu_kind_api_name(kind);
    TRY(check_comm(comm, fn));
    ncclResult_t async = emu_async_error(comm);
    if (async != ncclSuccess)
        return emu_error(async, "%s: communicator %s has an asynchronous error (%s): operation refused", fn,
                         comm->hash, async == ncclRemoteError ? "a peer is gone" : "NCCL error");
    if (kind == EMU_ALLREDUCE && injected_death(comm, count))
        return emu_error(ncclRemoteError, "%s: communicator %s has an asynchronous error (a peer is gone): operation "
                         "refused (USBYTE_EMU_FAIL_COUNT=%zu)", fn, comm->hash, count);
    size_t es = emu_dtype_size(dtype);
    if (es == 0)
        return emu_error(ncclInvalidArgument, "%s: invalid data type %d", fn, dtype);
    int reduces = kind == EMU_ALLREDUCE || kind == EMU_REDUCE || kind == EMU_REDUCESCATTER;
    const struct emu_premul_op *premul = NULL;
    if (reduces) {
        if (op >= ncclNumOps && op < ncclNumOps + EMU_MAX_PREMUL_OPS && comm->premul[op - ncclNumOps].live) {
            premul = &comm->premul[op - ncclNumOps];
            if (premul->dtype != dtype)
                return emu_error(ncclInvalidArgument, "%s: PreMulSum op %d was created for %s, used with %s", fn, op,
                                 emu_dtype_name(premul->dtype), emu_dtype_name(dtype));
        } else if (op < 0 || op >= ncclNumOps) {
            return emu_error(ncclInvalidArgument, "%s: invalid reduction op %d", fn, op);
        }
        if (!emu_dtype_reducible(dtype))
            return emu_error(ncclInvalidArgument, "%s: reductions of %s are not emulated", fn, emu_dtype_name(dtype));
    } else {
        op = 0;
    }
    int has_root = kind == EMU_BROADCAST || kind == EMU_REDUCE || kind == EMU_SEND || kind == EMU_RECV;
    if (has_root && (root < 0 || root >= comm->nranks))
        return emu_error(ncclInvalidArgument, "%s: %s %d out of range [0, %d)", fn,
                         kind == EMU_SEND || kind == EMU_RECV ? "peer" : "root", root, comm->nranks);
    if (!has_root)
        root = 0;
    size_t b = count * es, p = (size_t)comm->nranks;
    if (count != 0 && b / count != es)
        return emu_error(ncclInvalidArgument, "%s: count %zu overflows", fn, count);
    int is_root = comm->rank == root;
    switch (kind) {
    case EMU_ALLREDUCE: TRY(check_buf(send, b, fn, "sendbuff")); TRY(check_buf(recv, b, fn, "recvbuff")); break;
    case EMU_BROADCAST:
        if (is_root)
            TRY(check_buf(send, b, fn, "sendbuff"));
        TRY(check_buf(recv, b, fn, "recvbuff"));
        break;
    case EMU_REDUCE:
        TRY(check_buf(send, b, fn, "sendbuff"));
        if (is_root)
            TRY(check_buf(recv, b, fn, "recvbuff"));
        break;
    case EMU_ALLGATHER: TRY(check_buf(send, b, fn, "sendbuff")); TRY(check_buf(recv, b * p, fn, "recvbuff")); break;
    case EMU_REDUCESCATTER: TRY(check_buf(send, b * p, fn, "sendbuff")); TRY(check_buf(recv, b, fn, "recvbuff")); break;
    case EMU_SEND: TRY(check_buf(send, b, fn, "sendbuff")); break;
    case EMU_RECV: TRY(check_buf(recv, b, fn, "recvbuff")); break;
    }
    struct emu_coll c = {.kind = kind, .send = send, .recv = recv, .count = count, .dtype = dtype, .op = op, .root = root};
    if (premul != NULL) {
        c.premul = true;
        if (premul->residence == ncclScalarDevice)
            c.scalar_dev = premul->dev;
        else
            memcpy(c.scalar, premul->value, es);
    }
    return emu_group_add(comm, stream, &c);
}

/* ---- versions, ids, errors ---- */

EMU_EXPORT ncclResult_t pncclGetVersion(int *version)
{
    if (version == NULL)
        return emu_error(ncclInvalidArgument, "ncclGetVersion: version is NULL");
    *version = NCCL_VERSION_CODE;
    return ncclSuccess;
}
EMU_NCCL_ALIAS(ncclGetVersion);

EMU_EXPORT ncclResult_t pncclGetUniqueId(ncclUniqueId *uniqueId)
{
    if (uniqueId == NULL)
        return emu_error(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
    emu_make_unique_id(uniqueId);
    return ncclSuccess;
}
EMU_NCCL_ALIAS(ncclGetUniqueId);

EMU_EXPORT const char *pncclGetErrorString(ncclResult_t result)
{
    switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
    }
}
EMU_NCCL_ALIAS(ncclGetErrorString);

EMU_EXPORT const char *pncclGetLastError(ncclComm_t comm)
{
    (void)comm;
    return emu_last_error();
}
EMU_NCCL_ALIAS(ncclGetLastError);

/* Memory for NCCL buffers: plain emulated device memory (the real one adds registration
 * granularity, which nothing here needs). */
EMU_EXPORT ncclResult_t pncclMemAlloc(void **ptr, size_t size)
{
    if (ptr == NULL)
        return emu_error(ncclInvalidArgument, "ncclMemAlloc: ptr is NULL");
    if (usbyteEmuMemAlloc(ptr, size) != cudaSuccess)
        return emu_error(ncclUnhandledCudaError, "ncclMemAlloc: allocating %zu bytes failed", size);
    return ncclSuccess;
}
EMU_NCCL_ALIAS(ncclMemAlloc);

EMU_EXPORT ncclResult_t pncclMemFree(void *ptr)
{
    if (ptr != NULL && usbyteEmuMemFree(ptr) != cudaSuccess)
        return emu_error(ncclInvalidArgument, "ncclMemFree: %p was not allocated by ncclMemAlloc", ptr);
    return ncclSuccess;
}
EMU_NCCL_ALIAS(ncclMemFree);

/* ---- communicators ---- */

/* Internal calls never go through exported symbols, so an interposer of the public names
 * sees each user call once (real NCCL does not call itself through its PLT either). */
/* NCCL 2.28's initEnv (misc/param.cc), once, before it reads any parameter: the lines NAME=VALUE
 * of NCCL_CONF_FILE (when set and not empty) or else ~/.nccl.conf (the passwd entry's home), then
 * of /etc/nccl.conf, go into the environment without overwriting what is there ('#' starts a
 * comment line; the value is the rest of the line). */
static void env_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return;
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    while ((got = getline(&line, &cap, f)) != -1) {
        if (line[0] == '#')
            continue;
        if (got > 0 && line[got - 1] == '\n')
            line[got - 1] = '\0';
        char *eq = strchr(line, '=');
        if (eq == NULL)
            continue;
        *eq = '\0';
        setenv(line, eq + 1, 0);
    }
    free(line);
    fclose(f);
}

static void init_env_once(void)
{
    char path[1024];
    const char *user = getenv("NCCL_CONF_FILE");
    if (user && user[0]) {
        env_file(user);
    } else {
        struct passwd *pw = getpwuid(getuid());
        if (pw && pw->pw_dir) {
            snprintf(path, sizeof path, "%s/.nccl.conf", pw->pw_dir);
            env_file(path);
        }
    }
    env_file("/etc/nccl.conf");
}

static void init_env(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, init_env_once);
}

/* Whether a new communicator blocks, as NCCL 2.28 decides it (init.cc: parseCommConfig, or
 * copyCommConfig for a split or shrink without a config, then envConfigOverride): the config's
 * value (blocking when undefined), else the parent's, and NCCL_COMM_BLOCKING 0 or 1 over both,
 * read as every integer parameter (ncclLoadParam: strtoll, base 0, the environment after
 * initEnv). */
static int blocking_of(const ncclConfig_t *config, const struct ncclComm *parent)
{
    int blocking = 1;
    if (config != NULL)
        blocking = config->blocking == 0 ? 0 : 1;
    else if (parent != NULL)
        blocking = parent->blocking;
    init_env();
    const char *env = getenv("NCCL_COMM_BLOCKING");
    if (env && env[0]) {
        errno = 0;
        long long v = strtoll(env, NULL, 0);
        if (errno == 0 && (v == 0 || v == 1))
            blocking = (int)v;
    }
    return blocking;
}

static ncclResult_t init_rank_config(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t *config,
                                     const struct ncclComm *parent)
{
    if (comm == NULL)
        return emu_error(ncclInvalidArgument, "ncclCommInitRank: comm is NULL");
    if (config != NULL && (config->magic != NCCL_CONFIG_MAGIC || config->size < offsetof(ncclConfig_t, blocking)))
        return emu_error(ncclInvalidArgument, "ncclCommInitRankConfig: config not initialised with NCCL_CONFIG_INITIALIZER");
    struct ncclComm *c;
    TRY(emu_comm_attach(&c, nranks, &commId, rank));
    c->device = usbyteEmuCurrentDevice(); /* NCCL binds a communicator to the current device */
    c->blocking = blocking_of(config, parent);
    if (emu_group_depth() > 0) {
        ncclResult_t r = emu_group_add_init(c);
        if (r != ncclSuccess) {
            emu_comm_detach(c);
            return r;
        }
    } else {
        emu_comm_wait_all_attached(c);
    }
    *comm = c;
    return ncclSuccess;
}

EMU_EXPORT ncclResult_t pncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank,
                                                ncclConfig_t *config)
{
    return init_rank_config(comm, nranks, commId, rank, config, NULL);
}
EMU_NCCL_ALIAS(ncclCommInitRankConfig);

EMU_EXPORT ncclResult_t pncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)
{
    return init_rank_config(comm, nranks, commId, rank, NULL, NULL);
}
EMU_NCCL_ALIAS(ncclCommInitRank);

EMU_EXPORT ncclResult_t pncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist)
{
    if (comms == NULL || ndev < 1)
        return emu_error(ncclInvalidArgument, "ncclCommInitAll: comms is NULL or ndev %d < 1", ndev);
    ncclUniqueId id;
    emu_make_local_unique_id(&id);
    emu_group_start();
    ncclResult_t res = ncclSuccess;
    int made = 0;
    for (int i = 0; i < ndev && res == ncclSuccess; i++) {
        res = init_rank_config(&comms[i], ndev, id, i, NULL, NULL);
        if (res == ncclSuccess) {
            comms[i]->device = devlist ? devlist[i] : i;
            made++;
        }
    }
    if (res != ncclSuccess) {
        /* Detach what was made; the others never arrive, so do not wait for them. */
        ncclResult_t keep = res;
        for (int i = 0; i < made; i++)
            emu_comm_detach(comms[i]);
        emu_group_simulate_end(&(ncclSimInfo_t)NCCL_SIM_INFO_INITIALIZER);
        return keep;
    }
    return emu_group_end();
}
EMU_NCCL_ALIAS(ncclCommInitAll);

/* Waits until every operation this process issued on c has run. */
static void drain(struct ncclComm *c)
{
    pthread_mutex_lock(&c->mu);
    while (c->run_ticket != c->issued)
        pthread_cond_wait(&c->cv, &c->mu);
    pthread_mutex_unlock(&c->mu);
}

/* As drain, for at most `seconds`; true when every operation has run. */
static bool drain_for(struct ncclComm *c, double seconds)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    double at = (double)until.tv_nsec * 1e-9 + seconds;
    until.tv_sec += (time_t)at;
    until.tv_nsec = (long)((at - (double)(time_t)at) * 1e9);
    pthread_mutex_lock(&c->mu);
    int r = 0;
    while (c->run_ticket != c->issued && r != ETIMEDOUT)
        r = pthread_cond_timedwait(&c->cv, &c->mu, &until);
    bool all = c->run_ticket == c->issued;
    pthread_mutex_unlock(&c->mu);
    return all;
}

/* Communicators aborted while operations of theirs were still queued on streams that had not
 * reached them (behind another communicator's collective stuck on a dead peer, say): kept, so
 * that those operations find them and skip when their streams get there.  NCCL's abort does not
 * wait for kernels not launched yet either (they see the abort flag and exit). */
static pthread_mutex_t aborted_mu = PTHREAD_MUTEX_INITIALIZER;
static struct ncclComm **aborted_kept;
static size_t n_aborted_kept;

static void keep_aborted(struct ncclComm *c)
{
    pthread_mutex_lock(&aborted_mu);
    struct ncclComm **p = realloc(aborted_kept, (n_aborted_kept + 1) * sizeof *p);
    if (p) {
        aborted_kept = p;
        aborted_kept[n_aborted_kept++] = c;
    }
    pthread_mutex_unlock(&aborted_mu);
}

EMU_EXPORT ncclResult_t pncclCommFinalize(ncclComm_t comm)
{
    TRY(check_comm(comm, "ncclCommFinalize"));
    drain(comm);
    return ncclSuccess;
}
EMU_NCCL_ALIAS(ncclCommFinalize);

EMU_EXPORT ncclResult_t pncclCommDestroy(ncclComm_t comm)
{
    if (comm == NULL)
        return ncclSuccess;
    TRY(check_comm(comm, "ncclCommDestroy"));
    drain(comm);
    emu_comm_detach(comm);
    return ncclSuccess;
}
EMU_NCCL_ALIAS(ncclCommDestroy);

EMU_EXPORT ncclResult_t pncclCommAbort(ncclComm_t comm)
{
    if (comm == NULL)
        return ncclSuccess;
    TRY(check_comm(comm, "ncclCommAbort"));
    /* Pending operations of this process are skipped (their rendezvous waits notice the flag
     * within one wait slice); other ranks are not told, as with real NCCL. */
    atomic_store(&comm->local_abort, true);
    pthread_mutex_lock(&comm->mu);
    pthread_cond_broadcast(&comm->cv);
    pthread_mutex_unlock(&comm->mu);
    /* The operations running notice the flag within one wait slice; the ones still queued are
     * not waited for. */
    if (drain_for(comm, 0.2))
        emu_comm_detach(comm);
    else
        keep_aborted(comm);
    return ncclSuccess;
}
EMU_NCCL_ALIAS(ncclCommAbort);

/* The integer getters of a communicator: one definition, three entry points. */
#define COMM_GETTER(name, arg, field)                                                           \
    EMU_EXPORT ncclResult_t pncclComm##name(const ncclComm_t comm, int *arg)                    \
    {                                                                                           \
        TRY(check_comm(comm, "ncclComm" #name));                                                \
        if (arg == NULL)                                                                        \
            return emu_error(ncclInvalidArgument, "ncclComm" #name ": " #arg " is NULL");       \
        *arg = comm->field;                                                                     \
        return ncclSuccess;                                                                     \
    }                                                                                           \
    EMU_NCCL_ALIAS(ncclComm##name);

COMM_GETTER(Count, count, nranks)
COMM_GETTER(UserRank, rank, rank)
COMM_GETTER(CuDevice, device, device)

EMU_EXPORT ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError)
{
    TRY(check_comm(comm, "ncclCommGetAsyncError"));
    if (asyncError == NULL)
        return emu_error(ncclInvalidArgument, "ncclCommGetAsyncError: asyncError is NULL");
    atomic_store(&comm->async_scanned_ns, 0); /* asked explicitly: look now */
    *asyncError = emu_async_error(comm);
    return ncclSuccess;
}
EMU_NCCL_ALIAS(ncclCommGetAsyncError);

/* A host-side collective on the parent: exchange (color, key), then every colored rank joins
 * the child whose id is derived from the parent's id, the split number and the color. */
EMU_EXPORT ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config)
{
    TRY(check_comm(comm, "ncclCommSplit"));
    if (newcomm == NULL)
        return emu_error(ncclInvalidArgument, "ncclCommSplit: newcomm is NULL");
    if (color < 0 && color != NCCL_SPLIT_NOCOLOR)
        return emu_error(ncclInvalidArgument, "ncclCommSplit: color %d must be >= 0 or NCCL_SPLIT_NOCOLOR", color);
    uint64_t seq = ++comm->split_seq;
    struct emu_rank_area *mine = &comm->ranks[comm->rank];
    mine->split_color = color;
    mine->split_key = key;
    atomic_store(&mine->split_seq, seq);
    emu_wake(comm);
    for (;;) {
        uint32_t w = atomic_load(&comm->shm->wake);
        int all = 1;
        for (int r = 0; r < comm->nranks; r++)
            all &= atomic_load(&comm->ranks[r].split_seq) >= seq;
        if (all)
            break;
        emu_check_aborted(comm);
        emu_wait_change(comm, w);
    }
    int newrank = 0, newn = 0;
    for (int r = 0; r < comm->nranks; r++) {
        const struct emu_rank_area *o = &comm->ranks[r];
        if (color == NCCL_SPLIT_NOCOLOR || o->split_color != color)
            continue;
        newn++;
        if (o->split_key < key || (o->split_key == key && r < comm->rank))
            newrank++;
    }
    /* Nobody may overwrite its (color, key) before everyone has read them. */
    emu_barrier(comm, &comm->shm->host_bar_count, &comm->shm->host_bar_gen);
    if (color == NCCL_SPLIT_NOCOLOR) {
        *newcomm = NULL;
        return ncclSuccess;
    }
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    int n = snprintf(id.internal, sizeof id.internal, "%s/s%llu.%d", comm->id_text, (unsigned long long)seq, color);
    if (n < 0 || (size_t)n >= sizeof id.internal)
        return emu_error(ncclInternalError, "ncclCommSplit: splits nested too deeply for the emulator's ids");
    ncclResult_t r = init_rank_config(newcomm, newn, id, newrank, config, comm);
    if (r == ncclSuccess)
        (*newcomm)->device = comm->device;
    return r;
}
EMU_NCCL_ALIAS(ncclCommSplit);

/* ---- PreMulSum reduction ops ---- */

EMU_EXPORT ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t datatype,
                                                  ncclScalarResidence_t residence, ncclComm_t comm)
{
    TRY(check_comm(comm, "ncclRedOpCreatePreMulSum"));
    size_t es = emu_dtype_size(datatype);
    if (op == NULL || scalar == NULL)
        return emu_error(ncclInvalidArgument, "ncclRedOpCreatePreMulSum: op or scalar is NULL");
    if (es == 0 || !emu_dtype_reducible(datatype))
        return emu_error(ncclInvalidArgument, "ncclRedOpCreatePreMulSum: invalid data type %d", datatype);
    if (residence != ncclScalarDevice && residence != ncclScalarHostImmediate)
        return emu_error(ncclInvalidArgument, "ncclRedOpCreatePreMulSum: invalid residence %d", residence);
    if (residence == ncclScalarDevice && !usbyteEmuValidRange(scalar, es))
        return emu_error(ncclInvalidArgument, "ncclRedOpCreatePreMulSum: device scalar %p is not device memory", scalar);
    /* The lowest free slot: ranks that create and destroy ops in the same order get the same
     * handles, which is what the cross-rank signature check compares. */
    for (int i = 0; i < EMU_MAX_PREMUL_OPS; i++) {
        struct emu_premul_op *p = &comm->premul[i];
        if (p->live)
            continue;
        *p = (struct emu_premul_op){.live = true, .dtype = datatype, .residence = residence};
        if (residence == ncclScalarDevice)
            p->dev = scalar;
        else
            memcpy(p->value, scalar, es);
        *op = (ncclRedOp_t)(ncclNumOps + i);
        return ncclSuccess;
    }
    return emu_error(ncclInvalidUsage, "ncclRedOpCreatePreMulSum: more than %d live ops on this communicator",
                     EMU_MAX_PREMUL_OPS);
}
EMU_NCCL_ALIAS(ncclRedOpCreatePreMulSum);

EMU_EXPORT ncclResult_t pncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm)
{
    TRY(check_comm(comm, "ncclRedOpDestroy"));
    int i = (int)op - ncclNumOps;
    if (i < 0 || i >= EMU_MAX_PREMUL_OPS || !comm->premul[i].live)
        return emu_error(ncclInvalidArgument, "ncclRedOpDestroy: op %d is not a live PreMulSum op of this communicator",
                         (int)op);
    /* Operations already issued captured what they need (the value, or the device pointer). */
    comm->premul[i].live = false;
    return ncclSuccess;
}
EMU_NCCL_ALIAS(ncclRedOpDestroy);

/* ---- groups ---- */

EMU_EXPORT ncclResult_t pncclGroupStart(void)
{
    emu_group_start();
    return ncclSuccess;
}
EMU_NCCL_ALIAS(ncclGroupStart);

EMU_EXPORT ncclResult_t pncclGroupEnd(void)
{
    return emu_group_end();
}
EMU_NCCL_ALIAS(ncclGroupEnd);

EMU_EXPORT ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t *simInfo)
{
    return emu_group_simulate_end(simInfo);
}
EMU_NCCL_ALIAS(ncclGroupSimulateEnd);

/* ---- operations ---- */

EMU_EXPORT ncclResult_t pncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                       ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
    return issue(EMU_ALLREDUCE, sendbuff, recvbuff, count, datatype, op, 0, comm, stream);
}
EMU_NCCL_ALIAS(ncclAllReduce);

EMU_EXPORT ncclResult_t pncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                       int root, ncclComm_t comm, cudaStream_t stream)
{
    return issue(EMU_BROADCAST, sendbuff, recvbuff, count, datatype, 0, root, comm, stream);
}
EMU_NCCL_ALIAS(ncclBroadcast);

/* As NCCL 2.28's: the legacy in-place broadcast calls ncclBroadcast through the PLT, so that an
 * interposer preloaded in front of the library sees that inner call too. */
EMU_EXPORT ncclResult_t pncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                                   cudaStream_t stream)
{
    return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}
EMU_NCCL_ALIAS(ncclBcast);

EMU_EXPORT ncclResult_t pncclReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                    ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream)
{
    return issue(EMU_REDUCE, sendbuff, recvbuff, count, datatype, op, root, comm, stream);
}
EMU_NCCL_ALIAS(ncclReduce);

EMU_EXPORT ncclResult_t pncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype,
                                       ncclComm_t comm, cudaStream_t stream)
{
    return issue(EMU_ALLGATHER, sendbuff, recvbuff, sendcount, datatype, 0, 0, comm, stream);
}
EMU_NCCL_ALIAS(ncclAllGather);

EMU_EXPORT ncclResult_t pncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
    return issue(EMU_REDUCESCATTER, sendbuff, recvbuff, recvcount, datatype, op, 0, comm, stream);
}
EMU_NCCL_ALIAS(ncclReduceScatter);

EMU_EXPORT ncclResult_t pncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
                                  ncclComm_t comm, cudaStream_t stream)
{
    return issue(EMU_SEND, sendbuff, NULL, count, datatype, 0, peer, comm, stream);
}
EMU_NCCL_ALIAS(ncclSend);

EMU_EXPORT ncclResult_t pncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                                  cudaStream_t stream)
{
    return issue(EMU_RECV, NULL, recvbuff, count, datatype, 0, peer, comm, stream);
}
EMU_NCCL_ALIAS(ncclRecv);
