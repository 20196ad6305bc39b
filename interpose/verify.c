/* Schedule mode's verification (see verify.h).  Everything that changes what is issued here (which
 * iteration passes through, when the measurements go out, which plan runs) depends only on the
 * iteration count of the plan's cursor and on the agreed vector; the measurements themselves are
 * rank-local and enter only through that vector. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "collwait.h"
#include "cuda_error.h"
#include "cuda_list.h"
#include "device.h"
#include "exec.h"
#include "globals.h"
#include "group.h"
#include "guard.h"
#include "log.h"
#include "nccl_list.h"
#include "state.h"
#include "tables.h"
#include "verify.h"

static void free_plans(ub_verify_rt *v)
{
    for (int i = 0; i < v->n_candidates; i++)
        ub_plan_free(&v->plans[i]);
    v->n_candidates = 0;
}

static void add_candidate(ub_verify_rt *v, const ub_plan *plan, double predicted)
{
    int i = v->n_candidates++;
    ub_plan_init(&v->plans[i], plan->policy);
    ub_plan_copy(&v->plans[i], plan);
    v->predicted[i] = predicted;
    ub_verify_candidate_report *r = &v->report.candidates[i];
    snprintf(r->policy, sizeof r->policy, "%s", plan->policy);
    r->predicted_iteration = predicted;
    r->measured_iteration = r->spread = r->refit_predicted_iteration = NAN;
    r->iterations = 0;
    r->refit = false;
}

/* No re-fit asked or tried yet in this check. */
static void refit_afresh(ub_verify_rt *v)
{
    v->refit_from = -1;
    v->refit_tried = false;
    v->kept_before = -1;
    v->resume = -1;
    v->judged = 0;
    v->n_block_seconds = 0;
}

/* The candidate kept from this verdict on: its plan runs until the next check. */
static void keep_candidate(ub_verify_rt *v, int i)
{
    v->kept = v->loaded = i;
    v->window = -1;
    v->since_check = 0;
    snprintf(v->report.kept, sizeof v->report.kept, "%s", v->report.candidates[i].policy);
}

/* The candidate to try after candidate i was dropped, -1: none (pass-through): after a re-fitted
 * one, the one its re-fit put off; else the next in order of prediction not decided in this check. */
static int after_drop(const ub_verify_rt *v, int i)
{
    if (v->report.candidates[i].refit && v->resume >= 0)
        return v->resume;
    for (int j = i + 1; j < v->n_candidates; j++)
        if (!(v->judged >> j & 1))
            return j;
    return -1;
}

/* Whether candidate i's measured blocks may re-fit the model: once per check, from a candidate
 * not itself planned so, with room for the plan it gives. */
static bool refit_allowed(const ub_verify_rt *v, int i)
{
    return !v->refit_tried && !v->report.candidates[i].refit && v->n_candidates < UB_VERIFY_MAX_CANDIDATES &&
           v->n_block_seconds > 0;
}

int ub_verify_prepare(ub_comm *c, const ub_plan *first, double predicted_first, const ub_plan *second,
                      double predicted_second, char *why, size_t len)
{
    ub_verify_rt *v = &c->verify;
    free_plans(v);
    ub_verify_report_init(&v->report);
    v->on = ub_cfg.verify;
    v->window = -1;
    v->kept = -1;
    v->loaded = 0;
    v->trying = 0;
    refit_afresh(v);
    if (!v->on)
        return 0;
    add_candidate(v, first, predicted_first);
    if (second)
        add_candidate(v, second, predicted_second);
    v->report.present = true;
    v->report.n_candidates = v->n_candidates;
    v->report.every = ub_cfg.verify_every;
    if (!v->tm.ok || !v->host) {
        snprintf(why, len, "the verification's timing events and buffers were not reserved before the agreement");
        return -1;
    }
    return 0;
}

int ub_verify_reserve(ub_comm *c, char *why, size_t len)
{
    ub_verify_rt *v = &c->verify;
    if (!ub_cfg.verify)
        return 0;
    if (!v->tm.ok && ub_timing_start(&v->tm, c->device) != 0) {
        snprintf(why, len, "cannot set up the verification's timing events");
        return -1;
    }
    if (!v->host && !ub_coll_buffers(c->device, (UB_VERIFY_LEN + UB_VERIFY_MIN_LEN) * sizeof(double), &v->host, &v->dev,
                                     &v->done)) {
        snprintf(why, len, "cannot allocate the verification's buffers");
        return -1;
    }
    return 0;
}

