/* The agreement at the first call after the warm-up (docs/design.md sections 1 and 5); what is
 * decided on the agreed numbers is decide.c's, the report report_rt.c's, the move of the state the
 * life cycle's (the issue and the read return it).  The collectives issued
 * here depend only on the call sequence: they are issued at the same call index on every rank,
 * inside an NCCL group or not, and their sizes are constants (UB_AGREE_MAX_LEN,
 * UB_AGREE_SUM_LEN), whatever each rank measured.  Nothing waits for them where they are issued;
 * the result is read later, at the latest at the switch to the plan (docs/runtime.md, "Schedule
 * mode rule"). */
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agree_rt.h"
#include "calibrate.h"
#include "capture.h"
#include "collwait.h"
#include "cuda_error.h"
#include "cuda_list.h"
#include "decide.h"
#include "defer.h"
#include "device.h"
#include "exec.h"
#include "globals.h"
#include "group.h"
#include "guard.h"
#include "log.h"
#include "nccl_list.h"
#include "report_rt.h"
#include "state.h"
#include "tables.h"
#include "verify.h"
#include "warmup.h"
#include "usbyte/io.h"
#include "usbyte/model.h"
#include "usbyte/policy.h"

/* Communicators whose agreement is issued and not read yet: a thread leaving its outermost group
 * looks for a result to read only while there is one. */
static atomic_int agree_unread;

bool ub_agree_any_unread(void) { return atomic_load(&agree_unread) > 0; }

void ub_comm_agree_abandon(ub_comm *c)
{
    if (c->agree_issued) /* not while its issue is under way on another thread */
        atomic_fetch_sub(&agree_unread, 1);
    c->agree_issued = false;
}

/* What this rank measured itself in the warm-up (before the agreement takes the maximum over the
 * ranks): its iteration lengths, its ready times and the recording of every call on the host's
 * wall clock.  Built without the lock (the record is this thread's while it issues the
 * agreement); false when out of memory. */
static bool measure_local(ub_comm *c, const ub_summary *sum, ub_rank_local *l)
{
    memset(l, 0, sizeof *l);
    l->origin = NAN;
    int w = c->rec.warmup, n = sum->n_calls;
    double *len = malloc((size_t)(w > 0 ? w : 1) * sizeof *len);
    l->ready = malloc((size_t)n * sizeof *l->ready);
    if (c->tm.ok && isfinite(c->tm.epoch_unix))
        l->rec = malloc((size_t)w * (size_t)n * 3 * sizeof *l->rec);
    if (!len || !l->ready) {
        free(len);
        free(l->ready);
        free(l->rec);
        return false;
    }
    ub_record_iterations(&c->rec, len);
    l->iteration = ub_spread_of(len, w);
    free(len);
    l->n_calls = n;
    for (int k = 0; k < n; k++)
        l->ready[k] = sum->calls[k].ready;
    if (l->rec) {
        l->origin = c->tm.epoch_unix;
        l->rec_iterations = w;
        for (int it = 0; it < w; it++)
            for (int k = 0; k < n; k++) {
                const ub_rec_call *x = ub_record_at(&c->rec, it, k);
                double *o = &l->rec[((size_t)it * (size_t)n + (size_t)k) * 3];
                o[0] = x->ready;
                o[1] = x->start;
                o[2] = x->end;
            }
    }
    return true;
}

/* Schedule mode's executor, reserved before the agreement (exec.h): its failure is a flag of the
 * agreement, not a rank that cannot follow the others.  Returns the staging bytes this rank
 * offers the planner: what a plan of this iteration may stage (USBYTE_STAGING_MB at most),
 * within what is allocated in schedule mode.  Runs without the lock (the issuing thread). */
static uint64_t reserve_executor(ub_comm *c)
{
    uint64_t total = 0;
    for (int k = 0; k < c->n_ar; k++)
        total += c->rec.bytes[k];
    uint64_t limit = (uint64_t)ub_cfg.staging_mb << 20, wanted = total < limit ? total : limit;
    c->exec_failure[0] = '\0';
    if (ub_cfg.mode != UB_MODE_SCHEDULE || c->local_failure[0] || c->n_ar <= 0)
        return wanted;
    if (ub_exec_reserve(c, c->n_ar, wanted, c->exec_failure, sizeof c->exec_failure) != 0 ||
        ub_calib_reserve(c, c->exec_failure, sizeof c->exec_failure) != 0 ||
        ub_verify_reserve(c, c->exec_failure, sizeof c->exec_failure) != 0) {
        ub_warn("communicator %d: %s: every rank will stay in pass-through", c->index, c->exec_failure);
        return 0;
    }
    return c->sched.staging_cap < wanted ? c->sched.staging_cap : wanted;
}

