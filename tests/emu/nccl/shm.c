/* Communicator segments in POSIX shared memory, unique ids, and the cross-process waiting
 * primitives (one futex word per segment, bumped on every state change). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "nccl_emu.h"

#define WAIT_SLICE_NS 50000000L   /* bounded futex waits: a local abort is noticed within this */

uint64_t emu_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void emu_sleep_until_ns(uint64_t t)
{
    /* Linux lets a normal thread's timers fire up to 50 us late (timer slack); the model's
     * small-message times are of that order, so ask for precise wake-ups on this worker. */
    static _Thread_local bool precise;
    if (!precise) {
        prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
        precise = true;
    }
    struct timespec ts = {.tv_sec = (time_t)(t / 1000000000ull), .tv_nsec = (long)(t % 1000000000ull)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

void emu_wake(struct ncclComm *c)
{
    atomic_fetch_add(&c->shm->wake, 1);
    syscall(SYS_futex, &c->shm->wake, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

void emu_wait_change(struct ncclComm *c, uint32_t seen)
{
    struct timespec ts = {0, WAIT_SLICE_NS};
    syscall(SYS_futex, &c->shm->wake, FUTEX_WAIT, seen, &ts, NULL, 0);
}

void emu_check_aborted(struct ncclComm *c)
{
    uint32_t a;
    while ((a = atomic_load(&c->shm->aborted)) == 1) {
        /* The rank that saw the mismatch is printing it: let it finish before everyone exits,
         * so the launcher cannot kill it before the diagnostic is out. */
        uint32_t w = atomic_load(&c->shm->wake);
        if (atomic_load(&c->shm->aborted) != 1)
            break;
        emu_wait_change(c, w);
    }
    if (atomic_load(&c->shm->aborted) == 2)
        _exit(EMU_EXIT_MISMATCH);
}

int emu_claim_abort(struct ncclComm *c)
{
    uint32_t expected = 0;
    return atomic_compare_exchange_strong(&c->shm->aborted, &expected, 1);
}

_Noreturn void emu_abort_all(struct ncclComm *c, const char *msg)
{
    size_t len = strlen(msg);
    while (len > 0) {
        ssize_t n = write(2, msg, len);
        if (n <= 0)
            break;
        msg += n;
        len -= (size_t)n;
    }
    atomic_store(&c->shm->aborted, 2);
    emu_wake(c);
    _exit(EMU_EXIT_MISMATCH);
}

int emu_barrier(struct ncclComm *c, _Atomic uint32_t *count, _Atomic uint32_t *gen)
{
    uint32_t g = atomic_load(gen);
    if (atomic_fetch_add(count, 1) + 1 == (uint32_t)c->nranks) {
        atomic_store(count, 0);
        atomic_fetch_add(gen, 1);
        emu_wake(c);
        return 0;
    }
    for (;;) {
        uint32_t w = atomic_load(&c->shm->wake);
        if (atomic_load(gen) != g)
            return 0;
        emu_check_aborted(c);
        if (atomic_load(&c->local_abort))
            return -1;
        emu_wait_change(c, w);
    }
}

/* ---- layout ---- */

static size_t align_up(size_t x, size_t a)
{
    return (x + a - 1) / a * a;
}

struct layout {
    size_t ranks_off, slots_off, chans_off, chan_stride, total;
};

static struct layout layout_for(int nranks)
{
    struct layout l;
    l.ranks_off = align_up(sizeof(struct emu_shm_hdr), 4096);
    l.slots_off = align_up(l.ranks_off + (size_t)nranks * sizeof(struct emu_rank_area), 4096);
    l.chans_off = l.slots_off + (size_t)nranks * EMU_SLOT_BYTES;
    l.chan_stride = align_up(sizeof(struct emu_chan), 64) + EMU_CHAN_BYTES;
    l.total = l.chans_off + (size_t)nranks * (size_t)nranks * l.chan_stride;
    return l;
}

struct emu_chan *emu_chan(struct ncclComm *c, int from, int to)
{
    size_t stride = layout_for(c->nranks).chan_stride;
    return (struct emu_chan *)(c->chans + ((size_t)from * (size_t)c->nranks + (size_t)to) * stride);
}

unsigned char *emu_chan_data(struct emu_chan *ch)
{
    return (unsigned char *)ch + align_up(sizeof(struct emu_chan), 64);
}

/* ---- unique ids ---- */

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    /* FNV's high bits barely change with the last character (ids differ there): mix. */
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

/* The job part of names: the launcher's USBYTE_EMU_JOB (identical on every rank, so every
 * rank computes the same ids), or a process-unique value outside the launcher (then ids must
 * be exchanged out of band, as with real NCCL). */
static void job_name(char *buf, size_t size)
{
    const char *job = getenv("USBYTE_EMU_JOB");
    if (job != NULL && *job != '\0') {
        size_t n = 0;
        for (; job[n] != '\0' && n + 1 < size && n < 48; n++) {
            char ch = job[n];
            int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                     ch == '-' || ch == '_' || ch == '.';
            buf[n] = ok ? ch : '_';
        }
        buf[n] = '\0';
        return;
    }
    snprintf(buf, size, "solo%ldx%llx", (long)getpid(), (unsigned long long)emu_now_ns());
}

static char job[64];
static pthread_once_t job_once = PTHREAD_ONCE_INIT;

static void init_job(void)
{
    job_name(job, sizeof job);
}

void emu_make_local_unique_id(ncclUniqueId *id)
{
    static atomic_ullong counter;
    pthread_once(&job_once, init_job);
    unsigned long long n = atomic_fetch_add(&counter, 1);
    memset(id, 0, sizeof *id);
    snprintf(id->internal, sizeof id->internal, EMU_ID_MAGIC "%s:local%ld.%llu", job, (long)getpid(), n);
}

void emu_make_unique_id(ncclUniqueId *id)
{
    static atomic_ullong counter;
    pthread_once(&job_once, init_job);
    unsigned long long n = atomic_fetch_add(&counter, 1);
    memset(id, 0, sizeof *id);
    snprintf(id->internal, sizeof id->internal, EMU_ID_MAGIC "%s:%llu", job, n);
}

/* ---- attaching ---- */

/* Checks that id came from ncclGetUniqueId (or a split) and extracts its job part. */
static int parse_id(const ncclUniqueId *id, char *text, size_t text_size, char *job_out, size_t job_size)
{
    if (memchr(id->internal, '\0', sizeof id->internal) == NULL)
        return -1;
    if (strncmp(id->internal, EMU_ID_MAGIC, strlen(EMU_ID_MAGIC)) != 0)
        return -1;
    snprintf(text, text_size, "%s", id->internal);
    const char *job = id->internal + strlen(EMU_ID_MAGIC);
    const char *end = strchr(job, ':');
    if (end == NULL || end == job || (size_t)(end - job) >= job_size)
        return -1;
    memcpy(job_out, job, (size_t)(end - job));
    job_out[end - job] = '\0';
    return 0;
}

static void share_model(struct ncclComm *c)
{
    struct emu_shm_hdr *h = c->shm;
    struct emu_model mine;
    static atomic_int warned;   /* the warnings about bad settings once per process */
    emu_model_from_env(&mine, atomic_exchange(&warned, 1) == 0 ? stderr : NULL);
    uint32_t expected = 0;
    if (atomic_compare_exchange_strong(&h->model_set, &expected, 1)) {
        h->model = mine;
        atomic_store(&h->model_set, 2);
        emu_wake(c);
    } else {
        for (;;) {
            uint32_t w = atomic_load(&h->wake);
            if (atomic_load(&h->model_set) == 2)
                break;
            emu_wait_change(c, w);
        }
        if (!emu_model_same(&h->model, &mine))
            fprintf(stderr, "usbyte-emu: warning: rank %d has other USBYTE_EMU_ALPHA_US/GBPS/PAYLOAD/CHECK/NET/JITTER_PCT/"
                    "JITTER_SEED values than the rank that created comm %s; every rank uses the creator's\n", c->rank,
                    c->hash);
    }
    c->model = h->model;
}

ncclResult_t emu_comm_attach(struct ncclComm **out, int nranks, const ncclUniqueId *id, int rank)
{
    char text[NCCL_UNIQUE_ID_BYTES], job[64];
    if (parse_id(id, text, sizeof text, job, sizeof job) != 0)
        return emu_error(ncclInvalidArgument, "ncclCommInitRank: the unique id was not made by ncclGetUniqueId");
    if (nranks < 1 || nranks > EMU_MAX_RANKS)
        return emu_error(ncclInvalidArgument, "ncclCommInitRank: nranks %d out of range [1, %d]", nranks, EMU_MAX_RANKS);
    if (rank < 0 || rank >= nranks)
        return emu_error(ncclInvalidArgument, "ncclCommInitRank: rank %d out of range [0, %d)", rank, nranks);

    struct ncclComm *c = calloc(1, sizeof *c);
    if (c == NULL)
        return emu_error(ncclSystemError, "ncclCommInitRank: out of memory");
    c->magic = EMU_COMM_MAGIC;
    c->rank = rank;
    c->nranks = nranks;
    c->blocking = 1;
    uint64_t h = fnv1a(text);
    snprintf(c->hash, sizeof c->hash, "%08llx", (unsigned long long)(h >> 32));
    snprintf(c->id_text, sizeof c->id_text, "%s", text);
    snprintf(c->shm_name, sizeof c->shm_name, "/usbyte-emu-%s-%016llx", job, (unsigned long long)h);

    struct layout l = layout_for(nranks);
    int fd = shm_open(c->shm_name, O_CREAT | O_RDWR, 0600);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || ((size_t)st.st_size < l.total && ftruncate(fd, (off_t)l.total) != 0)) {
        int err = errno;
        if (fd >= 0)
            close(fd);
        ncclResult_t r = emu_error(ncclSystemError, "ncclCommInitRank: shared memory %s: %s", c->shm_name, strerror(err));
        free(c);
        return r;
    }
    void *p = mmap(NULL, l.total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        ncclResult_t r = emu_error(ncclSystemError, "ncclCommInitRank: mmap %s: %s", c->shm_name, strerror(errno));
        free(c);
        return r;
    }
    c->shm = p;
    c->shm_bytes = l.total;
    c->ranks = (struct emu_rank_area *)((unsigned char *)p + l.ranks_off);
    c->slots = (unsigned char *)p + l.slots_off;
    c->chans = (unsigned char *)p + l.chans_off;

    uint32_t expected = 0;
    if (!atomic_compare_exchange_strong(&c->shm->nranks, &expected, (uint32_t)nranks) && expected != (uint32_t)nranks) {
        munmap(p, l.total);
        free(c);
        return emu_error(ncclInvalidArgument, "ncclCommInitRank: rank %d says nranks %d, another rank of this id said %u",
                         rank, nranks, expected);
    }
    expected = 0;
    if (!atomic_compare_exchange_strong(&c->ranks[rank].present, &expected, 1)) {
        munmap(p, l.total);
        free(c);
        return emu_error(ncclInvalidArgument, "ncclCommInitRank: rank %d of this id was already initialised", rank);
    }
    c->ranks[rank].pid = (int32_t)getpid();
    c->send_ordinal = calloc((size_t)nranks, sizeof *c->send_ordinal);
    c->recv_ordinal = calloc((size_t)nranks, sizeof *c->recv_ordinal);
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    share_model(c);
    atomic_fetch_add(&c->shm->attached, 1);
    emu_wake(c);
    *out = c;
    return ncclSuccess;
}

/* The hang dump of emu-run shows stream workers only; a rank stuck on the host in
 * ncclCommInitRank says so itself, once, after this long. */
#define INIT_WAIT_NOTE_NS 3000000000ull

void emu_comm_wait_all_attached(struct ncclComm *c)
{
    uint64_t note_at = emu_now_ns() + INIT_WAIT_NOTE_NS;
    for (;;) {
        uint32_t w = atomic_load(&c->shm->wake);
        if (atomic_load(&c->shm->attached) >= (uint32_t)c->nranks)
            break;
        emu_check_aborted(c);
        if (note_at != 0 && emu_now_ns() >= note_at) {
            char missing[256] = "";
            for (int r = 0; r < c->nranks; r++)
                if (!atomic_load(&c->ranks[r].present)) {
                    size_t n = strlen(missing);
                    snprintf(missing + n, sizeof missing - n, "%s%d", n ? "," : "", r);
                }
            fprintf(stderr, "usbyte-emu: rank %d has waited %llu s in ncclCommInitRank of comm %s for rank(s) %s\n",
                    c->rank, INIT_WAIT_NOTE_NS / 1000000000ull, c->hash, missing);
            note_at = 0;
        }
        emu_wait_change(c, w);
    }
    c->init_pending = false;
}

void emu_comm_detach(struct ncclComm *c)
{
    atomic_store(&c->ranks[c->rank].left, 1);
    if (atomic_fetch_add(&c->shm->detached, 1) + 1 == (uint32_t)c->nranks)
        shm_unlink(c->shm_name);
    munmap(c->shm, c->shm_bytes);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c->send_ordinal);
    free(c->recv_ordinal);
    c->magic = 0;
    free(c);
}
