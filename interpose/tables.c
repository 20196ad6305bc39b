/* The runtime's tables (state.h): communicators, streams and events by handle, every
 * communicator ever seen (for the report), the process-wide lock that guards them, and the
 * process-wide flags (forked child, writing at exit).  Below the life cycle, warm-up and
 * agreement: besides logging and the globals it calls only the detector's and the report's
 * constructors and, to release a stream or event record, the real CUDA runtime. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "capture.h"
#include "cuda_list.h"
#include "globals.h"
#include "guard.h"
#include "log.h"
#include "nccl_list.h"
#include "state.h"
#include "tables.h"

/* First in the order of the mutexes (lock_contract.h): a thread holding it may take the
 * others; none is held while it is taken. */
ub_mutex ub_state_mutex = UB_MUTEX_INITIALIZER;
static pthread_cond_t state_changed = PTHREAD_COND_INITIALIZER;
static ub_comm *comms UB_GUARDED_BY(ub_state_mutex);           /* live communicators by handle */
static ub_comm **all_comms UB_GUARDED_BY(ub_state_mutex);      /* every communicator ever seen, for the report */
static int n_all UB_GUARDED_BY(ub_state_mutex), cap_all UB_GUARDED_BY(ub_state_mutex);
static ub_stream *streams UB_GUARDED_BY(ub_state_mutex);
static ub_event *events UB_GUARDED_BY(ub_state_mutex);
static bool in_child;
/* Bumped, under the lock, by every change that can end a communicator's passing its calls through
 * (a new or forgotten record, a state moved: a failure moves it too, ub_comm_set_failed): a
 * thread's note that a communicator passes through holds while the count it saw stays. */
static atomic_uint_fast64_t passing_epoch;
static _Thread_local struct {
    ncclComm_t handle;
    uint_fast64_t epoch;
} passing_note;

static void passing_changed(void) { atomic_fetch_add_explicit(&passing_epoch, 1, memory_order_release); }

/* The wrappers of the mutex are what the analysis trusts (lock_contract.h). */
void ub_state_lock(void) UB_NO_LOCK_ANALYSIS
{
    pthread_mutex_lock(&ub_state_mutex.m);
    ub_holds_state_lock = true;
}

void ub_state_unlock(void) UB_NO_LOCK_ANALYSIS
{
    ub_holds_state_lock = false;
    pthread_mutex_unlock(&ub_state_mutex.m);
}

bool ub_state_trylock(void) UB_NO_LOCK_ANALYSIS
{
    bool locked = pthread_mutex_trylock(&ub_state_mutex.m) == 0;
    if (locked)
        ub_holds_state_lock = true;
    return locked;
}

void ub_state_wait(double seconds)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    double at = (double)t.tv_nsec * 1e-9 + seconds;
    t.tv_sec += (time_t)at;
    t.tv_nsec = (long)((at - (double)(time_t)at) * 1e9);
    pthread_cond_timedwait(&state_changed, &ub_state_mutex.m, &t);
}

void ub_state_wake_all(void) { pthread_cond_broadcast(&state_changed); }

const char *ub_comm_state_name(ub_comm_state s)
{
    switch (s) {
#define X(e, name) case UB_COMM_##e: return name;
        UB_COMM_STATE_LIST(X)
#undef X
    }
    return "?";
}

void ub_state_forget_in_child(void) { in_child = true; }
bool ub_state_in_child(void) { return in_child; }
void ub_comm_set_state(ub_comm *c, ub_comm_state s, const char *reason)
{
    if (c->state != s)
        ub_debug("communicator %d: %s -> %s%s%s", c->index, ub_comm_state_name(c->state), ub_comm_state_name(s),
                 reason ? ": " : "", reason ? reason : "");
    c->state = s;
    snprintf(c->reason, sizeof c->reason, "%s", reason ? reason : "");
    passing_changed();
}

void ub_comm_set_failed(ub_comm *c, ncclResult_t r, const char *what)
{
    if (c->failed != ncclSuccess)
        return;
    c->failed = r;
    ub_error("communicator %d: %s; this rank issues nothing more on it: this call and every later one on it "
             "return %s", c->index, what, ub_nccl_result_name(r));
    ub_comm_set_state(c, UB_COMM_PASS_THROUGH, what);
}

ub_stream *ub_state_streams(void) { return streams; }
ub_comm *ub_state_live_comms(void) { return comms; }

ub_event *ub_event_get(cudaEvent_t event, bool create)
{
    ub_event *e = NULL;
    HASH_FIND_PTR(events, &event, e);
    if (!e && create && (e = calloc(1, sizeof *e))) {
        e->handle = event;
        HASH_ADD_PTR(events, handle, e);
    }
    return e;
}

void ub_event_forget(ub_event *e)
{
    HASH_DEL(events, e);
    if (e->companion)
        UB_CUDA(ub_cuda.cudaEventDestroy(e->companion));
    free(e);
}

/* Every event record of c, and the warm-up's ones of every communicator when no communicator
 * profiles any more (all: tracking ended); schedule mode's redirected events stay. */
