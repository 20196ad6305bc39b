/* The life cycle of a communicator (state.h): creation, every NCCL call (detection, warm-up,
 * agreement, the switch to the plan at agree_at + period, schedule mode), groups, destroy and
 * abort, and the reports at exit.  It decides at which call each transition happens and applies
 * what the agreements, the decision and calibration return (transition.h) through
 * ub_comm_set_state (tables.c), the state's only writer; only the warm-up's own restarts
 * (warmup.c) move the state elsewhere. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agree_config.h"
#include "agree_rt.h"
#include "calibrate.h"
#include "capture.h"
#include "coll_desc.h"
#include "cuda_list.h"
#include "decide.h"
#include "defer.h"
#include "globals.h"
#include "group.h"
#include "guard.h"
#include "lifecycle.h"
#include "log.h"
#include "nccl_list.h"
#include "redirect.h"
#include "report_rt.h"
#include "state.h"
#include "tables.h"
#include "transition.h"
#include "verify.h"
#include "warmup.h"
#include "usbyte/clock.h"

/* The communicator's rank, size and device, from NCCL (never with the global lock held). */
static void comm_identity(ncclComm_t handle, int *rank, int *nranks, int *device)
{
    *rank = *nranks = *device = -1;
    if (ub_nccl.CommUserRank)
        UB_NCCL(ub_nccl.CommUserRank(handle, rank));
    if (ub_nccl.CommCount)
        UB_NCCL(ub_nccl.CommCount(handle, nranks));
    if (ub_nccl.CommCuDevice)
        UB_NCCL(ub_nccl.CommCuDevice(handle, device));
}

/* Whether a new communicator is nonblocking, as NCCL 2.28 decides it (init.cc: the config's
 * blocking field, blocking when undefined; a split or shrink without a config copies its parent's;
 * NCCL_COMM_BLOCKING 0 or 1, read as NCCL reads an integer parameter (strtoll, base 0), overrides
 * both).  NCCL offers no call that tells.  A value from NCCL's configuration files (NCCL_CONF_FILE
 * or ~/.nccl.conf, then /etc/nccl.conf) is in the environment by now: NCCL copies their lines
 * there (never over a set variable) at its first parameter read, inside the initialisation that
 * returned this communicator.  why: how it was decided, for the report. */
static bool nonblocking_comm(const ncclConfig_t *config, ncclComm_t parent, char *why, size_t len)
{
    bool nonblocking = false;
    snprintf(why, len, "nonblocking communicator (%s)",
             config ? "its config: blocking = 0" : "inherited from the communicator it was split from");
    if (config) {
        nonblocking = config->blocking == 0;
    } else if (parent) {
        ub_state_lock();
        ub_comm *p = ub_comm_get(parent);
        nonblocking = p && p->nonblocking;
        ub_state_unlock();
    }
    const char *v = getenv("NCCL_COMM_BLOCKING");
    if (v && v[0]) {
        errno = 0;
        long long b = strtoll(v, NULL, 0);
        if (errno == 0 && (b == 0 || b == 1)) {
            nonblocking = b == 0;
            snprintf(why, len, "nonblocking communicator (NCCL_COMM_BLOCKING=%.32s, from the environment or NCCL's "
                     "configuration file)", v);
        }
    }
    return nonblocking;
}

void ub_comm_created(ncclComm_t *out, int n, const ncclConfig_t *config, ncclComm_t parent, ncclResult_t r)
{
    if ((r != ncclSuccess && r != ncclInProgress) || !out)
        return;
    char why[256];
    bool nonblocking = nonblocking_comm(config, parent, why, sizeof why);
    for (int i = 0; i < n; i++) {
        if (!out[i])
            continue;
        int rank = -1, nranks = -1, device = -1;
        if (r == ncclSuccess) /* a nonblocking one still initialising answers ncclInProgress */
            comm_identity(out[i], &rank, &nranks, &device);
        ub_state_lock();
        ub_comm *old = ub_comm_get(out[i]);
        if (old) /* a handle reused after destroy without our seeing it */
            ub_comm_forget(old);
        if (nonblocking) { /* calls on it return before they are enqueued: nothing may be measured */
            ub_debug("communicator %p: %s: passed through, not observed", (void *)out[i], why);
            ub_comm_add_disabled(out[i], rank, nranks, why);
        }
        else if (r == ncclSuccess)
            ub_comm_create(out[i], rank, nranks, device);
        ub_state_unlock();
    }
}

