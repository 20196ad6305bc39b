/* The plan cursor, deferral, deviations and flushes (see defer.h). */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "coll_desc.h"
#include "cuda_error.h"
#include "cuda_list.h"
#include "defer.h"
#include "exec.h"
#include "globals.h"
#include "group.h"
#include "guard.h"
#include "log.h"
#include "nccl_list.h"
#include "redirect.h"
#include "tables.h"
#include "verify.h"
#include "usbyte/io.h"

/* The steady iteration whose blocks are timed for the report: the transition iteration and the
 * one after it warm the caches and the completion streams. */
#define TIMED_ITERATION 3

void ub_sched_take_period(ub_comm *c, uint64_t *pos_sig, int *pos_call, uint32_t period)
{
    ub_sched_rt *s = &c->sched;
    free(s->pos_sig);
    free(s->pos_call);
    s->pos_sig = pos_sig;
    s->pos_call = pos_call;
    s->period = period;
}

int ub_sched_prepare(ub_comm *c, const ub_plan *plan, const ub_sched_predictions *pred, bool stream_semantics, char *why,
                     size_t len) UB_REQUIRES(ub_state_mutex)
{
    ub_sched_rt *s = &c->sched;
    s->predicted_iteration = pred->iteration;
    s->predicted_wfbp = pred->wfbp;
    s->predicted_other_completion = pred->other_completion;
    if (pred->completion_note != s->completion_note)
        snprintf(s->completion_note, sizeof s->completion_note, "%s", pred->completion_note);
    /* A new plan after re-profiling reuses the executor reserved before its agreement (its old
     * work was flushed). */
    s->ready = false;
    ub_sched_free(&s->sp);
    ub_plan_free(&s->plan);
    ub_plan_init(&s->plan, plan->policy);
    ub_plan_copy(&s->plan, plan);
    if (ub_sched_build(&s->plan, c->n_ar, &s->sp) != 0) {
        snprintf(why, len, "the plan does not cover the calls (a planner bug)");
        return -1;
    }
    s->stream_semantics = stream_semantics;
    s->measured_iter = -1;
    s->iterations = 0;
    s->n_starts = 0;
    if (ub_exec_setup(c, why, len) != 0)
        return -1;
    s->ready = true;
    return 0;
}

void ub_sched_begin(ub_comm *c, uint64_t call) UB_REQUIRES(ub_state_mutex)
{
    ub_sched_rt *s = &c->sched;
    s->active = true;
    s->pos = 0;
    s->arrived = 0;
    s->next_block = 0;
    s->consecutive_deviations = 0;
    s->bypass = false;
    s->next_call = call;
    s->run++;
    ub_verify_begin(c);
    /* Counted until the communicator ends, not only while it schedules: after a return to the
     * warm-up its streams' records must still be redirected until the flushed calls complete. */
    if (!s->counting) {
        s->counting = true;
        s->cuda_calls_at_begin = atomic_load_explicit(&ub_cuda_calls, memory_order_relaxed);
    }
    if (!s->live) {
        s->live = true;
        atomic_fetch_add(&ub_sched_live, 1);
    }
    ub_debug("communicator %d: schedule mode from this call on (%d blocks per iteration, staging %llu bytes)",
             c->index, s->sp.n_blocks, (unsigned long long)s->staging_bytes);
}

void ub_sched_fail(ub_comm *c, ncclResult_t r, const char *what)
{
    ub_sched_rt *s = &c->sched;
    if (c->failed != ncclSuccess)
        return;
    s->active = false;
    char why[sizeof c->reason];
    snprintf(why, sizeof why, "schedule mode stopped: %s", what);
    if (s->live) {
        s->live = false;
        atomic_fetch_sub(&ub_sched_live, 1);
    }
    ub_redirect_end(c, false);
    ub_comm_set_failed(c, r, why);
}

bool ub_sched_issuing(const ub_comm *c) { return atomic_load(&c->sched.issuing) > 0; }

/* Lock held; drops it while the blocks are issued.  After each block, under the lock, the
 * application's events that it completes are recorded behind it (redirect.c): a pending event
 * never waits for more than its own blocks.  The communicator's handle is read here, under the
 * lock (an abort clears it), and `issuing` tells an abort from another thread to let the real
 * calls in flight return before it goes on (lifecycle.c). */
