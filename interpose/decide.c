/* The decision on the agreed numbers (docs/design.md sections 1 and 6): the agreed profile, the
 * verdict (is the communicator schedulable, and if not, why), every policy's plan, and whether
 * schedule mode runs the chosen one.  What it decides depends only on what every rank agreed,
 * never on this rank's own measurements, so every rank decides the same; it writes the verdict,
 * the plans and their predictions into the communicator's report, hands the chosen plan with
 * its predictions to ub_sched_prepare (defer.c), and returns where the communicator goes to the
 * life cycle, which moves it. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decide.h"
#include "defer.h"
#include "globals.h"
#include "guard.h"
#include "log.h"
#include "state.h"
#include "tables.h"
#include "verify.h"
#include "usbyte/fit.h"
#include "usbyte/io.h"
#include "usbyte/model.h"
#include "usbyte/policy.h"

/* Each agreed flag that makes a communicator unschedulable, and the reason the report gives,
 * formatted with the flag's value, the period, the rank a "1 + rank" flag names, or nothing. */
typedef enum { WHY_PLAIN, WHY_VALUE, WHY_PERIOD, WHY_RANK } why_arg;
static const struct {
    size_t flag; /* offset in ub_agree_flags */
    why_arg arg;
    const char *why;
} unschedulable[] = {
    {offsetof(ub_agree_flags, stream_copies), WHY_VALUE,
     "stream-ordered work on the NCCL stream between collectives: copies or memsets (%g per warm-up on the busiest "
     "rank), which consume results in stream order and cannot be redirected; with Horovod, set "
     "HOROVOD_FUSION_THRESHOLD=0 so that usbyte does the fusion (Horovod copies fused tensors in and out of its "
     "buffer on the NCCL stream)"},
    {offsetof(ub_agree_flags, stream_compute), WHY_VALUE,
     "stream-ordered compute on the NCCL stream between collectives: kernels, graphs or host functions (%g per "
     "warm-up on the busiest rank), which consume results in stream order and cannot be redirected; with Horovod "
     "these are the kernels that scale averaged gradients, which HOROVOD_FUSION_THRESHOLD=0 does not remove: average "
     "with ncclAvg (Horovod 0.26 or later built against NCCL 2.10 or later) and leave gradient_predivide_factor at "
     "1.0, or pass op=hvd.Sum and divide by hvd.size() yourself (scale the loss before backward)"},
    {offsetof(ub_agree_flags, cupti_taken), WHY_RANK,
     "another CUPTI subscriber held CUPTI during the warm-up on rank %d, the highest such rank (a profiler such as "
     "torch.profiler, or an "
     "NVIDIA tool such as Nsight Systems the job runs under): stream-ordered work on the NCCL stream could not be "
     "watched; profile without usbyte, or run with USBYTE_MODE=observe to measure and plan while profiling"},
    {offsetof(ub_agree_flags, cupti_missing), WHY_RANK,
     "CUPTI was not available on rank %d, the highest such rank (its report's cupti_detail says why: USBYTE_CUPTI=0 "
     "or no libcupti found): stream-ordered work on the NCCL stream cannot be ruled out"},
    {offsetof(ub_agree_flags, no_end_records), WHY_PLAIN,
     "neither an event recorded on the NCCL stream after a call nor a host wait on that stream was seen on some rank: "
     "completion could not be redirected (statically linked CUDA runtime?)"},
    {offsetof(ub_agree_flags, multi_stream), WHY_PLAIN,
     "the allreduces of an iteration were issued on more than one stream on some rank: one completion order per "
     "communicator is assumed"},
    {offsetof(ub_agree_flags, legacy_stream), WHY_PLAIN,
     "an allreduce was issued on the legacy or a per-thread default stream, which synchronises with other streams "
     "implicitly: issue collectives on a stream of their own (cudaStreamNonBlocking)"},
    {offsetof(ub_agree_flags, blocking_stream), WHY_PLAIN,
     "the allreduces were issued on a blocking stream (cudaStreamCreate, not cudaStreamNonBlocking): work on the "
     "legacy default stream (stream 0, cudaMemcpy) waits implicitly for everything enqueued on it, deferred calls "
     "included, which usbyte cannot order; create the NCCL stream with cudaStreamCreateWithFlags(&s, "
     "cudaStreamNonBlocking) as PyTorch and Horovod do"},
    {offsetof(ub_agree_flags, period_refuted), WHY_PERIOD,
     "the period found (%u calls) is refuted by the buffer addresses on some rank (equal-sized calls repeat within an "
     "iteration): detection restarts one iteration after the agreement, looking for a longer period"},
    {offsetof(ub_agree_flags, p2p), WHY_PLAIN,
     "point-to-point calls (ncclSend/ncclRecv) in the iteration: their groups must stay intact, so the communicator is "
     "not re-scheduled"},
};