/* How long an abort lets the issuing thread's real calls in flight return: an enqueue takes
 * microseconds; one blocked inside NCCL (connection set-up with a dead peer) is released only by
 * the real abort, which must not be kept waiting. */
#define ABORT_LETS_ISSUE_RETURN_S 0.2

/* Lock held (released while it waits).  Another thread may be issuing usbyte's own work on c
 * without the lock (blocks, the verification's collective, calibration's probes): the abort
 * (c->aborted set) stops it before its next call; the calls it has in flight use the executor,
 * timing events, buffers and the NCCL handle, so the abort lets them return before it ends the
 * schedule and NCCL frees the communicator. */
static void let_issue_return(ub_comm *c) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    double t0 = ub_monotonic_s();
    while ((ub_sched_issuing(c) || ub_verify_issuing(c) || ub_calib_issuing(c)) &&
           c->issuer != (unsigned long)pthread_self()) {
        if (ub_monotonic_s() - t0 > ABORT_LETS_ISSUE_RETURN_S) {
            ub_info("communicator %d: aborted while the issuing thread is inside a call of a block; the abort goes "
                    "on without waiting longer", c->index);
            return;
        }
        ub_state_unlock();
        nanosleep(&(struct timespec){0, 100000}, NULL);
        ub_state_lock();
    }
}

/* What a step decided (the agreements' reads, the schedule decision, calibration's set-up),
 * applied: the one place where those decisions move the state (tables.c writes it). */
static void apply(ub_comm *c, const ub_transition *t) UB_REQUIRES(ub_state_mutex)
{
    if (t->kind == UB_MOVE)
        ub_comm_set_state(c, t->to, t->why[0] ? t->why : NULL);
    else if (t->kind == UB_FAIL)
        ub_comm_cannot_take_part(c, t->error, t->why);
}

/* Schedule mode on a PLANNED communicator whose plan is decided: the executor, or pass-through. */
static void decide_schedule(ub_comm *c) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    ub_transition next = ub_comm_decide_schedule(c);
    apply(c, &next);
}

/* The agreement's result, read as `how` says, and what it decided: the ways out of AGREE (and,
 * in schedule mode, whether the plan runs or calibration comes first), the decision's line and
 * the reports. */
static void read_agreement(ub_comm *c, ub_agree_wait how) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    ub_agree_result res;
    ub_comm_agree_read(c, how, &res);
    if (res.kind == UB_AGREE_UNREAD)
        return;
    apply(c, &res.next);
    if (res.kind == UB_AGREE_REISSUE)
        return;
    if (res.kind == UB_AGREE_ADOPTED) {
        /* Where the plan issues sizes the calls do not show, calibration runs first and decides
         * (it holds the agreed numbers for its re-plan). */
        ub_transition failed = ub_stay();
        if (ub_cfg.mode == UB_MODE_SCHEDULE && !c->refuted && c->phase_pos == 0) {
            if (ub_calib_hold(c, &res.agreed, res.stream_sem, &failed))
                apply(c, &failed);
            else
                decide_schedule(c);
        }
        ub_agreed_free(&res.agreed);
    }
    ub_comm_decision_line(c);
    ub_state_write_reports();
}

void ub_comm_ending(ncclComm_t handle, int id)
{
    /* Abort (a watchdog after a peer died) never waits for device work: the agreement is not
     * read and nothing is freed that could synchronise behind collectives that never end. */
    bool abort = id == UB_NCCL_CommAbort || id == UB_NCCL_CommRevoke;
    ub_state_lock();
    ub_comm *c = ub_comm_get(handle);
    if (c) {
        atomic_store(&c->ending, true);
        if (abort) {
            atomic_store(&c->aborted, true);
            let_issue_return(c);
        }
        ub_comm_forget(c);
        if (c->index < 0) {
            free(c);
        } else {
            if (c->state == UB_COMM_AGREE) {
                /* The last chance to read the agreement: every rank issued it before this point
                 * and NCCL's destroy waits for the communicator's work anyway. */
                if (!abort && c->agree_copy_pending)
                    ub_comm_agree_copy_back(c);
                if (!abort)
                    read_agreement(c, UB_AGREE_WAIT_OR_GIVE_UP);
                if (c->state == UB_COMM_AGREE) {
                    ub_comm_set_state(c, UB_COMM_PASS_THROUGH, abort ? "aborted before the agreement was read"
                                                                   : "destroyed before the agreement could be read");
                    ub_comm_agree_abandon(c);
                }
            }
            if (c->state == UB_COMM_PROFILE || c->state == UB_COMM_DETECT)
                ub_comm_set_state(c, UB_COMM_DISABLED, "destroyed before the warm-up ended");
            ub_sched_end(c, abort);
            ub_calib_end(c, abort);
            ub_cfg_agree_release(c, abort);
            if (!c->issuing_agreement) /* else the issuing thread releases them when it sees `ending` */
                ub_comm_stop_profiling(c);
            if (!abort) {
                if (c->agree_done)
                    UB_CUDA(ub_cuda.cudaEventDestroy(c->agree_done));
                if (c->agree_dev)
                    UB_UNSAFE(ub_cuda.cudaFree(c->agree_dev));
                if (c->copy_buf)
                    UB_UNSAFE(ub_cuda.cudaFree(c->copy_buf));
                if (c->agree_host)
                    UB_UNSAFE(ub_cuda.cudaFreeHost(c->agree_host));
            }
            c->agree_done = NULL;
            c->agree_dev = NULL;
            c->agree_host = NULL;
            c->copy_buf = NULL;
            ub_iterdet_free(c->det);
            ub_iterdet_free(c->det_full);
            c->det = NULL;
            c->det_full = NULL;
            c->handle = NULL; /* kept in all_comms for the report */
        }
    }
    ub_state_unlock();
}