static void issue(ub_comm *c, int first, int end, int arrived) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    ub_sched_rt *s = &c->sched;
    if (c->failed != ncclSuccess)
        return;
    s->next_block = end;
    int slot = s->measured_iter >= 0 ? s->n_starts - 1 - s->measured_iter : -1;
    if (slot >= UB_SCHED_TRACED)
        slot = -1;
    /* Inside the application's group the blocks would be launched only at its ncclGroupEnd,
     * after what is enqueued behind them: the group is ended (launching what it holds) and
     * reopened around them. */
    int depth = ub_thread_group_depth();
    ncclComm_t handle = c->handle;
    atomic_fetch_add(&s->issuing, 1);
    ub_state_unlock();
    char why[200] = "";
    ncclResult_t r = ncclSuccess;
    if (depth > 0 && (r = ub_group_split_begin(depth)) != ncclSuccess)
        snprintf(why, sizeof why, "ncclGroupEnd of the application's open group, ended early to issue a block, "
                 "returned %s", ub_nccl_result_name(r));
    for (int b = first; b < end && r == ncclSuccess; b++) {
        /* An abort from another thread: the communicator must not be used any more. */
        if (!atomic_load(&c->aborted))
            r = ub_exec_issue_block(c, handle, b, arrived, slot, why, sizeof why);
        if (r != ncclSuccess)
            break;
        ub_state_lock();
        uint64_t v = s->base + (uint64_t)b + 1;
        if (v > s->issued)
            s->issued = v;
        cudaError_t completed = ub_redirect_block_issued(c, b == s->sp.n_blocks - 1, why, sizeof why);
        ub_state_unlock();
        if (completed != cudaSuccess) {
            r = ncclUnhandledCudaError;
            break;
        }
    }
    if (depth > 0) {
        ncclResult_t reopened = ub_group_split_end(depth);
        if (r == ncclSuccess && reopened != ncclSuccess) {
            r = reopened;
            snprintf(why, sizeof why, "ncclGroupStart reopening the application's group returned %s",
                     ub_nccl_result_name(r));
        } else if (r != ncclSuccess) {
            ub_group_note_error(r); /* NCCL would have failed the application's group */
        }
    }
    ub_state_lock();
    atomic_fetch_sub(&s->issuing, 1);
    if (r != ncclSuccess && !atomic_load(&c->aborted))
        ub_sched_fail(c, r, why);
}

/* The open blocks go out with what arrived; every block value of the iteration is issued. */
static void flush(ub_comm *c) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    ub_sched_rt *s = &c->sched;
    if (s->arrived == 0)
        return;
    issue(c, s->next_block, s->sp.n_blocks, s->arrived);
    s->flushes++;
    s->base += (uint64_t)s->sp.n_blocks;
    s->arrived = 0;
    s->next_block = 0;
}

/* One more deviation in a row; true after USBYTE_MAX_DEVIATIONS of them: the communicator is to
 * be profiled again. */
static bool count_deviation(ub_comm *c, const char *why) UB_REQUIRES(ub_state_mutex)
{
    ub_sched_rt *s = &c->sched;
    s->deviations++;
    s->consecutive_deviations++;
    ub_debug("communicator %d: deviation from the plan (%s): pass-through until the next iteration start",
             c->index, why);
    return s->consecutive_deviations > ub_cfg.max_deviations;
}

bool ub_sched_deviation(ub_comm *c, const char *why) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    ub_sched_rt *s = &c->sched;
    if (!s->active)
        return false;
    flush(c);
    if (c->failed != ncclSuccess) /* pass-through for good: no more deviations to count */
        return false;
    s->active = false;
    s->run++;
    s->idle_calls = 0;
    ub_verify_spoil(c);
    return count_deviation(c, why);
}