bool ub_comm_agree_buffers(ub_comm *c)
{
    return ub_coll_buffers(c->device, (size_t)(UB_AGREE_MAX_LEN + UB_AGREE_SUM_LEN) * sizeof(double), &c->agree_host,
                           &c->agree_dev, &c->agree_done);
}

/* The period of this rank's full signatures (buffers included), 0 when its detector has none. */
static double full_period(const ub_comm *c)
{
    uint32_t p = 0;
    uint64_t start;
    if (!c->det_full || !ub_iterdet_locked(c->det_full, &p, &start))
        p = 0;
    return (double)p;
}

/* Some allreduce had no event recorded right after it: per-call completion cannot be offered. */
static bool missing_own_end(const ub_comm *c)
{
    if (!c->has_end_event)
        return true;
    for (int k = 0; k < c->n_ar; k++)
        if (!c->has_end_event[k])
            return true;
    return false;
}

/* After the launch of the group that held the agreement (nothing left when the switch to the
 * plan launched it early). */
static void copy_back_after_launch(const void *data) UB_REQUIRES(ub_state_mutex)
{
    ub_comm *c = *(ub_comm *const *)data;
    if (c->agree_copy_pending)
        ub_comm_agree_copy_back(c);
}

/* Every warm-up timing of every call (debug). */
static void log_raw_warmup(ub_comm *c)
{
    for (int it = 0; it < c->rec.warmup; it++)
        for (int k = 0; k < c->n_ar; k++) {
            ub_rec_call *x = ub_record_at(&c->rec, it, k);
            ub_debug("raw it %d call %d: ready %.6f start %.6f end %.6f need %.6f%s", it, k, x->ready, x->start,
                     x->end, x->need, x->upstream ? "" : " fallback");
        }
}

/* The settled iterations summarised into *sum (true), with the iterations used as bits;
 * false when there is nothing to summarise, or no memory (then local_failure says so). */
static bool summarize_warmup(ub_comm *c, ub_summary *sum, uint64_t used_bits[16])
{
    bool *settled = calloc((size_t)c->rec.warmup + 1, sizeof *settled);
    if (settled && !c->local_failure[0])
        ub_warmup_settled(c, settled);
    bool wanted = !c->local_failure[0] && c->n_ar > 0 && c->n_ar <= UB_AGREE_CAP;
    bool have = wanted && settled && ub_record_summarize(&c->rec, settled, sum) == 0;
    free(settled);
    for (int it = 0; have && it < c->rec.warmup && it < 1024; it++)
        if (sum->used[it])
            used_bits[it / 64] |= 1ull << (it % 64);
    if (wanted && !have)
        snprintf(c->local_failure, sizeof c->local_failure, "cannot summarise the warm-up (out of memory)");
    return have;
}

/* This rank's flags for the agreement (decide.c turns the agreed ones into the verdict). */
static ub_agree_flags local_flags(ub_comm *c, const ub_summary *sum, uint64_t staging)
{
    return (ub_agree_flags){
        .stream_ordered = c->stream_ordered,
        .stream_compute = c->stream_compute,
        .stream_copies = c->stream_copies,
        .cupti_missing = (ub_cfg.cupti && (c->report.cupti || c->cupti_taken)) ? 0.0 : (double)c->rank + 1.0,
        .cupti_taken = ub_cfg.cupti && c->cupti_taken ? (double)c->rank + 1.0 : 0.0,
        .no_end_records = c->end_records || c->stream_host_waits ? 0.0 : 1.0,
        .other_calls = c->other_calls,
        .copy_beta = ub_comm_copy_beta(c),
        .multi_stream = c->multi_stream ? 1.0 : 0.0,
        .legacy_stream = c->legacy_stream ? 1.0 : 0.0,
        .blocking_stream = c->blocking_stream ? 1.0 : 0.0,
        .missing_own_end = missing_own_end(c) ? 1.0 : 0.0,
        .p2p = c->p2p ? 1.0 : 0.0,
        .period_refuted = c->period_refuted ? 1.0 : 0.0,
        .addr_period = full_period(c),
        .neg_addr_period = -full_period(c),
        .neg_iterations = sum ? -(double)sum->iterations_used : 0.0,
        .exec_failed_rank = c->exec_failure[0] ? (double)c->rank + 1.0 : 0.0,
        .neg_staging = -(double)staging,
    };
}