void ub_event_forget_for(ub_comm *c, bool all)
{
    ub_event *e, *te;
    HASH_ITER(hh, events, e, te) if (!e->pending && (e->comm == c || all))
        ub_event_forget(e);
}

ub_stream *ub_stream_get(cudaStream_t s, ub_comm *c)
{
    ub_stream *st = NULL;
    HASH_FIND_PTR(streams, &s, st);
    if (st || !c)
        return st;
    st = calloc(1, sizeof *st);
    if (!st)
        return NULL;
    st->handle = s;
    st->comm = c;
    HASH_ADD_PTR(streams, handle, st);
    return st;
}

void ub_stream_forget(ub_stream *st)
{
    HASH_DEL(streams, st);
    free(st);
}

ncclResult_t ub_comm_async_error(ncclComm_t handle)
{
    ncclResult_t r = ncclSuccess;
    if (handle && ub_nccl.CommGetAsyncError && UB_NCCL(ub_nccl.CommGetAsyncError(handle, &r)) != ncclSuccess)
        return ncclSuccess; /* cannot tell: a wait goes on as before */
    return r == ncclInProgress ? ncclSuccess : r;
}

ub_comm *ub_comm_get(ncclComm_t handle)
{
    ub_comm *c = NULL;
    HASH_FIND_PTR(comms, &handle, c);
    return c;
}

void ub_state_note_passing_through(const ub_comm *c)
{
    passing_note.handle = c->handle;
    passing_note.epoch = atomic_load_explicit(&passing_epoch, memory_order_relaxed);
}

static bool passes_through(ncclComm_t handle)
{
    return handle && passing_note.handle == handle &&
           passing_note.epoch == atomic_load_explicit(&passing_epoch, memory_order_acquire);
}

bool ub_state_call_passes(ncclComm_t handle) { return in_child || passes_through(handle); }

bool ub_state_lock_call(ncclComm_t handle, cudaStream_t stream, ub_call_lookup *at)
{
    if (ub_state_call_passes(handle))
        return false;
    ub_state_lock();
    at->comm = ub_comm_get(handle);
    at->stream = NULL;
    at->capturing = false;
    if (at->comm && at->comm->state == UB_COMM_SCHEDULE) {
        at->stream = ub_stream_get(stream, NULL);
        at->capturing = ub_capture_stream(stream);
    }
    return true;
}

ub_comm *ub_state_lock_adopted(ncclComm_t handle, int rank, int nranks, int device)
{
    ub_state_lock();
    ub_comm *c = ub_comm_get(handle);
    return c ? c : ub_comm_create(handle, rank, nranks, device);
}

/* A record in the live table and in every communicator's list (the report), index its creation
 * order. */
static ub_comm *new_record(ncclComm_t handle, int rank, int nranks, int device) UB_REQUIRES(ub_state_mutex)
{
    ub_comm *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    if (n_all == cap_all) {
        int cap = cap_all ? 2 * cap_all : 8;
        ub_comm **p = realloc(all_comms, (size_t)cap * sizeof *p);
        if (!p) {
            free(c);
            return NULL;
        }
        all_comms = p;
        cap_all = cap;
    }
    all_comms[n_all] = c;
    c->index = n_all++;
    c->handle = handle;
    c->rank = rank;
    c->nranks = nranks;
    c->device = device;
    c->cur_iter = c->cur_call = -1;
    c->copy_t0 = c->copy_t1 = NAN;
    ub_comm_report_init(&c->report);
    c->report.warmup = ub_cfg.warmup; /* agreed at the first lock: where the ranks differ, the verdict says so */
    if (atomic_load(&ub_rank) < 0 && c->rank >= 0)
        atomic_store(&ub_rank, c->rank);
    /* The job holds at least every communicator's ranks (WORLD_SIZE unset, or a smaller
     * communicator created first). */
    if (c->nranks > atomic_load(&ub_world))
        atomic_store(&ub_world, c->nranks);
    HASH_ADD_PTR(comms, handle, c);
    passing_changed();
    return c;
}

ub_comm *ub_comm_create(ncclComm_t handle, int rank, int nranks, int device)
{
    ub_comm *c = new_record(handle, rank, nranks, device);
    if (!c)
        return NULL;
    c->min_period = 0;
    ub_iterdet_config dc = {.min_span = UB_MIN_SPAN};
    c->det = ub_iterdet_new(&dc);
    c->det_full = ub_iterdet_new(&dc);
    c->state = UB_COMM_DETECT;
    if (!c->det)
        ub_comm_set_state(c, UB_COMM_DISABLED, "out of memory");
    return c;
}

void ub_comm_forget(ub_comm *c)
{
    HASH_DEL(comms, c);
    passing_changed();
}

void ub_comm_add_disabled(ncclComm_t handle, int rank, int nranks, const char *why)
{
    ub_comm *c = new_record(handle, rank, nranks, -1);
    if (!c)
        return;
    c->nonblocking = true;
    ub_comm_set_state(c, UB_COMM_DISABLED, why);
}

ub_comm **ub_state_all_comms(int *n)
{
    *n = n_all;
    return all_comms;
}