/* A window of the candidate `trying`; `again`: another of the same candidate in this check, judged
 * with the earlier ones. */
static void start_window(ub_verify_rt *v, bool again)
{
    if (!again)
        v->earlier.windows = 0;
    v->window = 0;
    for (int w = 0; w < UB_VERIFY_MARKS; w++) {
        v->start[w] = NAN;
        v->spoiled[w] = false;
    }
}

void ub_verify_begin(ub_comm *c)
{
    ub_verify_rt *v = &c->verify;
    if (!v->on)
        return;
    /* A plan after re-profiling starts its candidates afresh; the cursor holds the first. */
    v->trying = 0;
    v->loaded = 0;
    v->kept = -1;
    v->report.reason[0] = '\0';
    refit_afresh(v);
    start_window(v, false);
}

void ub_verify_spoil(ub_comm *c)
{
    ub_verify_rt *v = &c->verify;
    /* The iteration under way is the one before `window` (its start was counted). */
    if (v->on && v->window > 0 && v->window <= UB_VERIFY_MARKS)
        v->spoiled[v->window - 1] = true;
}

/* Enqueued on the private stream, in stream order behind the plan's blocks: the vector to the
 * device, its in-place allreduce(sum), the copy back and the completion event.  Lock held; released
 * while the work is enqueued (never across a real NCCL call); inside the application's group the
 * group is ended and reopened around it, as around a block, so that it is launched here.  A CUDA
 * or NCCL refusal (a peer gone) is returned, with v->failure naming it: never an abort(), so that
 * the application's own error handling runs. */
static ncclResult_t issue_measurements(ub_comm *c, ub_verify_rt *v) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    double seconds[UB_VERIFY_SLOTS];
    for (int j = 0; j < UB_VERIFY_SLOTS; j++) {
        int w = ub_verify_slot_iteration(j);
        seconds[j] = !v->spoiled[w] && isfinite(v->start[w]) && isfinite(v->start[w + 1])
                         ? v->start[w + 1] - v->start[w] : NAN;
    }
    if (ub_log_enabled(UB_LOG_DEBUG))
        for (int j = 0; j < UB_VERIFY_SLOTS; j++)
            ub_debug("communicator %d: verification slot %d (%s): %.6f s", c->index, j,
                     j % 2 ? "pass-through" : v->plans[v->trying].policy, seconds[j]);
    /* The running candidate's blocks, beside its iterations: the model's re-fit once it is kept. */
    double blocks[UB_VERIFY_BLOCKS];
    int n_blocks = ub_exec_block_seconds(c, c->report.profile.copy_beta, blocks, UB_VERIFY_BLOCKS);
    double wait = ub_exec_block_wait(c, &c->report.profile, UB_VERIFY_BLOCKS);
    cudaStream_t p = c->sched.priv;
    cudaEvent_t done = v->done;
    double *host = v->host;
    void *dev = v->dev;
    bool unread = v->issued;
    v->issued = true;
    int depth = ub_thread_group_depth();
    /* Read under the lock (an abort clears it); an abort from another thread lets the calls
     * below return before NCCL frees the communicator (lifecycle.c). */
    ncclComm_t handle = c->handle;
    atomic_fetch_add(&v->issuing, 1);
    ub_state_unlock();
    /* A previous window's result never read (the plan was left in between) still lands in the
     * host buffer: it must have before the buffer is written again. */
    if (unread)
        ub_comm_wait_done(c, done, false, "an earlier verification's measurements", "they must land first");
    ub_verify_encode(seconds, host);
    for (int b = 0; b < UB_VERIFY_BLOCKS; b++)
        host[UB_VERIFY_LEN + b] = b < n_blocks && isfinite(blocks[b]) ? blocks[b] : UB_VERIFY_NO_BLOCK;
    host[UB_VERIFY_LEN + UB_VERIFY_BLOCKS] = isfinite(wait) ? wait : UB_VERIFY_NO_BLOCK;
    if (depth > 0)
        ub_group_split_begin(depth);
    size_t bytes = (UB_VERIFY_LEN + UB_VERIFY_MIN_LEN) * sizeof(double);
    const char *what = NULL;
    cudaError_t e = cudaSuccess;
    ncclResult_t r = ncclSuccess;
    if (!atomic_load(&c->aborted)) {
        if ((e = UB_CUDA(ub_cuda.cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, p))) != cudaSuccess)
            what = "the copy of the verification's measurements to the device";
        else if ((r = UB_NCCL(ub_nccl.AllReduce(dev, dev, UB_VERIFY_LEN, ncclFloat64, ncclSum, handle, p))) !=
                 ncclSuccess)
            what = "ncclAllReduce of the verification's measurements";
        else if ((r = UB_NCCL(ub_nccl.AllReduce((double *)dev + UB_VERIFY_LEN, (double *)dev + UB_VERIFY_LEN,
                                                UB_VERIFY_MIN_LEN, ncclFloat64, ncclMin, handle, p))) != ncclSuccess)
            what = "ncclAllReduce of the verification's block times";
        else if ((e = UB_CUDA(ub_cuda.cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, p))) != cudaSuccess)
            what = "the copy of the agreed measurements back to the host";
        else if ((e = UB_CUDA(ub_cuda.cudaEventRecord(done, p))) != cudaSuccess)
            what = "cudaEventRecord after the verification's measurements";
    }
    if (depth > 0)
        ub_group_split_end(depth);
    ub_state_lock();
    atomic_fetch_sub(&v->issuing, 1);
    if (what == NULL)
        return ncclSuccess;
    if (r == ncclSuccess)
        r = ncclUnhandledCudaError;
    snprintf(v->failure, sizeof v->failure, "%s failed (%s)", what,
             e != cudaSuccess ? ub_cuda_error_text(e)
                              : ub_nccl_result_name(r));
    v->issued = false; /* nothing of it will land */
    v->on = false;
    v->window = -1;
    return r;
}