void ub_sched_unexpected_wait(ub_comm *c, const char *what, int call)
{
    ub_sched_rt *s = &c->sched;
    s->unexpected_waits++;
    if (call < 0)
        call = s->arrived - 1;
    if (s->unexpected_told || call < 0 || call >= s->sp.n_calls)
        return;
    s->unexpected_told = true;
    int b = s->stream_semantics ? s->sp.prefix_block[call] : s->sp.last_block[call];
    ub_warn("communicator %d: %s on the thread that issues its calls waits for allreduce %d of the iteration (%d "
            "arrived), deferred in block %d of the plan, which goes out when allreduce %d arrives; the warm-up did not "
            "see this wait, and it must not change what this rank issues (the other ranks issue the plan's blocks): it "
            "returns once the work submitted to the device is done, and the deferred calls complete with their block, "
            "so a result read here is not reduced yet (USBYTE_POLICY=wfbp issues every call at its arrival; the "
            "report counts such waits in schedule.unexpected_waits)",
            c->index, what, call, s->arrived, b, s->sp.issue_at[b]);
}

uint64_t ub_sched_unissued(const ub_comm *c)
{
    const ub_sched_rt *s = &c->sched;
    if (!s->ready || !s->active || s->arrived == 0)
        return 0;
    uint64_t v = ub_sched_done_value(&s->sp, s->base, s->arrived - 1, true);
    return v > s->issued ? v : 0;
}

/* Every capture begun through the runtime, the driver or a looked-up driver function is seen
 * (cuda_wrap.c, driver_wrap.c) and needs no query: seen_capturing, the tables' answer on the
 * call's way in.  One begun where no wrapper can see it (a driver function found with dlsym on
 * libcuda's own handle) is asked for once per iteration and stream: at the iteration's first call
 * and where the stream changes, so that such a capture of a whole step, the way steps are
 * captured, is found before any of its calls is deferred. */
static bool capturing(ub_sched_rt *s, cudaStream_t st, bool seen_capturing)
{
    if (seen_capturing)
        return true;
    if (s->active && s->pos != 0 && st == s->asked)
        return false;
    s->asked = st;
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (!ub_cuda.cudaStreamIsCapturing || UB_CUDA(ub_cuda.cudaStreamIsCapturing(st, &cs)) != cudaSuccess)
        return false;
    return cs != cudaStreamCaptureStatusNone;
}

/* The iteration's first ready time, for the measured iteration (one timing event on S). */
static void mark_iteration_start(ub_comm *c, cudaStream_t st)
{
    ub_sched_rt *s = &c->sched;
    ub_timing_poll(&s->tm);
    if (s->n_starts >= UB_SCHED_MAX_MEASURED)
        return;
    int i = s->n_starts++;
    s->iter_start[i] = NAN;
    s->run_of[i] = s->run;
    if (s->measured_iter < 0 && s->iterations >= TIMED_ITERATION && s->consecutive_deviations == 0)
        s->measured_iter = i;
    ub_timing_mark(&s->tm, st, &s->iter_start[i], 1, 0, NULL);
}

static void record_ready(ub_comm *c, int k) UB_REQUIRES(ub_state_mutex)
{
    ub_sched_rt *s = &c->sched;
    if (s->ready_stamp[k] == s->base + 1)
        return;
    cudaError_t e = UB_CUDA(ub_cuda.cudaEventRecord(s->ready_ev[k], s->args[k].stream));
    if (e != cudaSuccess) {
        char why[160];
        snprintf(why, sizeof why, "cudaEventRecord of the readiness of allreduce %d failed (%s)", k,
                 ub_cuda_error_text(e));
        ub_sched_fail(c, ncclUnhandledCudaError, why);
        return;
    }
    s->ready_stamp[k] = s->base + 1;
}

/* The first call of an iteration: what verification says it runs (the plan or the application's
 * own order), and the plan it loads.  Lock held; false when the communicator ended meanwhile
 * (verification released the lock). */