/* The encoded vectors to the device and their two collectives, on the agreement stream (made
 * here on the communicator's device if the warm-up has none).  Constant sizes, back to back,
 * nothing read in between: inside a group NCCL launches them at the outermost ncclGroupEnd, so
 * nothing may wait for them here.  Without the lock.  Returns NCCL's refusal of a collective
 * (a communicator with an asynchronous error, a peer gone, refuses every operation), or
 * ncclUnhandledCudaError with *cuda_failed naming the CUDA call that failed. */
static ncclResult_t issue_vectors(ub_comm *c, const char **cuda_failed)
{
    double *maxv = c->agree_host;
    double *dmax = c->agree_dev, *dsum = dmax + UB_AGREE_MAX_LEN;
    cudaStream_t s = c->tm.agree ? c->tm.agree : NULL;
    *cuda_failed = NULL;
    if (!s) {
        int previous = ub_device_enter(c->device);
        if (UB_CUDA(ub_cuda.cudaStreamCreateWithPriority(&c->tm.agree, cudaStreamNonBlocking, 0)) == cudaSuccess)
            s = c->tm.agree;
        ub_device_leave(previous);
    }
    if (!s)
        *cuda_failed = "cannot create the private stream";
    else if (UB_CUDA(ub_cuda.cudaMemcpyAsync(dmax, maxv, (size_t)(UB_AGREE_MAX_LEN + UB_AGREE_SUM_LEN) * sizeof(double),
                                             cudaMemcpyHostToDevice, s)) != cudaSuccess)
        *cuda_failed = "cudaMemcpyAsync of the agreement vectors failed";
    if (*cuda_failed)
        return ncclUnhandledCudaError;
    ncclResult_t r = UB_NCCL(ub_nccl.AllReduce(dmax, dmax, UB_AGREE_MAX_LEN, ncclFloat64, ncclMax, c->handle, s));
    if (r == ncclSuccess)
        r = UB_NCCL(ub_nccl.AllReduce(dsum, dsum, UB_AGREE_SUM_LEN, ncclFloat64, ncclSum, c->handle, s));
    return r;
}

/* Lock held again after the agreement's vectors went out (or could not): what the issue leaves
 * the communicator in. */
static ub_transition after_vectors(ub_comm *c, const char *cuda_failed, ncclResult_t refused) UB_REQUIRES(ub_state_mutex)
{
    if (atomic_load(&c->ending)) {
        /* Aborted while the collectives went out without the lock: nothing will read them, and
         * the abort left the warm-up's resources to this thread. */
        ub_comm_stop_profiling(c);
        return ub_stay();
    }
    if (cuda_failed) {
        ub_comm_cannot_take_part(c, refused, cuda_failed);
        ub_comm_stop_profiling(c);
        return ub_stay();
    }
    if (refused != ncclSuccess) {
        /* NCCL refuses the communicator (after a peer's death every operation returns its
         * asynchronous error): nothing is agreed and usbyte issues nothing more on it; the call
         * at agree_at returns the error (lifecycle.c), and the application's handling runs. */
        char why[200];
        snprintf(why, sizeof why, "NCCL refused the agreement's collectives (%s)", ub_nccl_result_name(refused));
        ub_error("communicator %d: %s: pass-through from now on; the call returns the error", c->index, why);
        atomic_store(&c->peer_error, (int)refused);
        ub_comm_stop_profiling(c);
        return ub_move(UB_COMM_PASS_THROUGH, why);
    }
    c->agree_issued = true;
    atomic_fetch_add(&agree_unread, 1);
    ub_comm_stop_watching(c);
    ub_debug("communicator %d: agreement issued at call %llu%s", c->index, (unsigned long long)c->agree_at,
             ub_thread_in_group() ? " inside a group (copied back at its ncclGroupEnd)" : "");
    if (ub_thread_in_group()) {
        /* Work enqueued on the private stream now would run before the collectives' launch. */
        c->agree_copy_pending = true;
        c->agree_thread = (unsigned long)pthread_self();
        if (!ub_group_after_launch(copy_back_after_launch, &c, sizeof c)) {
            ub_comm_cannot_take_part(c, ncclSystemError, "no room to queue the agreement's copy back after the "
                                     "group's launch");
            ub_comm_agree_abandon(c);
        }
    } else {
        ub_comm_agree_copy_back(c);
    }
    return ub_stay();
}