static void verdict(ub_comm *c, const ub_agreed *a)
{
    ub_comm_report *r = &c->report;
    r->schedulable = true;
    ub_comm_report_clear_reasons(r);
    for (size_t i = 0; i < sizeof unschedulable / sizeof unschedulable[0]; i++) {
        double v = *(const double *)((const char *)&a->flags + unschedulable[i].flag);
        if (!(v > 0))
            continue;
        r->schedulable = false;
        const char *f = unschedulable[i].why;
        switch (unschedulable[i].arg) {
        case WHY_VALUE: ub_comm_report_add_reason(r, f, v); break;
        case WHY_PERIOD: ub_comm_report_add_reason(r, f, c->period); break;
        case WHY_RANK: ub_comm_report_add_reason(r, f, (int)(v + 0.5) - 1); break;
        default: ub_comm_report_add_reason(r, "%s", f); break;
        }
    }
}

void ub_comm_verdict_refused(ub_comm *c, const char *why)
{
    ub_comm_report *r = &c->report;
    r->schedulable = false;
    r->have_plans = false;
    ub_comm_report_clear_reasons(r);
    ub_comm_report_add_reason(r, "%s", why);
}

static void fill_pattern(ub_comm *c, const ub_agreed *a)
{
    ub_comm_report *r = &c->report;
    r->ready_upstream_calls = r->ready_fallback_calls = r->merge_barriers = 0;
    for (int k = 0; k < a->n_calls; k++) {
        if (a->calls[k].fallback) r->ready_fallback_calls++;
        else r->ready_upstream_calls++;
        if (a->calls[k].barrier) r->merge_barriers++;
    }
    r->stream_ordered = a->flags.stream_ordered;
    r->need_segments = r->have_profile ? r->profile.n_forward : 0;
}

void ub_comm_decision_line(ub_comm *c)
{
    ub_comm_report *r = &c->report;
    if (!r->have_plans) {
        ub_info("communicator %d: %s%s%s", c->index, ub_comm_state_name(c->state), c->reason[0] ? ": " : "",
                c->reason);
        return;
    }
    double wfbp = r->policy_iteration[UB_POLICY_WFBP], chosen = r->policy_iteration[r->chosen];
    ub_info("communicator %d: %d allreduces/iteration, measured iteration %.3f ms, alpha %.1f us, "
            "beta %.3g s/B; wfbp predicts %.3f ms, %s %.3f ms (%.2fx over wfbp); %s",
            c->index, r->calls_per_iteration, 1e3 * r->measured_iteration, 1e6 * r->profile.alpha,
            r->profile.beta, 1e3 * wfbp, ub_policy_name((ub_policy_id)r->chosen), 1e3 * chosen,
            chosen > 0 ? wfbp / chosen : 0.0, r->schedulable ? "schedulable" : "not schedulable");
}

/* The other ranks issue what this one cannot: NCCL would pair this rank's next calls with
 * theirs.  A rank-local failure in NCCL itself (a refused enqueue) does what this does: the call
 * returns the error, and the communicator refuses what follows; the other ranks wait in their
 * collectives until their watchdog or NCCL's own error detection ends them, as without usbyte. */
void ub_comm_cannot_take_part(ub_comm *c, ncclResult_t r, const char *what)
{
    char why[600]; /* the state's reason keeps what fits */
    snprintf(why, sizeof why, "this rank cannot take part in what every rank issues: %s", what);
    ub_comm_set_failed(c, r, why);
}

/* The runtime's limits on what the planner may produce: cuts aligned for NCCL, merged blocks that
 * fit the staging buffer every rank holds (agreed; USBYTE_STAGING_MB at most; none: a limit no
 * merged block can meet). */
static void set_limits(const ub_comm *c, ub_profile *p)
{
    p->align = (uint64_t)ub_cfg.align;
    p->staging_max = c->staging_agreed > 0 ? c->staging_agreed : 1;
}

/* Every policy on the agreed profile, and the chosen one under the other completion semantics
 * (the report says what USBYTE_COMPLETION=call would gain), computed without the global lock:
 * `best` may search for a while, and other threads' hooks (a watchdog's) must not wait for it.
 * The communicator stays in AGREE meanwhile; false when another thread ended it (an abort). */