static bool iteration_start(ub_comm *c, cudaStream_t st, uint64_t index, ub_sched_asks *asks, bool *new_plan)
    UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    ub_sched_rt *s = &c->sched;
    ub_verify_step step = ub_verify_iteration(c, st, index);
    asks->refit = step.refit;
    if (atomic_load(&c->ending) || c->state != UB_COMM_SCHEDULE)
        return false;
    if (step.failed != ncclSuccess) {
        ub_sched_fail(c, step.failed, step.failure);
        return false;
    }
    if (step.plan) {
        /* At an iteration boundary every block of the previous iteration is issued. */
        char why[300];
        /* The candidate's own prediction; the baseline and the other semantics stay the decision's. */
        ub_sched_predictions pred = {step.predicted, s->predicted_wfbp, s->predicted_other_completion, s->completion_note};
        if (ub_sched_prepare(c, step.plan, &pred, s->stream_semantics, why, sizeof why) != 0) {
            /* The other ranks run it from this call: this one cannot follow them. */
            char what[400];
            snprintf(what, sizeof what, "cannot take the verification's next plan (%s)", why);
            ub_sched_fail(c, ncclSystemError, what);
            return false;
        }
        ub_debug("communicator %d: verification runs %s from call %llu", c->index, step.plan->policy,
                 (unsigned long long)index);
        *new_plan = true;
    }
    if (step.pass_through != s->bypass) {
        s->bypass = step.pass_through;
        s->run++; /* the measured iteration counts consecutive plan iterations only */
        char why[300];
        if (s->bypass && ub_redirect_pass_through_begins(c, why, sizeof why) != cudaSuccess) {
            ub_sched_fail(c, ncclUnhandledCudaError, why);
            return false;
        }
    }
    return true;
}

/* A call the cursor does not hold is forwarded next by this thread: its work on the stream is
 * noted for the completion of the application's events (redirect.c), on the stream's record where
 * the lock stayed held since it was found (else it is looked up). */
static bool forwarded(cudaStream_t stream, ub_stream *st, ub_sched_asks *asks) UB_REQUIRES(ub_state_mutex)
{
    if (st)
        ub_redirect_stream_work_on(st);
    else
        ub_redirect_stream_work_locked(stream);
    asks->stream_work_noted = true;
    return false;
}

bool ub_sched_call(ub_comm *c, const ub_coll_desc *d, const ub_call_sig *cs, const ub_call_lookup *at, ub_sched_asks *asks)
    UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    ub_sched_rt *s = &c->sched;
    uint64_t index = s->next_call++;
    ub_stream *st = at ? at->stream : NULL;
    bool capture = capturing(s, d->stream, at ? at->capturing : ub_capture_stream(d->stream));
    /* The sequence check and the arrival in one look (at position 0 where the plan is to resume). */
    ub_sched_look look = ub_sched_look_at(&s->sp, s->pos_sig, s->pos_call, s->active ? s->pos : 0, cs, s->base,
                                          s->next_block);
    if (!s->active) {
        /* Pass-through since a deviation: the plan resumes at a call that starts an iteration.
         * That call may never come again (the sequence changed for good there, or the plan's
         * iteration begins at a call the program no longer makes): a whole period of calls
         * without it is one more deviation, so that the communicator is profiled again. */
        if (capture || !look.expected) {
            if (++s->idle_calls >= s->period) {
                s->idle_calls = 0;
                asks->profile_again = count_deviation(c, "a whole period of calls without the call that starts the plan's iteration");
            }
            return forwarded(d->stream, st, asks);
        }
        s->idle_calls = 0;
        s->active = true;
        s->pos = 0;
        s->run++;
    }
    if (capture || !look.expected) {
        /* its flush of what arrived may release the lock: the record is looked up again */
        asks->profile_again = ub_sched_deviation(c, capture ? "a call on a capturing stream" : "another call than the plan expected");
        return forwarded(d->stream, NULL, asks);
    }
    if (s->pos == 0) {
        bool new_plan = false;
        if (!iteration_start(c, d->stream, index, asks, &new_plan))
            return forwarded(d->stream, NULL, asks);
        st = NULL; /* verification may have released the lock: the record is looked up again */
        if (new_plan && look.call >= 0) /* the arrival is the new plan's */
            look.at = ub_sched_arrive(&s->sp, s->base, s->next_block, look.call);
    }
    int k = look.call;
    s->pos++;
    bool held = false;
    if (k >= 0 && !s->bypass) {
        s->deferred_calls++;
        s->args[k] = (ub_call_args){d->send, (void *)d->recv, d->count, d->dtype, d->op, d->stream};
        /* Readiness where a block closes; and, when the stream changes, on the stream left (its
         * last call's readiness then covers that stream's earlier calls). */
        if (k > 0 && d->stream != s->args[k - 1].stream)
            record_ready(c, k - 1);
        if (s->sp.closes[k])
            record_ready(c, k);
        if (k == 0)
            mark_iteration_start(c, d->stream);
        if (!st)
            st = ub_stream_get(d->stream, c);
        if (!st)
            ub_sched_fail(c, ncclSystemError, "out of memory for a stream record");
        if (c->failed != ncclSuccess) /* the call is answered with the error */
            return true;
        ub_redirect_deferred(c, st, k, look.at.stream_value, look.at.call_value);
        s->arrived = k + 1;
        if (look.at.first < look.at.end)
            issue(c, look.at.first, look.at.end, s->arrived);
        held = true;
    }
    if (s->active && s->pos == s->period) {
        s->pos = 0;
        if (!s->bypass) {
            s->base += (uint64_t)s->sp.n_blocks;
            s->iterations++;
        }
        s->arrived = 0;
        s->next_block = 0;
        s->consecutive_deviations = 0;
    }
    return held || forwarded(d->stream, st, asks);
}