ub_transition ub_comm_agree_issue(ub_comm *c) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    if (!c->local_failure[0])
        ub_comm_file_ready(c);
    /* The CUDA hooks skip a communicator that is not in PROFILE: the recorder is ours alone now
     * (an abort meanwhile leaves it to this thread). */
    c->issuing_agreement = true;
    ub_state_unlock();
    ub_report_learn_versions();
    /* Never waits: the iterations whose timing events have all completed are the ones this rank
     * contributes, with their count, and the agreed numbers decide (no iteration complete on some
     * rank: every rank profiles again).  A wait here could last for ever (a peer gone) and would
     * make the time of the issue depend on the device. */
    if (!c->local_failure[0])
        ub_timing_poll(&c->tm);
    if (atomic_load(&c->ending)) {
        /* Aborted meanwhile (a peer gone, the watchdog): nothing to agree with.  The abort left
         * the warm-up's resources to this thread; they go without waiting for device work. */
        ub_state_lock();
        c->issuing_agreement = false;
        ub_comm_stop_profiling(c);
        return ub_stay();
    }

    if (ub_log_enabled(UB_LOG_DEBUG) && !c->local_failure[0])
        log_raw_warmup(c);
    ub_summary sum;
    uint64_t used_bits[16] = {0};
    bool have_summary = summarize_warmup(c, &sum, used_bits);
    uint64_t staging = reserve_executor(c);
    ub_agree_local local = {
        .n_calls = c->n_ar,
        .period = c->period,
        .seq_hash = ub_seqhash_value(&c->seq),
        .settings = {
#define X(field, var) .field = (int)ub_cfg.field,
            UB_AGREE_SETTING_LIST(X)
#undef X
        },
        .summary = have_summary ? &sum : NULL,
        .flags = local_flags(c, have_summary ? &sum : NULL, staging),
    };
    const char *cuda_failed = NULL;
    ncclResult_t refused = ncclSuccess;
    ub_rank_local mine;
    bool have_mine = false;
    if (!ub_comm_agree_buffers(c)) {
        cuda_failed = "cannot allocate the agreement buffers";
        refused = ncclSystemError;
    } else {
        ub_agree_encode(&local, c->agree_host, c->agree_host + UB_AGREE_MAX_LEN);
        have_mine = have_summary && measure_local(c, &sum, &mine);
        refused = issue_vectors(c, &cuda_failed);
    }
    if (have_summary)
        ub_summary_free(&sum);
    ub_state_lock();
    c->issuing_agreement = false;
    memcpy(c->report.warmup_used, used_bits, sizeof used_bits);
    if (have_mine)
        ub_comm_report_set_local(&c->report, &mine);
    return after_vectors(c, cuda_failed, refused);
}

void ub_comm_agree_copy_back(ub_comm *c)
{
    c->agree_copy_pending = false;
    cudaStream_t s = c->tm.agree;
    size_t bytes = (size_t)(UB_AGREE_MAX_LEN + UB_AGREE_SUM_LEN) * sizeof(double);
    if (UB_CUDA(ub_cuda.cudaMemcpyAsync(c->agree_host, c->agree_dev, bytes, cudaMemcpyDeviceToHost, s)) != cudaSuccess ||
        UB_CUDA(ub_cuda.cudaEventRecord(c->agree_done, s)) != cudaSuccess) {
        ub_comm_cannot_take_part(c, ncclUnhandledCudaError, "cannot copy the agreement's result back");
        ub_comm_agree_abandon(c);
    }
}

/* Whether the agreement's result can be read now: at once (a poll) or after a wait without the
 * lock; *e: the completion event's status (cudaErrorNotReady: given up, or a peer gone). */
static bool result_there(ub_comm *c, ub_agree_wait how, cudaError_t *e) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    if (how == UB_AGREE_POLL) {
        *e = UB_CUDA(ub_cuda.cudaEventQuery(c->agree_done));
        return *e != cudaErrorNotReady;
    }
    /* Not under the lock: other threads' hooks must not wait for the other ranks. */
    cudaEvent_t done = c->agree_done; /* an abort meanwhile clears the field, not the event */
    ub_state_unlock();
    char what[80], why[200];
    snprintf(what, sizeof what, "the agreement issued at call %llu", (unsigned long long)c->agree_at);
    snprintf(why, sizeof why, "the plan starts at call %llu on every rank, which needs it",
             (unsigned long long)(c->agree_at + c->period));
    *e = ub_comm_wait_done(c, done, how == UB_AGREE_WAIT_OR_GIVE_UP, what, why);
    ub_state_lock();
    return c->state == UB_COMM_AGREE;
}