/* After the real ncclGroupEnd: the outermost one launched what this thread issued inside the
 * group, so the work that must follow it goes now; and a rank that issues all its calls inside
 * groups reads the agreement here. */
ncclResult_t ub_group_ended(ncclResult_t r)
{
    r = ub_group_result(r);
    if (ub_thread_group_depth() > 0 || ub_state_in_child() ||
        (!ub_group_pending() && !ub_agree_any_unread()))
        return r;
    ub_state_lock();
    /* An action may queue another (it runs outside any group now, so it will not). */
    ub_after_launch queued[UB_MAX_AFTER_LAUNCH];
    for (int i = 0, n = ub_group_take_after_launch(queued); i < n; i++)
        queued[i].fn(queued[i].data);
    unsigned long self = (unsigned long)pthread_self();
    for (ub_comm *c = ub_state_live_comms(), *next; c; c = next) {
        next = c->hh.next;
        if (c->state == UB_COMM_AGREE && c->issuer == self)
            read_agreement(c, UB_AGREE_POLL);
    }
    ub_state_unlock();
    return r;
}

static int portable_kind(int id)
{
    return id == UB_NCCL_Bcast ? UB_NCCL_Broadcast : id;
}

/* The op in the portable signature: a handle from ncclRedOpCreatePreMulSum is a rank-local value
 * (the lowest free slot of this rank's communicator), so every user-created op is one value. */
static int portable_op(int op)
{
    return op >= (int)ncclNumOps ? (int)ncclNumOps : op;
}

/* When this thread's open group still holds collectives whose result is needed now (pending,
 * issued by `thread`), launches it (ends it for real, to reopen with group_reopen); returns the
 * depth to reopen, 0 when nothing was split. */
static int launch_own_group(bool pending, unsigned long thread) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    int depth = ub_thread_group_depth();
    if (!(depth > 0 && pending && thread == (unsigned long)pthread_self()))
        return 0;
    ub_state_unlock(); /* never held across a real NCCL call */
    (void)ub_group_split_begin(depth); /* a failure is the group's: its end returns it */
    ub_state_lock();
    return depth;
}

static void group_reopen(int depth) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    if (!depth)
        return;
    ub_state_unlock();
    (void)ub_group_split_end(depth); /* likewise returned by the application's group end */
    ub_state_lock();
}

/* Schedule mode, at call B = agree_at + period on every rank (docs/runtime.md): the agreement's
 * result is needed now.  Outside a group, or inside one when the agreement was launched by an
 * earlier ncclGroupEnd, blocking on it cannot deadlock on this communicator; when this thread's
 * open group still holds it, the group is launched first (ended and reopened). */
static void read_agreement_at_switch(ub_comm *c) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    if (c->state != UB_COMM_AGREE)
        return;
    int split = launch_own_group(c->agree_copy_pending, c->agree_thread);
    if (split && c->agree_copy_pending) /* the copy back queued for after the launch finds nothing left */
        ub_comm_agree_copy_back(c);
    if (c->state == UB_COMM_AGREE) /* not aborted while the lock was released */
        read_agreement(c, UB_AGREE_WAIT);
    group_reopen(split);
}