void ub_sched_end(ub_comm *c, bool abort) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    ub_sched_rt *s = &c->sched;
    /* After a failed issue (a peer gone) nothing may wait for device work either. */
    abort = abort || c->failed != ncclSuccess;
    /* An abort whose wait for the issuing thread's calls in flight ran out (lifecycle.c) leaves
     * the executor and its timing events to that thread. */
    bool in_flight = ub_sched_issuing(c);
    if (s->ready && in_flight) {
        s->active = false;
        if (s->live) {
            s->live = false;
            atomic_fetch_sub(&ub_sched_live, 1);
        }
        ub_redirect_end(c, false);
        return;
    }
    if (s->ready) {
        if (c->state == UB_COMM_SCHEDULE && !abort) {
            s->ended_mid_iteration = s->arrived > 0;
            flush(c);
        }
        s->active = false;
        if (s->live) {
            s->live = false;
            atomic_fetch_sub(&ub_sched_live, 1);
        }
        if (!abort) {
            ub_state_unlock();
            ub_exec_drain(c);
            ub_state_lock();
        }
        /* Under the lock: other threads' report writers read these times. */
        ub_timing_poll(&s->tm);
        ub_sched_summary(c);
        ub_redirect_end(c, !abort);
    }
    ub_verify_end(c, abort);
    /* The executor reserved before an agreement goes, a plan or not. */
    if (!abort) {
        ub_state_unlock();
        ub_exec_release(c, true);
        ub_state_lock();
    } else {
        ub_exec_release(c, false);
    }
}

/* Mean of consecutive iteration starts within one run (no deviation between them), skipping
 * each run's first interval (the transition from pass-through). */
static double measured_iteration(const ub_sched_rt *s, int *n_used)
{
    double sum = 0;
    int n = 0;
    for (int i = 2; i < s->n_starts; i++)
        if (s->run_of[i] == s->run_of[i - 1] && s->run_of[i - 1] == s->run_of[i - 2] && isfinite(s->iter_start[i]) &&
            isfinite(s->iter_start[i - 1])) {
            sum += s->iter_start[i] - s->iter_start[i - 1];
            n++;
        }
    *n_used = n;
    return n ? sum / n : NAN;
}

static json_t *number_or_null(double v) { return isfinite(v) ? json_real(v) : json_null(); }