static bool plan_unlocked(ub_comm *c, const ub_agreed *a, const ub_call_kinds *calls, bool stream_sem,
                          const ub_fit_sample *extra, int n_extra) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    ub_comm_report *r = &c->report;
    ub_comm_state during = c->state; /* AGREE, or PLANNED for a re-plan after calibration */
    ub_profile other;
    bool have_other = ub_derive_profile_with(a, calls->bytes, calls->dtype, calls->op, !stream_sem, extra, n_extra,
                                             &other, NULL) == 0;
    if (have_other)
        set_limits(c, &other);
    int chosen = ub_cfg.policy;
    double iters[UB_POLICY_COUNT];
    ub_plan plan, plan_other;
    ub_plan_init(&plan, ub_policy_name((ub_policy_id)chosen));
    ub_plan_init(&plan_other, ub_policy_name((ub_policy_id)chosen));
    ub_state_unlock();
    int rc = ub_plan_all(&r->profile, chosen, iters, &plan);
    double t_other = have_other && ub_policy_run((ub_policy_id)chosen, &other, &plan_other) == 0 ? plan_other.iteration : NAN;
    ub_state_lock();
    ub_plan_free(&plan_other);
    if (have_other)
        ub_profile_free(&other);
    if (c->state != during) {
        ub_plan_free(&plan);
        return false;
    }
    r->chosen = chosen;
    ub_plan_free(&r->plan);
    r->plan = plan;
    for (int id = 0; id < UB_POLICY_COUNT; id++)
        r->policy_iteration[id] = iters[id];
    r->have_plans = true; /* a failed chosen policy leaves an empty plan: the validation refuses it */
    (void)rc;
    double predicted = iters[chosen];
    r->other_completion = t_other;
    r->completion_note[0] = '\0';
    if (ub_cfg.completion == UB_COMPLETION_CALL && stream_sem)
        snprintf(r->completion_note, sizeof r->completion_note,
                 "USBYTE_COMPLETION=call refused: some allreduce had no event recorded right after it, so a consumer "
                 "may rely on stream order; stream completion is used");
    else if (stream_sem && t_other < 0.99 * predicted)
        snprintf(r->completion_note, sizeof r->completion_note,
                 "USBYTE_COMPLETION=call would predict %.3f ms (%.2fx over this plan): correct only if the framework "
                 "waits on each call's own event before touching its data", 1e3 * t_other, predicted / t_other);
    return true;
}

/* Verification's second candidate, tried when the chosen plan is not measured faster: the best
 * predicted of the plans that only merge whole calls (no call is cut, nothing is reordered but by
 * merging), when it is another plan than the chosen one and predicted to gain as much over wfbp as
 * a plan must.  Planned without the lock, as every policy is; a pure function of the agreed
 * profile, so the same on every rank. */
static bool second_candidate(ub_comm *c, ub_plan *out, double *predicted) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    static const ub_policy_id merge_only[] = {UB_POLICY_MGWFBP_DP, UB_POLICY_MGWFBP, UB_POLICY_SYNCEA};
    ub_comm_report *r = &c->report;
    int id = -1;
    for (size_t i = 0; i < sizeof merge_only / sizeof merge_only[0]; i++) {
        double t = r->policy_iteration[merge_only[i]];
        if ((int)merge_only[i] != r->chosen && isfinite(t) && (id < 0 || t < r->policy_iteration[id]))
            id = (int)merge_only[i];
    }
    double wfbp = r->policy_iteration[UB_POLICY_WFBP];
    if (id < 0 || !(wfbp / r->policy_iteration[id] >= 1.0 + ub_cfg.min_gain_pct / 100.0))
        return false;
    ub_plan_init(out, ub_policy_name((ub_policy_id)id));
    ub_state_unlock();
    int rc = ub_policy_run((ub_policy_id)id, &r->profile, out);
    ub_state_lock();
    char err[256];
    if (rc != 0 || c->state != UB_COMM_PLANNED || ub_plan_same_blocks(out, &r->plan) ||
        ub_plan_validate(&r->profile, out, err, sizeof err) != 0) {
        ub_plan_free(out);
        return false;
    }
    *predicted = out->iteration;
    return true;
}