/* The first call of the warm-up, on every rank: the configuration agreement is needed now. */
static void read_config_agreement(ub_comm *c) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    int split = launch_own_group(c->cfg_agree.copy_pending, c->cfg_agree.thread);
    if (split && c->cfg_agree.copy_pending)
        ub_cfg_agree_copy_back(c);
    if (c->state == UB_COMM_PROFILE) {
        ub_transition next = ub_cfg_agree_read(c);
        apply(c, &next);
        if (next.kind != UB_STAY)
            ub_state_write_reports();
    }
    group_reopen(split);
}

/* After a wait that another thread's ncclCommAbort releases, or that NCCL's asynchronous error
 * (a peer gone) ends: the call must not reach NCCL (the communicator is gone, or the other ranks
 * will never match it).  Returns true (the call is answered, with an error) when so: the
 * application's own error handling (an abort) then runs. */
static bool aborted_while_waiting(ub_comm *c, uint64_t index, const char *what, ub_coll_token *t) UB_REQUIRES(ub_state_mutex)
{
    int peer = atomic_load(&c->peer_error);
    if (peer != ncclSuccess && !atomic_load(&c->ending)) {
        ub_error("communicator %d: call %llu is not issued: NCCL reports an asynchronous error (%s) while it "
                 "waited %s: returning that error", c->index, (unsigned long long)index,
                 peer == ncclRemoteError ? "ncclRemoteError, a peer gone" : "an NCCL error", what);
        t->result = (ncclResult_t)peer;
        return true;
    }
    if (!atomic_load(&c->ending))
        return false;
    ub_error("communicator %d: aborted while call %llu waited %s: the call is not issued", c->index,
             (unsigned long long)index, what);
    t->result = ncclInvalidUsage;
    return true;
}

/* Lock held: this rank's reason not to follow a plan, for x (the first one stays). */
static void refuse_here(ub_comm *x, const char *why)
{
    if (x->refusal[0])
        return;
    snprintf(x->refusal, sizeof x->refusal, "%s", why);
    if (x->state == UB_COMM_DETECT || x->state == UB_COMM_PROFILE)
        ub_info("communicator %d: %s; it stays in pass-through", x->index, why);
    else
        ub_error("communicator %d: %s, found only after its warm-up (state %s): the plan may hang or corrupt",
                 x->index, why, ub_comm_state_name(x->state));
}

/* Lock held, when c's issuing thread changes.  One thread that issues the calls of several ranks
 * of one clique (the same identity: one ncclUniqueId, or ncclCommInitAll) puts each call in one
 * group with the other ranks' (NCCL requires it: every call may block until the other ranks
 * arrive).  usbyte issues one rank's blocks alone, outside the application's group: that launch
 * would wait for ever for a rank only this thread launches next.  Both communicators take part
 * in their agreement with this rank's reason, so every rank stays in pass-through. */
static void note_shared_issuer(ub_comm *c) UB_REQUIRES(ub_state_mutex)
{
    if (!c->report.id || c->refusal[0])
        return;
    for (ub_comm *o = ub_state_live_comms(); o; o = o->hh.next) {
        if (o == c || o->report.id != c->report.id || o->issuer != c->issuer)
            continue;
        ub_comm *pair[2] = {c, o};
        for (int i = 0; i < 2; i++) {
            char why[sizeof c->refusal];
            snprintf(why, sizeof why, "one thread issues the calls of ranks %d and %d of this communicator in this "
                     "process: a block of one rank alone would wait in NCCL for the other", pair[i]->rank,
                     pair[1 - i]->rank);
            refuse_here(pair[i], why);
        }
        return;
    }
}

/* The communicator whose calls a stream carried last, while communicators profile (lock held).
 * ub_comm records are never freed (the report keeps them). */
typedef struct stream_caller {
    cudaStream_t stream;
    ub_comm *comm;
    UT_hash_handle hh;
} stream_caller;
static stream_caller *stream_callers;

/* Lock held, at each call of a communicator before its agreement.  Two communicators whose calls
 * share one stream (PyTorch hands process groups streams out of a pool): each would defer its
 * calls onto its own private stream, and the stream's events could follow only one of them.
 * Both stay in pass-through, with the reason, through their agreements. */
static void note_stream(ub_comm *c, cudaStream_t s)
{
    if (c->state != UB_COMM_DETECT && c->state != UB_COMM_PROFILE)
        return;
    stream_caller *sc = NULL;
    HASH_FIND_PTR(stream_callers, &s, sc);
    if (!sc) {
        if ((sc = calloc(1, sizeof *sc))) {
            sc->stream = s;
            sc->comm = c;
            HASH_ADD_PTR(stream_callers, stream, sc);
        }
        return;
    }
    ub_comm *o = sc->comm;
    sc->comm = c;
    if (o == c || !o->handle) /* the other one ended: the stream is this one's now */
        return;
    char why[sizeof c->refusal];
    snprintf(why, sizeof why, "the calls of communicators %d and %d share one stream: usbyte would defer both and "
             "could follow only one of them for the stream's events", o->index < c->index ? o->index : c->index,
             o->index < c->index ? c->index : o->index);
    refuse_here(c, why);
    refuse_here(o, why);
}