static void append_reason(ub_verify_report *r, const char *text)
{
    size_t n = strlen(r->reason);
    snprintf(r->reason + n, sizeof r->reason - n, "%s%s", n ? "; " : "", text);
}

/* The agreed vector, waited for by polling without the lock (it was issued an iteration ago on
 * every rank); false when it cannot be read (a peer gone, an abort): the caller passes through. */
static bool read_measurements(ub_comm *c, ub_verify_rt *v) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    cudaEvent_t done = v->done;
    ub_state_unlock();
    cudaError_t e = ub_comm_wait_done(c, done, false, "the verification's measurements",
                                      "every rank takes the verdict at this call");
    ub_state_lock();
    v->issued = false;
    return e == cudaSuccess;
}

static void record_verdict(ub_verify_rt *v, const ub_verify_verdict *d, uint64_t call)
{
    ub_verify_report *r = &v->report;
    ub_verify_candidate_report *cr = &r->candidates[v->trying];
    cr->measured_iteration = d->plan.median;
    cr->spread = d->plan.spread;
    cr->iterations = d->plan.n;
    cr->windows = d->windows;
    r->pass_through_iteration = d->pass.median;
    r->pass_through_spread = d->pass.spread;
    r->pass_through_iterations = d->pass.n;
    if (!d->again) {   /* a decision; a window measured again decides nothing yet */
        r->at_call = (int64_t)call;
        r->checks++;
    }
    snprintf(r->slots_policy, sizeof r->slots_policy, "%s", v->plans[v->trying].policy);
    if (v->check_begun) {
        r->reason[0] = '\0';
        v->check_begun = false;
    }
    if (d->windows > 0) {
        r->n_slots = 2 * d->windows * UB_VERIFY_PER_SIDE;
        for (int i = 0; i < d->windows * UB_VERIFY_PER_SIDE; i++) {
            r->slots[2 * i] = d->plan_slots[i];
            r->slots[2 * i + 1] = d->pass_slots[i];
        }
    } else {
        r->n_slots = UB_VERIFY_SLOTS;
        memcpy(r->slots, d->slots, sizeof d->slots);
    }
    append_reason(r, d->reason);
}

static ub_verify_step window_step(ub_comm *c, ub_verify_rt *v, cudaStream_t st, uint64_t call) UB_REQUIRES_UNLOCKS(ub_state_mutex);