/* Schedule mode: a schedulable communicator gets its executor now (the plan runs from call
 * agree_at + period); any other goes to pass-through, saying why.  Both outcomes are the same
 * on every rank (agreed numbers, a pure planner); a rank that cannot set up the executor cannot
 * follow the others: it fails. */
ub_transition ub_comm_decide_schedule(ub_comm *c) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    ub_comm_report *r = &c->report;
    char why[300];
    if (!r->have_plans || !r->schedulable) {
        /* The reasons are the verdict's (each said once, in full): the state only points there. */
        return ub_move(UB_COMM_PASS_THROUGH, r->have_plans ? "not schedulable (the verdict says why)"
                                                           : "not schedulable: no plan");
    }
    /* A plan that gains little is not worth deferring every call (its host cost, its risk): the
     * same decision on every rank (agreed numbers, agreed threshold). */
    ub_sched_predictions pred = {r->policy_iteration[r->chosen], r->policy_iteration[UB_POLICY_WFBP], r->other_completion,
                                 r->completion_note};
    double gain = pred.wfbp / pred.iteration;
    if (!(gain >= 1.0 + ub_cfg.min_gain_pct / 100.0)) {
        snprintf(why, sizeof why, "the plan is predicted %.2fx over wfbp, below USBYTE_MIN_GAIN_PCT=%d%%: "
                 "not re-scheduled", gain, ub_cfg.min_gain_pct);
        return ub_move(UB_COMM_PASS_THROUGH, why);
    }
    char err[256];
    if (ub_plan_validate(&r->profile, &r->plan, err, sizeof err) != 0) {
        snprintf(why, sizeof why, "the chosen plan is invalid (a planner bug): %s", err);
        ub_error("communicator %d: %s", c->index, why);
        return ub_move(UB_COMM_PASS_THROUGH, why);
    }
    if (ub_sched_prepare(c, &r->plan, &pred, r->stream_completion, why, sizeof why) != 0)
        return ub_fail(ncclSystemError, why);
    ub_plan second;
    double predicted_second = NAN;
    bool have_second = ub_cfg.verify && second_candidate(c, &second, &predicted_second);
    if (c->state != UB_COMM_PLANNED) { /* ended by another thread while the lock was released */
        if (have_second)
            ub_plan_free(&second);
        return ub_stay();
    }
    int rc = ub_verify_prepare(c, &r->plan, pred.iteration, have_second ? &second : NULL,
                               predicted_second, why, sizeof why);
    if (have_second)
        ub_plan_free(&second);
    return rc != 0 ? ub_fail(ncclSystemError, why) : ub_stay();
}

/* The plan that the model re-fitted with `measured`'s blocks gives (its policy planned again on
 * the re-fitted link plus the executor's `wait` before each block, docs/model.md): 0 with *out and
 * its prediction when it has other blocks and is predicted to gain USBYTE_MIN_GAIN_PCT there over
 * the baseline (the measured plan when it was kept, the application's own order, on the link
 * alone, when it was dropped); -1 otherwise.  *measured_predicted: what that model predicts for
 * `measured` itself.  Lock held; released while planning. */