/* The agreement goes out at this call: this rank's own reason not to follow a plan travels in it
 * (the rank takes part without numbers; every rank stays in pass-through). */
static void issue_agreement(ub_comm *c) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    if (c->refusal[0] && !c->local_failure[0])
        snprintf(c->local_failure, sizeof c->local_failure, "%s", c->refusal);
    /* AGREE from here: the CUDA hooks leave the warm-up's record alone while it is encoded. */
    ub_comm_set_state(c, UB_COMM_AGREE, NULL);
    ub_transition next = ub_comm_agree_issue(c);
    apply(c, &next);
}

/* A failure of this rank's own work on the communicator (ub_comm_set_failed: a block, the
 * verification's collective or an agreement refused, memory not had): the call is answered with
 * it, not forwarded.  The first time, the reports say so at once, since a job that handles the
 * error by ending the process may never reach the reports at exit. */
static bool failure_answered(ub_comm *c, ub_coll_token *t) UB_REQUIRES(ub_state_mutex)
{
    if (c->failed == ncclSuccess)
        return false;
    t->result = c->failed;
    if (!c->failure_reported) {
        c->failure_reported = true;
        ub_state_write_reports_held();
    }
    return true;
}

/* Lock held, after the call's handling released it (an agreement, the verification's or
 * calibration's collective, a wait): another thread aborted the communicator meanwhile.  The call
 * is answered, not forwarded: NCCL has freed the communicator or is freeing it. */
static bool aborted_meanwhile(ub_comm *c, uint64_t index, ub_coll_token *t) UB_REQUIRES(ub_state_mutex)
{
    if (!atomic_load(&c->aborted))
        return false;
    ub_error("communicator %d: aborted by another thread while usbyte handled call %llu: the call is not issued",
             c->index, (unsigned long long)index);
    t->result = ncclInvalidUsage;
    return true;
}

/* SCHEDULE: the cursor counted USBYTE_MAX_DEVIATIONS deviations in a row: the communicator is
 * profiled again, from detection (a new phase of training, a new plan). */
static void redetect_after_deviations(ub_comm *c) UB_REQUIRES(ub_state_mutex)
{
    char why[200];
    snprintf(why, sizeof why, "%d deviations from the plan in a row (USBYTE_MAX_DEVIATIONS=%d): profiling again",
             c->sched.consecutive_deviations, ub_cfg.max_deviations);
    ub_info("communicator %d: %s", c->index, why);
    ub_transition again = ub_warmup_redetect(c, why);
    apply(c, &again);
}

void ub_comm_deviates(ub_comm *c, const char *why)
{
    if (ub_sched_deviation(c, why))
        redetect_after_deviations(c);
}

/* SCHEDULE: the call goes to the plan's cursor (defer.c); a block issue it triggered that failed
 * is answered with the failure (the call is not forwarded: the communicator is in pass-through
 * from now on). */
static bool sched_call(ub_comm *c, const ub_coll_desc *d, const ub_call_sig *cs, const ub_call_lookup *at, ub_coll_token *t) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    uint64_t index = c->sched.next_call;
    ub_sched_asks asks = {0};
    bool held = ub_sched_call(c, d, cs, at, &asks);
    t->stream_work_noted = asks.stream_work_noted;
    if (asks.profile_again)
        redetect_after_deviations(c);
    if (failure_answered(c, t) || (!held && aborted_meanwhile(c, index, t)))
        return true;
    /* Verification kept or dropped a plan at this call: the model may be fitted again with its
     * blocks. */
    if (asks.refit)
        ub_comm_refit(c);
    return held;
}

/* Per state, the call at res->index of communicator c (docs/runtime.md, "The life of a
 * communicator").  Each is called with the global lock held and returns with it held; true:
 * the call is taken over (t->result is the answer), as ub_coll_before returns. */