/* The agreed block times of the judged candidate, from the read vector (its first blocks). */
static void agreed_blocks(ub_verify_rt *v)
{
    const ub_plan *p = &v->plans[v->trying];
    int n = p->n_blocks < UB_VERIFY_BLOCKS ? (int)p->n_blocks : UB_VERIFY_BLOCKS;
    for (int b = 0; b < n; b++) {
        double t = v->host[UB_VERIFY_LEN + b];
        v->block_seconds[b] = t > 0 && t < 0.5 * UB_VERIFY_NO_BLOCK ? t : NAN;
    }
    v->n_block_seconds = n;
    double w = v->host[UB_VERIFY_LEN + UB_VERIFY_BLOCKS];
    v->block_wait = w >= 0 && w < 0.5 * UB_VERIFY_NO_BLOCK ? w : NAN;
}

/* The verdict of the window at its apply iteration: kept, the next candidate's window, or
 * pass-through until the next check. */
static ub_verify_step apply_verdict(ub_comm *c, ub_verify_rt *v, cudaStream_t st, uint64_t call) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    ub_verify_verdict d;
    const char *policy = v->report.candidates[v->trying].policy;
    v->n_block_seconds = 0;
    if (read_measurements(c, v)) {
        ub_verify_judge(v->host, policy, &v->earlier, &d);
        agreed_blocks(v);
    } else {
        memset(&d, 0, sizeof d);
        d.plan.median = d.pass.median = d.plan.spread = d.pass.spread = NAN;
        for (int j = 0; j < UB_VERIFY_SLOTS; j++)
            d.slots[j] = NAN;
        snprintf(d.reason, sizeof d.reason, "%s: the measurements could not be agreed (a peer gone or the "
                 "communicator aborted): dropped", policy);
    }
    record_verdict(v, &d, call);
    ub_info("communicator %d: verification at call %llu: %s", c->index, (unsigned long long)call, d.reason);
    if (d.again) {
        v->earlier = d;
        start_window(v, true);
        return window_step(c, v, st, call);
    }
    v->judged |= 1u << v->trying;
    if (v->kept_before >= 0) {
        /* A re-fitted candidate stays only where it measured faster than the plan kept before it
         * too (both medians agreed, from windows of this check). */
        int before = v->kept_before;
        v->kept_before = -1;
        double was = v->report.candidates[before].measured_iteration;
        if (!(d.keep && d.plan.median < was)) {
            char why[200];
            snprintf(why, sizeof why, "%s measured %.3f ms, %s %.3f ms: %s stays", policy, 1e3 * d.plan.median,
                     v->report.candidates[before].policy, 1e3 * was, v->report.candidates[before].policy);
            append_reason(&v->report, why);
            keep_candidate(v, before);
            return (ub_verify_step){.pass_through = false, .plan = &v->plans[before], .predicted = v->predicted[before]};
        }
    }
    if (d.keep) {
        keep_candidate(v, v->trying);
        /* The model fitted again with the kept plan's measured blocks may plan better
         * (ub_comm_refit, right after this call). */
        if (refit_allowed(v, v->trying)) {
            v->refit_tried = true;
            v->refit_from = v->trying;
        }
        return (ub_verify_step){.pass_through = false};
    }
    snprintf(v->report.kept, sizeof v->report.kept, "pass-through");
    v->kept = -1;
    int next = after_drop(v, v->trying);
    v->resume = -1;
    if (refit_allowed(v, v->trying)) {
        /* A plan measured slower than the model said: its blocks show the model where it is wrong.
         * This iteration passes through; right after this call the model is fitted again with them
         * (ub_comm_refit), and ub_verify_refit_result starts the plan it gives, or `next`. */
        v->refit_tried = true;
        v->refit_from = v->trying;
        v->resume = next;
        v->window = -1;
        v->since_check = 0;
        return (ub_verify_step){.pass_through = true};
    }
    if (next >= 0) {
        v->trying = next;
        start_window(v, false);
        return window_step(c, v, st, call);
    }
    v->window = -1;
    v->since_check = 0;
    return (ub_verify_step){.pass_through = true};
}

static ub_verify_step window_step(ub_comm *c, ub_verify_rt *v, cudaStream_t st, uint64_t call) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    int w = v->window;
    ub_timing_poll(&v->tm);
    if (w < UB_VERIFY_MARKS) {
        v->start[w] = NAN;
        v->spoiled[w] = false;
        ub_timing_mark(&v->tm, st, &v->start[w], 1, 0, NULL);
    }
    if (w == UB_VERIFY_ISSUE_AT) {
        ncclResult_t r = issue_measurements(c, v);
        if (r != ncclSuccess)
            return (ub_verify_step){.pass_through = true, .failed = r, .failure = v->failure};
    }
    if (w == UB_VERIFY_APPLY_AT)
        return apply_verdict(c, v, st, call);
    v->window++;
    ub_verify_step step = {.pass_through = ub_verify_side_of(w) == UB_VERIFY_RUN_PASS};
    if (v->loaded != v->trying) {
        v->loaded = v->trying;
        step.plan = &v->plans[v->trying];
        step.predicted = v->predicted[v->trying];
    }
    return step;
}