static int replan_refitted(ub_comm *c, const ub_plan *measured, const double *seconds, int n_timed, double wait,
                           bool against_pass_through, ub_plan *out, double *measured_predicted)
    UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    ub_comm_report *r = &c->report;
    int id = ub_policy_parse(measured->policy);
    double *per_block = malloc(sizeof *per_block * (measured->n_blocks + 1));
    if (!r->have_profile || !r->fit_samples || id < 0 || !per_block) {
        free(per_block);
        return -1;
    }
    int used = 0;
    for (uint32_t b = 0; b < measured->n_blocks; b++) {
        per_block[b] = (int)b < n_timed ? seconds[b] : NAN;
        used += isfinite(per_block[b]) ? 1 : 0;
    }
    /* Shallow copies of the agreed profile with their own nets: the link re-fitted (what the
     * application's own order pays), and the same with the executor's wait before a block added
     * (what a plan's blocks pay). */
    ub_profile link, refitted;
    int rc = used > 0 ? ub_refit_with_blocks(r->fit_samples, r->n_fit_samples, &r->profile, measured, per_block, &link)
                      : -1;
    free(per_block);
    if (rc != 0)
        return -1;
    double overhead = isfinite(wait) ? wait : 0.0; /* never negative (ub_verify_executor_wait) */
    refitted = link;
    ub_link_add(&refitted, overhead);
    ub_plan current, baseline;
    ub_plan_init(&current, measured->policy);
    ub_plan_copy(&current, measured);
    ub_plan_init(&baseline, ub_policy_name(UB_POLICY_WFBP));
    ub_comm_state during = c->state;
    ub_state_unlock();
    double before = ub_evaluate(&refitted, &current, NULL);
    *measured_predicted = before;
    int base_rc = against_pass_through ? ub_policy_run(UB_POLICY_WFBP, &link, &baseline) : 0;
    rc = ub_policy_run((ub_policy_id)id, &refitted, out);
    ub_state_lock();
    char err[256];
    bool differs = rc == 0 && base_rc == 0 && c->state == during && !atomic_load(&c->ending) &&
                   !ub_plan_same_blocks(out, &current) && ub_plan_validate(&refitted, out, err, sizeof err) == 0;
    double after = out->iteration, base = against_pass_through ? baseline.iteration : before;
    char base_text[96] = "";
    if (against_pass_through)
        snprintf(base_text, sizeof base_text, " (measured slower than pass-through), %.3f ms for the application's own "
                 "order", 1e3 * base);
    if (differs && base / after >= 1.0 + ub_cfg.min_gain_pct / 100.0) {
        ub_info("communicator %d: the model re-fitted with %d measured blocks of %s (%.1f us waited before a "
                "block) predicts %.3f ms for it%s and %.3f ms for %s planned again: that plan is verified next",
                c->index, used, measured->policy, 1e6 * overhead, 1e3 * before, base_text, 1e3 * after, out->policy);
    } else {
        ub_debug("communicator %d: the model re-fitted with %d measured blocks of %s (%.1f us waited before a "
                 "block) predicts %.3f ms for it%s; planned again: %s (%.3f ms)", c->index, used, measured->policy,
                 1e6 * overhead, 1e3 * before, base_text, differs ? "other blocks, not gaining enough" : "the same blocks",
                 1e3 * after);
        rc = -1;
    }
    ub_plan_free(&current);
    ub_plan_free(&baseline);
    return rc == 0 ? 0 : -1;
}

void ub_comm_refit(ub_comm *c)
{
    const ub_plan *measured;
    double seconds[UB_VERIFY_BLOCKS], wait;
    int n_timed;
    bool against_pass_through;
    if (!ub_verify_refit_wanted(c, &measured, seconds, &n_timed, &wait, &against_pass_through))
        return;
    ub_comm_state during = c->state;
    ub_plan replanned;
    ub_plan_init(&replanned, measured->policy);
    double measured_predicted = NAN;
    int rc = replan_refitted(c, measured, seconds, n_timed, wait, against_pass_through, &replanned, &measured_predicted);
    if (c->state == during && !atomic_load(&c->ending)) /* else ended by another thread meanwhile */
        ub_verify_refit_result(c, rc == 0 ? &replanned : NULL, replanned.iteration, measured_predicted);
    ub_plan_free(&replanned);
}

bool ub_comm_decide(ub_comm *c, const ub_agreed *a, const ub_call_kinds *calls, bool stream_sem,
                    const ub_fit_sample *extra, int n_extra)
{
    ub_comm_report *r = &c->report;
    r->have_plans = false; /* the previous decision's, if any */
    r->stream_completion = stream_sem;
    if (r->have_profile)
        ub_profile_free(&r->profile);
    r->have_profile = false;
    if (ub_derive_profile_with(a, calls->bytes, calls->dtype, calls->op, stream_sem, extra, n_extra, &r->profile,
                               &r->fit) == 0) {
        r->have_profile = true;
        set_limits(c, &r->profile);
        char src[200];
        snprintf(src, sizeof src, "usbyte observe: %d warm-up iterations on %d ranks, agreed (max ready/need, mean comm)%s",
                 ub_cfg.warmup, a->ranks, n_extra > 0 ? ", the net fitted with calibration's probes" : "");
        r->profile.source = strdup(src);
        char name[64];
        snprintf(name, sizeof name, "communicator %d", c->index);
        r->profile.name = strdup(name);
    }
    free(r->fit_samples);
    r->n_fit_samples = 0;
    r->fit_samples = r->have_profile ? ub_derive_fit_samples(a, calls->bytes, extra, n_extra, &r->n_fit_samples) : NULL;
    r->measured_iteration = a->iteration;
    fill_pattern(c, a);
    verdict(c, a);
    /* false: ended by another thread (an abort) while planning */
    return !r->have_profile || plan_unlocked(c, a, calls, stream_sem, extra, n_extra);
}