json_t *ub_sched_report_json(ub_comm *c)
{
    ub_sched_rt *s = &c->sched;
    if (!s->plan.n_blocks)
        return NULL;
    int n_used;
    double measured = measured_iteration(s, &n_used);
    /* The reference: the verification's agreed pass-through median, measured side by side with
     * the plan, where a window has measured it; else the warm-up's iteration, which carries the
     * profiling's own cost (a timing event per call). */
    const ub_verify_report *v = &c->verify.report;
    bool side_by_side = v->present && v->pass_through_iterations > 0 && v->pass_through_iteration > 0;
    double pass = side_by_side ? v->pass_through_iteration : c->report.measured_iteration;
    json_t *o = json_object();
    json_object_set_new(o, "iterations", json_integer((json_int_t)s->iterations));
    json_object_set_new(o, "measured_iteration", number_or_null(measured));
    json_object_set_new(o, "measured_iterations_used", json_integer(n_used));
    json_object_set_new(o, "predicted_iteration", number_or_null(s->predicted_iteration));
    json_object_set_new(o, "measured_pass_through", number_or_null(pass > 0 ? pass : NAN));
    json_object_set_new(o, "measured_pass_through_from", json_string(side_by_side ? "verification" : "warm-up"));
    json_object_set_new(o, "measured_speedup", number_or_null(pass > 0 ? pass / measured : NAN));
    json_object_set_new(o, "predicted_wfbp", number_or_null(s->predicted_wfbp));
    json_object_set_new(o, "predicted_speedup", number_or_null(s->predicted_wfbp / s->predicted_iteration));
    json_object_set_new(o, "predicted_iteration_other_completion", number_or_null(s->predicted_other_completion));
    json_object_set_new(o, "deviations", json_integer((json_int_t)s->deviations));
    json_object_set_new(o, "flushes", json_integer((json_int_t)s->flushes));
    json_object_set_new(o, "ended_mid_iteration", json_boolean(s->ended_mid_iteration));
    json_object_set_new(o, "unexpected_waits", json_integer((json_int_t)s->unexpected_waits));
    json_object_set_new(o, "staging_bytes", json_integer((json_int_t)s->staging_bytes));
    unsigned long long calls = atomic_load_explicit(&ub_cuda_calls, memory_order_relaxed) - s->cuda_calls_at_begin;
    json_object_set_new(o, "deferred_calls", json_integer((json_int_t)s->deferred_calls));
    json_object_set_new(o, "cuda_calls", json_integer((json_int_t)calls));
    json_object_set_new(o, "cuda_calls_per_deferred_call",
                        number_or_null(s->deferred_calls ? (double)calls / (double)s->deferred_calls : NAN));
    json_object_set_new(o, "completion", json_string(s->stream_semantics ? "stream" : "call"));
    if (s->completion_note[0])
        json_object_set_new(o, "completion_note", json_string(s->completion_note));
    /* Verification loads its candidates into the cursor: the blocks below are the held plan's. */
    if (c->report.have_plans && !ub_plan_same_blocks(&s->plan, &c->report.plan))
        json_object_set_new(o, "plan", ub_plan_to_json(&s->plan));
    json_t *blocks = json_array();
    /* The measured iteration's blocks, once all of them are timed (the report at exit does not
     * wait for events still pending: then there are none). */
    bool timed = s->measured_iter >= 0 && s->block_start && isfinite(s->iter_start[s->measured_iter]);
    for (int b = 0; timed && b < s->sp.n_blocks; b++)
        timed = isfinite(s->block_start[b]) && isfinite(s->block_end[b]);
    if (timed) {
        double t0 = s->iter_start[s->measured_iter];
        for (int b = 0; b < s->sp.n_blocks; b++)
            json_array_append_new(blocks, json_pack("{s:f, s:f}", "start", s->block_start[b] - t0, "end",
                                                    s->block_end[b] - t0));
    }
    json_object_set_new(o, "blocks", blocks);
    return o;
}

void ub_sched_summary(ub_comm *c)
{
    ub_sched_rt *s = &c->sched;
    int n_used;
    double measured = measured_iteration(s, &n_used), pass = c->report.measured_iteration;
    ub_info("communicator %d: schedule mode ran %llu iterations (%llu deviations, %llu flushes): measured iteration "
            "%.3f ms over %d steady iterations, pass-through %.3f ms: measured speedup %.2fx (predicted %.2fx)",
            c->index, (unsigned long long)s->iterations, (unsigned long long)s->deviations,
            (unsigned long long)s->flushes, 1e3 * measured, n_used, 1e3 * pass, pass / measured,
            s->predicted_wfbp / s->predicted_iteration);
}