/* DETECT: a lock on a period starts the warm-up at the next iteration boundary. */
static bool on_detect(ub_comm *c, const ub_coll_desc *d, const ub_iter_result *res) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    if (res->event == UB_ITER_LOCKED || res->event == UB_ITER_IN_PHASE) {
        ub_cfg_agree_issue(c); /* releases the lock around its NCCL call */
        /* Destroyed or aborted meanwhile by another thread, or this rank could not issue it. */
        if (atomic_load(&c->ending) || c->failed != ncclSuccess)
            return false;
        if (ub_cfg.mode == UB_MODE_OFF) { /* it took part in what every rank issues, and nothing else */
            ub_comm_set_state(c, UB_COMM_PASS_THROUGH, "USBYTE_MODE=off");
            return false;
        }
        c->period = res->period;
        /* Profile whole iterations only: start at the next iteration boundary. */
        uint64_t next = res->index + (res->period - res->position);
        c->iterations_observed = 0;
        c->rephased = false; /* a new lock may start mid-iteration again: one move each */
        ub_transition profiling = ub_warmup_start(c, next);
        apply(c, &profiling);
        if (!ub_comm_agree_buffers(c) && !c->local_failure[0])
            snprintf(c->local_failure, sizeof c->local_failure, "cannot allocate the agreement buffers");
        ub_stream_get(d->stream, c); /* its next upstream waits are the first profiled call's */
        ub_debug("communicator %d: period %u calls found at call %llu; profiling %d iterations from call %llu",
                 c->index, res->period, (unsigned long long)res->index, ub_cfg.warmup, (unsigned long long)next);
    } else if (res->event == UB_ITER_GAVE_UP) {
        char why[256];
        snprintf(why, sizeof why, "no repeating call sequence found (%s)", ub_iterdet_gave_up_reason(c->det));
        ub_comm_set_state(c, UB_COMM_PASS_THROUGH, why);
    }
    return false;
}

/* PROFILE: the warm-up records its iterations' calls; at call agree_at, the first after it, the
 * agreement is issued.  A deviation restarts detection at this call. */
static bool on_profile(ub_comm *c, const ub_coll_desc *d, uint64_t sig, const ub_iter_result *res, ub_coll_token *t) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    if (res->event != UB_ITER_IN_PHASE) {
        ub_transition again = ub_warmup_restart(c, res->event == UB_ITER_DEVIATION ? "the call sequence deviated" : "the lock was lost");
        apply(c, &again);
        if (c->state == UB_COMM_DETECT)
            return on_detect(c, d, res);
        return false;
    }
    if (res->index >= c->profile_start && !c->cfg_agree.read) {
        read_config_agreement(c);
        if (aborted_while_waiting(c, res->index, "for the configuration agreement", t))
            return true;
        if (c->state != UB_COMM_PROFILE) /* the configurations differ: pass-through from here */
            return false;
    }
    if (!c->local_failure[0])
        ub_timing_poll(&c->tm);
    if (res->index >= c->agree_at) {
        /* The first call after the warm-up: the same call index on every rank, inside a
         * group or not (the group structure is rank-local). */
        ub_warmup_record_end(c, d);
        issue_agreement(c);
        if (aborted_while_waiting(c, res->index, "for the warm-up's timing events", t))
            return true;
    } else if (res->index < c->profile_start) {
        /* Before the first profiled iteration: know the stream (so that the next waits on it
         * count), and let no upstream wait of an unrecorded call leak into a recorded one. */
        ub_stream *st = c->local_failure[0] ? NULL : ub_stream_get(d->stream, c);
        if (st && st->comm == c)
            ub_warmup_file_ready(c, st);
    } else {
        uint64_t it = (res->index - c->profile_start) / c->period;
        uint32_t pos = (uint32_t)((res->index - c->profile_start) % c->period);
        int k = ub_warmup_record_call(c, d, sig, it, pos);
        if (k >= 0) {
            t->comm = c;
            t->call = k;
            t->iteration = it;
        }
    }
    return false;
}

/* Agreed: the period is refuted by some rank's buffers.  Every rank restarts at this same call,
 * looking for a longer period: the one every rank's full signatures repeat with, when they all
 * found the same multiple, else twice it. */
static void restart_refuted(ub_comm *c) UB_REQUIRES(ub_state_mutex)
{
    char why[200];
    uint32_t next = c->addr_period > c->period && c->addr_period % c->period == 0 ? c->addr_period : 2 * c->period;
    snprintf(why, sizeof why, "a period of %u calls is refuted by the buffer addresses", c->period);
    if (next > UB_ITER_MAX_PERIOD) {
        ub_comm_set_state(c, UB_COMM_PASS_THROUGH, why);
    } else {
        c->min_period = next;
        ub_debug("communicator %d: %s; looking for a period of at least %u calls", c->index, why, next);
        ub_transition again = ub_warmup_redetect(c, why);
        apply(c, &again);
    }
}