static ub_verify_step iteration_step(ub_comm *c, cudaStream_t st, uint64_t call) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    ub_verify_rt *v = &c->verify;
    if (!v->on)
        return (ub_verify_step){.pass_through = false};
    if (v->window < 0) {
        v->since_check++;
        int every = v->report.every;
        if (every <= 0 || v->since_check < (uint64_t)every)
            return (ub_verify_step){.pass_through = v->kept < 0};
        /* A check of what is kept; from pass-through, the candidates again from the first. */
        v->trying = v->kept >= 0 ? v->kept : 0;
        v->check_begun = true; /* until its first verdict the report keeps the verdict that holds */
        v->refit_tried = false;
        v->kept_before = -1;
        v->resume = -1;
        v->judged = 0;
        start_window(v, false);
    }
    return window_step(c, v, st, call);
}

ub_verify_step ub_verify_iteration(ub_comm *c, cudaStream_t st, uint64_t call) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    ub_verify_step step = iteration_step(c, st, call);
    step.refit = c->verify.refit_from >= 0;
    return step;
}

bool ub_verify_issuing(const ub_comm *c) { return atomic_load(&c->verify.issuing) > 0; }

bool ub_verify_refit_wanted(ub_comm *c, const ub_plan **plan, double seconds[UB_VERIFY_BLOCKS], int *n,
                            double *wait, bool *against_pass_through)
{
    ub_verify_rt *v = &c->verify;
    int i = v->refit_from;
    if (i < 0)
        return false;
    v->refit_from = -1;
    if (!v->on || (v->kept != i && v->kept != -1) || v->window >= 0)
        return false;
    v->refit_of = i;
    *plan = &v->plans[i];
    memcpy(seconds, v->block_seconds, sizeof v->block_seconds);
    *n = v->n_block_seconds;
    *wait = v->block_wait;
    *against_pass_through = v->kept < 0;
    return true;
}

void ub_verify_refit_result(ub_comm *c, const ub_plan *plan, double predicted, double measured_predicted)
{
    ub_verify_rt *v = &c->verify;
    int resume = v->resume;
    v->resume = -1;
    if (!v->on || v->window >= 0)
        return;
    if (v->refit_of >= 0 && v->refit_of < v->n_candidates)
        v->report.candidates[v->refit_of].refit_predicted_iteration = measured_predicted;
    if (plan && v->n_candidates < UB_VERIFY_MAX_CANDIDATES) {
        int i = v->n_candidates;
        add_candidate(v, plan, predicted);
        ub_verify_candidate_report *r = &v->report.candidates[i];
        snprintf(r->policy, sizeof r->policy, "%.18s (re-fitted)", plan->policy);
        r->refit = true;
        v->report.n_candidates = v->n_candidates;
        /* Its window starts at the next iteration; against pass-through, and after a keep against
         * the kept plan too, which runs again if it does not measure faster; after a drop, the
         * candidate the drop put off is tried if it does not pay either. */
        v->kept_before = v->kept;
        v->resume = resume;
        v->trying = i;
        start_window(v, false);
        return;
    }
    if (resume >= 0) {
        v->trying = resume;
        start_window(v, false);
    }
}

void ub_verify_end(ub_comm *c, bool abort) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    ub_verify_rt *v = &c->verify;
    v->window = -1;
    if (abort) {
        /* Device work may still write them: left to the process's end. */
        ub_timing_discard(&v->tm);
        return;
    }
    double *host = v->host;
    void *dev = v->dev;
    cudaEvent_t done = v->done;
    v->host = NULL;
    v->dev = NULL;
    v->done = NULL;
    v->issued = false;
    free_plans(v);
    /* Called after the private stream is drained: nothing of ours is in flight.  cudaFree may
     * synchronise the device: not under the lock. */
    ub_state_unlock();
    ub_timing_stop(&v->tm);
    ub_coll_buffers_free(host, dev, done);
    ub_state_lock();
}