/* Decodes the result into *agreed (*decoded: it holds memory to free); returns why this rank cannot
 * use it (NULL: it can), written into why[] or *mismatch (allocated) when it is composed. */
static const char *read_failure(ub_comm *c, cudaError_t e, ub_agreed *agreed, bool *decoded, char *why, size_t len,
                                char **mismatch)
{
    *decoded = false;
    if (atomic_load(&c->peer_error) != ncclSuccess)
        return "the agreement cannot complete: NCCL reports an asynchronous error (a peer gone)";
    if (e == cudaErrorNotReady)
        return "the agreement did not complete within USBYTE_HANG_S (a rank gone?)";
    if (e != cudaSuccess)
        return "the agreement's result could not be read";
    ub_agree_outcome outcome = ub_agree_decode(c->agree_host, c->agree_host + UB_AGREE_MAX_LEN, agreed);
    if (outcome == UB_AGREE_RANK_FAILED && c->local_failure[0]) {
        snprintf(why, len, "%s (on this rank: %s)", ub_agree_outcome_reason(outcome), c->local_failure);
        return why;
    }
    if (outcome == UB_AGREE_MISMATCH) {
        /* What differs, in full: the call sequence, the version, each setting. */
        size_t need = ub_agree_mismatch_text(c->agree_host, why, len) + 1;
        if (need > len && (*mismatch = malloc(need)) != NULL) {
            ub_agree_mismatch_text(c->agree_host, *mismatch, need);
            return *mismatch;
        }
        return why;
    }
    if (outcome != UB_AGREE_OK)
        return ub_agree_outcome_reason(outcome);
    *decoded = true;
    if (agreed->flags.exec_failed_rank > 0.5) {
        int who = (int)(agreed->flags.exec_failed_rank + 0.5) - 1;
        if (who == c->rank && c->exec_failure[0])
            snprintf(why, len, "rank %d (this rank) %s before the agreement", who, c->exec_failure);
        else
            snprintf(why, len, "rank %d could not set up schedule mode's executor before the agreement (its report "
                     "says why)", who);
        return why;
    }
    if (-agreed->flags.neg_iterations < 0.5 && agreed->flags.period_refuted <= 0 &&
        ++c->agree_tries > UB_MAX_AGREE_TRIES) {
        snprintf(why, len, "no warm-up iteration had all its timing events complete on every rank, %d iterations "
                 "after the warm-up (the device far behind the host)", UB_MAX_AGREE_TRIES + 1);
        return why;
    }
    return NULL;
}

/* What this rank saw of the warm-up, for the report (whatever the outcome). */
static void report_warmup(ub_comm *c)
{
    ub_comm_report *r = &c->report;
    r->calls_per_iteration = c->n_ar;
    r->nccl_calls_per_iteration = c->period;
    r->other_calls = c->other_calls;
    r->end_records = c->end_records;
    r->consumers_stream = c->consumers_stream;
    r->consumers_host = c->consumers_host;
    r->consumers_host_other = c->consumers_host_other;
    snprintf(r->stream_ordered_example, sizeof r->stream_ordered_example, "%s", c->stream_ordered_example);
}

ub_transition ub_agree_refused(ub_comm *c, const char *why, const char *short_why)
{
    ub_comm_verdict_refused(c, why);
    ub_comm_stop_profiling(c);
    /* The state's reason is short; the verdict's reason holds the whole text. */
    return ub_move(UB_COMM_PASS_THROUGH, strlen(why) < sizeof c->reason ? why : short_why);
}

/* The agreed numbers: the decision and where the iteration really begins; false when another
 * thread ended the communicator while it planned (an abort). */