/* PLANNED with the executor ready, at the call where the plan takes effect on every rank: schedule
 * mode from this call, which is the plan's first. */
static bool begin_schedule(ub_comm *c, const ub_coll_desc *d, const ub_call_sig *cs, const ub_iter_result *res,
                           ub_coll_token *t) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    ub_sched_begin(c, res->index);
    ub_comm_set_state(c, UB_COMM_SCHEDULE, NULL);
    return sched_call(c, d, cs, NULL, t); /* the way in answered for another state */
}

/* A call of calibration's (calibrate.c: the probes at agree_at + period, their agreed times one
 * iteration later, the re-plan one more iteration later): where the plan is decided, a plan that
 * schedules starts at this call on every rank. */
static bool at_calibration(ub_comm *c, const ub_coll_desc *d, const ub_call_sig *cs, const ub_iter_result *res,
                           ub_coll_token *t) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    bool decided = ub_calib_step(c, res->index);
    if (decided) {
        decide_schedule(c);
        ub_state_write_reports();
    }
    if (aborted_while_waiting(c, res->index, "for calibration", t))
        return true;
    if (decided && c->state == UB_COMM_PLANNED && c->sched.ready)
        return begin_schedule(c, d, cs, res, t);
    return false;
}

/* Call agree_at + period: what the agreement decided takes effect here on every rank, in every
 * mode, whether this rank read the result early (a poll: timing) or reads it now. */
static bool at_switch(ub_comm *c, const ub_coll_desc *d, const ub_call_sig *cs, const ub_iter_result *res, ub_coll_token *t) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    read_agreement_at_switch(c);
    if (aborted_while_waiting(c, res->index, "for the agreement", t))
        return true;
    if (c->state != UB_COMM_PLANNED) {
        /* pass-through, said by the agreement */
    } else if (c->refuted) {
        restart_refuted(c);
    } else if (c->agree_again) {
        /* Agreed: some rank had no complete iteration.  Every rank issues the agreement again at
         * this same call, from the same warm-up (more of its timing complete by now), before
         * forwarding it. */
        c->agree_again = false;
        c->agree_at = res->index;
        issue_agreement(c);
        if (aborted_while_waiting(c, res->index, "while the agreement was issued again", t))
            return true;
    } else if (c->phase_pos > 0) {
        /* Agreed: the iteration begins phase_pos calls later.  Every rank profiles again from
         * that same call, with the same period. */
        ub_transition again = ub_warmup_rephase(c, res->index + c->phase_pos);
        apply(c, &again);
        ub_stream_get(d->stream, c); /* as at a lock: its next upstream waits count */
    } else if (ub_calib_due(c, res->index)) {
        return at_calibration(c, d, cs, res, t);
    } else if (c->sched.ready) {
        return begin_schedule(c, d, cs, res, t);
    }
    return false;
}

/* AGREE and PLANNED: the agreement's result is read when it is there (outside a group), and at
 * the latest at the switch. */
static bool on_agreed(ub_comm *c, const ub_coll_desc *d, const ub_call_sig *cs, const ub_iter_result *res, ub_coll_token *t) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    if (res->index == c->agree_at + c->period)
        return at_switch(c, d, cs, res, t);
    if (c->state == UB_COMM_PLANNED && ub_calib_due(c, res->index))
        return at_calibration(c, d, cs, res, t);
    if (c->state == UB_COMM_AGREE && ub_thread_group_depth() == 0) {
        /* Reading the result early changes nothing that is issued: the plan takes effect at call
         * agree_at + period, read or not. */
        read_agreement(c, UB_AGREE_POLL);
        /* The read plans and writes the report without the global lock. */
        if (aborted_while_waiting(c, res->index, "while the agreement was read", t))
            return true;
    }
    return false;
}

/* The call's portable signature into the period detectors (and the full one, rank-local: only its
 * period goes into the agreement, as evidence); counts whole iterations seen after detection. */
static void detect_feed(ub_comm *c, const ub_coll_desc *d, const ub_call_sig *cs, uint64_t sig, ub_iter_result *res)
{
    ub_iterdet_feed(c->det, sig, res);
    if (c->det_full) { /* every call before the plan runs */
        ub_iter_result full;
        ub_call_sig fs = *cs;
        fs.sendbuf = (uintptr_t)d->send;
        fs.recvbuf = (uintptr_t)d->recv;
        ub_iterdet_feed(c->det_full, ub_sig_full(&fs), &full);
    }
    if ((res->event == UB_ITER_IN_PHASE || res->event == UB_ITER_LOCKED) && res->position == 0 &&
        c->state != UB_COMM_DETECT)
        c->iterations_observed++;
}