static bool adopt(ub_comm *c, ub_agreed *agreed, bool *stream_sem) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    ub_comm_report *r = &c->report;
    if (ub_log_enabled(UB_LOG_DEBUG))
        for (int k = 0; k < agreed->n_calls; k++)
            ub_debug("communicator %d call %d: ready %.6f need %.6f done %.6f comm %.6f/%.6f%s%s", c->index, k,
                     agreed->calls[k].ready, agreed->calls[k].need, agreed->calls[k].done, agreed->calls[k].comm_cost,
                     agreed->calls[k].comm_mean, agreed->calls[k].barrier ? " barrier" : "",
                     agreed->calls[k].fallback ? " fallback" : "");
    c->staging_agreed = agreed->flags.neg_staging < 0 ? (uint64_t)(-agreed->flags.neg_staging) : 0;
    /* Per-call completion only where every call had its own end event on every rank. */
    *stream_sem = ub_cfg.completion == UB_COMPLETION_STREAM || agreed->flags.missing_own_end > 0;
    ub_call_kinds calls = {c->rec.bytes, c->rec.dtype, c->rec.op};
    if (!ub_comm_decide(c, agreed, &calls, *stream_sem, NULL, 0))
        return false;
    /* Locked mid-backward (after a re-detection the lock falls anywhere): most of the ranks'
     * profiled iterations say where the iteration really begins; it is profiled again from there. */
    c->phase_pos = 0;
    int first = r->have_profile && !c->rephased ? agreed->phase : 0;
    for (uint32_t p = 0; first > 0 && p < c->period; p++)
        if (c->pos_call[p] == first) {
            c->phase_pos = p;
            break;
        }
    /* What schedule mode needs of the warm-up outlives it. */
    ub_sched_take_period(c, c->pos_sig, c->pos_call, c->period);
    c->pos_sig = NULL;
    c->pos_call = NULL;
    ub_comm_stop_profiling(c);
    c->refuted = agreed->flags.period_refuted > 0;
    c->addr_period = agreed->flags.addr_period == -agreed->flags.neg_addr_period ? (uint32_t)agreed->flags.addr_period
                                                                                 : 0;
    return true;
}

void ub_comm_agree_read(ub_comm *c, ub_agree_wait how, ub_agree_result *out) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    memset(out, 0, sizeof *out);
    out->kind = UB_AGREE_UNREAD;
    out->next = ub_stay();
    if (c->state != UB_COMM_AGREE || !c->agree_issued || c->agree_copy_pending)
        return;
    cudaError_t e;
    if (!result_there(c, how, &e))
        return;
    ub_comm_agree_abandon(c);
    ub_debug("communicator %d: agreement read%s", c->index,
             how == UB_AGREE_WAIT_OR_GIVE_UP ? " before the communicator's destroy"
             : how == UB_AGREE_WAIT          ? " at the switch to the plan" : "");
    ub_agreed agreed = {0};
    bool decoded;
    char why[400], *mismatch = NULL;
    const char *failure = read_failure(c, e, &agreed, &decoded, why, sizeof why, &mismatch);
    /* Some rank contributed no iteration (none had completed when the agreement went out: the
     * device behind the host): every rank issues the agreement again, with the same warm-up and
     * whatever more of its timing has completed by then, at call agree_at + period, where the
     * switch was to be, as the agreed numbers say (lifecycle.c).  A refuted period needs no timing:
     * detection restarts instead, as below. */
    if (!failure && -agreed.flags.neg_iterations < 0.5 && agreed.flags.period_refuted <= 0) {
        ub_agreed_free(&agreed);
        c->agree_again = true;
        snprintf(why, sizeof why, "no warm-up iteration had completed on some rank when the agreement was issued: "
                 "issued again one iteration later (try %d)", c->agree_tries + 1);
        out->kind = UB_AGREE_REISSUE;
        out->next = ub_move(UB_COMM_PLANNED, why);
        return;
    }
    report_warmup(c);
    out->kind = UB_AGREE_DECLINED;
    if (failure && e != cudaSuccess && e != cudaErrorNotReady && atomic_load(&c->peer_error) == ncclSuccess &&
        how != UB_AGREE_WAIT_OR_GIVE_UP) {
        /* This rank alone cannot know what the others decided (a CUDA error here, theirs read):
         * pass-through could pair its calls with their blocks. */
        char what[600];
        snprintf(what, sizeof what, "%s (%s)", failure,
                 ub_cuda_error_text(e));
        ub_comm_stop_profiling(c);
        out->next = ub_fail(ncclUnhandledCudaError, what);
    } else if (failure) {
        out->next = ub_agree_refused(c, failure, "the agreement failed (the verdict says why)");
    } else if (adopt(c, &agreed, &out->stream_sem)) {
        out->kind = UB_AGREE_ADOPTED;
        out->next = ub_move(UB_COMM_PLANNED, NULL);
        out->agreed = agreed; /* the caller's now */
        decoded = false;
    } else {
        out->kind = UB_AGREE_UNREAD; /* ended by another thread (an abort) while planning */
    }
    free(mismatch);
    if (decoded)
        ub_agreed_free(&agreed);
}