/* The call at the communicator's state (lock held): true when taken over, as ub_coll_before
 * returns. */
static bool call_before(ub_comm *c, const ub_coll_desc *d, const ub_call_lookup *at, ub_coll_token *t) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    /* This rank's own work failed (since the last call too: a host wait flushed blocks): the
     * application hears of it here, at every call. */
    if (failure_answered(c, t))
        return true;
    if (c->state == UB_COMM_DISABLED || c->state == UB_COMM_PASS_THROUGH) {
        ub_state_note_passing_through(c);
        return false;
    }
    if (c->issuer != (unsigned long)pthread_self()) {
        c->issuer = (unsigned long)pthread_self();
        note_shared_issuer(c);
    }
    note_stream(c, d->stream);
    ub_call_sig cs = {.kind = portable_kind(d->id), .count = d->count, .dtype = d->dtype, .op = portable_op(d->op), .peer = d->root};
    if (c->state == UB_COMM_SCHEDULE) /* the cursor hashes the signature with its own look */
        return sched_call(c, d, &cs, at, t);
    uint64_t sig = ub_sig_portable(&cs);
    ub_iter_result res;
    detect_feed(c, d, &cs, sig, &res);
    bool taken = false;
    switch (c->state) {
    case UB_COMM_DETECT: taken = on_detect(c, d, &res); break;
    case UB_COMM_PROFILE: taken = on_profile(c, d, sig, &res, t); break;
    case UB_COMM_AGREE:
    case UB_COMM_PLANNED: taken = on_agreed(c, d, &cs, &res, t); break;
    default: break;
    }
    /* What this call made usbyte issue failed here (an agreement, calibration, the plan's set-up):
     * the other ranks issued theirs, so the call itself must not reach NCCL either. */
    return failure_answered(c, t) || taken || aborted_meanwhile(c, res.index, t);
}

bool ub_coll_before(const ub_coll_desc *d, ub_coll_token *t)
{
    t->comm = NULL;
    t->call = -1;
    t->result = ncclSuccess;
    t->stream_work_noted = false;
    ub_call_lookup at;
    if (!ub_state_lock_call(d->comm, d->stream, &at))
        return false;
    if (!at.comm) { /* not seen at its creation: NCCL is asked who it is, without the lock */
        ub_state_unlock();
        int rank, nranks, device;
        comm_identity(d->comm, &rank, &nranks, &device);
        at.comm = ub_state_lock_adopted(d->comm, rank, nranks, device);
    }
    bool taken = at.comm && call_before(at.comm, d, &at, t);
    if (!taken && !t->stream_work_noted && atomic_load_explicit(&ub_sched_live, memory_order_relaxed)) {
        ub_redirect_stream_work_locked(d->stream); /* forwarded next, by this thread */
        t->stream_work_noted = true;
    }
    ub_state_unlock();
    return taken;
}

void ub_coll_forwarded(const ub_coll_desc *d)
{
    if (atomic_load_explicit(&ub_sched_live, memory_order_relaxed) && !ub_state_in_child())
        ub_redirect_stream_work(d->stream);
}

void ub_coll_after(const ub_coll_desc *d, const ub_coll_token *t, ncclResult_t r)
{
    (void)r;
    ub_state_lock();
    ub_comm *c = t->comm;
    if (c->state == UB_COMM_PROFILE)
        ub_warmup_call_end(c, (int)t->iteration, t->call, d->stream);
    ub_state_unlock();
}

static void write_reports_at_exit(void) UB_REQUIRES(ub_state_mutex)
{
    int n;
    ub_comm **all = ub_state_all_comms(&n);
    for (int i = 0; i < n; i++)
        if (all[i]->state == UB_COMM_SCHEDULE && all[i]->handle)
            ub_sched_summary(all[i]);
    if (n == 0 && !ub_state_live_comms())
        ub_report_no_communicator();
    else
        ub_state_write_reports_held();
}

/* trylock: a thread may have died holding the lock (exit from a signal handler); a report from
 * slightly inconsistent state beats a hang at exit.  The analysis cannot follow a lock that may
 * be a dead thread's: the runtime's one function outside it. */
void ub_state_write_reports_at_exit(void) UB_NO_LOCK_ANALYSIS
{
    if (ub_state_in_child())
        return;
    bool locked = ub_state_trylock();
    write_reports_at_exit();
    if (locked)
        ub_state_unlock();
}
