/* `best`: ours (docs/policies-advanced.md).
 * The registry (policy.c) runs every other policy first; their plans, best first, are the starts of a deterministic
 * first-improvement local search under the model (moves: search_moves.c; incremental judging:
 * search_state.c), followed by an iterated local search (seeded kicks, then descent).  The
 * result replaces the best start only when the evaluator itself finds it strictly faster, so
 * `best` is never worse than any other policy.  The reference policies (ddp, horovod) are not
 * starts: the result is only replaced by one of their plans when that is strictly faster
 * (ub_best_floor), so they leave the search as it is.  The budget of move evaluations is a pure
 * function of the number of calls and of the incumbent's gap to the lower bound, the PRNG is
 * seeded from n: the plan is a pure function of the profile (no clock is read for decisions).
 * A plan that meets the lower bound is optimal and ends the search at once. */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "order_internal.h"
#include "search.h"
#include "usbyte/alloc.h"
#include "usbyte/model.h"
#include "usbyte/policy.h"
#include "usbyte/schedulers.h"
#include "usbyte/synthetic.h"

static bool same_plan(const ub_plan *a, const ub_plan *b)
{
    if (a->n_blocks != b->n_blocks || a->n_segments != b->n_segments)
        return false;
    for (uint32_t i = 0; i < a->n_blocks; i++)
        if (a->blocks[i].n_segments != b->blocks[i].n_segments || a->blocks[i].first_segment != b->blocks[i].first_segment)
            return false;
    for (uint32_t i = 0; i < a->n_segments; i++)
        if (a->segments[i].call != b->segments[i].call || a->segments[i].offset != b->segments[i].offset ||
            a->segments[i].length != b->segments[i].length)
            return false;
    return true;
}

/* Descends from the plan loaded in s->wp; the result (through cand) replaces *out when the
 * evaluator itself finds it strictly faster than *best.  Returns the moves of the descent
 * then, -1 when *out stays. */
static long descend_and_keep(const ub_profile *prof, ub_search *s, double lb, ub_plan *cand, ub_plan *out,
                             double *best)
{
    long before = s->moves;
    ub_search_descend(s, lb);
    ub_wplan_store(&s->wp, cand);
    double t = ub_evaluate_const(prof, cand, NULL);
    if (!(t < *best))
        return -1;
    *best = t;
    ub_plan_copy(out, cand);
    return s->moves - before;
}

/* An inner step of the grouping DP (best_starts.c) costs about this fraction of a move
 * evaluation; the DP's work is charged to the search budget at that rate. */
#define DP_STEPS_PER_EVAL 32

/* The incumbent *out regrouped exactly (ub_regroup_exact); kept when the evaluator finds it
 * strictly faster.  Returns true then. */
static bool regroup_and_keep(const ub_profile *prof, ub_search *s, double lb, ub_plan *cand, ub_plan *out,
                             double *best)
{
    long steps = ub_regroup_exact(prof, lb, DP_STEPS_PER_EVAL * s->regroup_cap, out, cand);
    s->evals += (steps < 0 ? -steps - 1 : steps) / DP_STEPS_PER_EVAL;
    if (steps < 0)
        return false;
    double t = ub_evaluate_const(prof, cand, NULL);
    if (!(t < *best))
        return false;
    *best = t;
    ub_plan_copy(out, cand);
    return true;
}

bool ub_policy_is_reference(int id) { return id == UB_POLICY_DDP || id == UB_POLICY_HOROVOD; }

void ub_best_floor(const ub_plan *ref, ub_plan *out)
{
    if (ref->n_blocks == 0 || !(ref->iteration < out->iteration))
        return;
    char params[sizeof(out->params)], policy[sizeof(out->policy)];
    snprintf(params, sizeof(params), "from=%.31s (faster than the search's %.180s)", ref->policy, out->params);
    memcpy(policy, out->policy, sizeof(policy));
    ub_plan_copy(out, ref);
    memcpy(out->policy, policy, sizeof(policy));
    memcpy(out->params, params, sizeof(params));
}

/* Move evaluations of the unscaled budget: a pure function of n.  Up to 150,000 between 80 and
 * 500 calls, fewer for tiny profiles (they converge long before) and a slower-growing share for
 * large ones (each evaluation costs more there): 150,000 at 1,000 calls, 636,000 at 10,000. */
static long base_budget(int n)
{
    long extra = 1500L * n;
    if (extra > 300000)
        extra = 300000;
    if (extra > 60000000L / n)
        extra = 60000000L / n;
    return 30000 + extra + 60L * n;
}

/* The extra start plans (best_starts.c) that are searched, at most. */
#define N_EXTRA 2

int ub_best_from_starts(const ub_profile *prof, const ub_plan *const *given, int n_given, double lb,
                        double budget_scale, ub_plan *out)
{
    int n = prof->n_calls;
    if (n <= 0)
        return -1;
    /* Only valid, evaluated starts: the search keeps validity, it does not repair it. */
    enum { MAX_START = UB_POLICY_COUNT + N_EXTRA };
    const ub_plan *start[MAX_START];
    int order[MAX_START], n_start = 0;
    char err[256];
    for (int k = 0; k < n_given && n_start < UB_POLICY_COUNT; k++)
        if (given[k]->n_blocks > 0 && ub_plan_validate(prof, given[k], err, sizeof(err)) == 0)
            start[n_start++] = given[k];
    ub_plan fallback, extra[N_EXTRA];
    ub_plan_init(&fallback, "wfbp");
    for (int k = 0; k < N_EXTRA; k++)
        ub_plan_init(&extra[k], "ready-need");
    if (n_start == 0) { /* WFBP is valid for every profile */
        if (ub_policy_wfbp(prof, &fallback) == 0)
            ub_evaluate_with_bound(prof, &fallback, lb, NULL);
        start[n_start++] = &fallback;
    }
    /* A start that meets the bound is optimal: nothing to search. */
    for (int k = 0; k < n_start; k++)
        if (ub_meets_bound(start[k]->iteration, lb)) {
            ub_plan_copy(out, start[k]);
            snprintf(out->params, sizeof(out->params), "from=%s moves=0 kicks=0 evals=0", start[k]->policy);
            ub_plan_free(&fallback);
            for (int q = 0; q < N_EXTRA; q++)
                ub_plan_free(&extra[q]);
            return 0;
        }
    /* The exact-grouping DPs get a tenth of the budget for the extra starts, and at most a
     * twentieth per regrouping after that. */
    long base = base_budget(n), dp_evals = base / 10;
    double incumbent = start[0]->iteration;
    for (int k = 1; k < n_start; k++)
        if (start[k]->iteration < incumbent)
            incumbent = start[k]->iteration;
    int n_extra = ub_ready_need_starts(prof, lb, incumbent, DP_STEPS_PER_EVAL * dp_evals, N_EXTRA, extra);
    for (int k = 0; k < n_extra; k++)
        if (ub_plan_validate(prof, &extra[k], err, sizeof(err)) == 0)
            start[n_start++] = &extra[k];
    /* Each start regrouped exactly for its own order of segments (the merging the policies'
     * own rules may have missed): searched instead of the original when faster. */
    ub_plan regrouped[MAX_START];
    for (int k = 0; k < n_start; k++) {
        ub_plan_init(&regrouped[k], start[k]->policy);
        if (ub_regroup_exact(prof, lb, DP_STEPS_PER_EVAL * dp_evals / (n_start + 1), start[k], &regrouped[k]) < 0)
            continue;
        ub_evaluate_with_bound(prof, &regrouped[k], lb, NULL);
        if (regrouped[k].iteration < start[k]->iteration && ub_plan_validate(prof, &regrouped[k], err, sizeof(err)) == 0)
            start[k] = &regrouped[k];
    }
    for (int k = 0; k < n_start; k++)
        order[k] = k;
    /* Best start first; ties keep the registry order (then the extra starts). */
    for (int a = 1; a < n_start; a++)
        for (int b = a; b > 0 && start[order[b]]->iteration < start[order[b - 1]]->iteration; b--) {
            int t = order[b];
            order[b] = order[b - 1];
            order[b - 1] = t;
        }

    ub_search s;
    memset(&s, 0, sizeof(s));
    ub_wplan_init(&s.wp, prof);
    /* The search is one deterministic sequence of move evaluations; the budget only decides
     * where it stops, so a larger budget never ends worse (it runs the same sequence further).
     * The starts share 30% of the unscaled budget (equal shares of what is left, so a start that
     * converges early passes its share on), the iterated local search runs until `soft`, longer
     * while the incumbent is far from the bound: after each descent it stops once the evaluations
     * reach soft * (1 + gap / 0.5%), at most `hard` (8x soft up to 500 calls, 2x beyond, where
     * each evaluation costs more).  The first plan that meets the bound stops everything. */
    long for_starts = base * 3 / 10;
    s.regroup_cap = base / 20;
    double soft = (double)base * (budget_scale > 0 ? budget_scale : 0.0);
    double adapt_max = n <= 500 ? 8.0 : 2.0, hard = soft * adapt_max;
    ub_plan cand;
    ub_plan_init(&cand, "best");
    ub_plan_copy(out, start[order[0]]);
    double best = ub_evaluate_const(prof, out, NULL);
    const char *from = start[order[0]]->policy;
    long moves = 0, kicks = 0;
    int distinct = 0;
    bool dup_of[MAX_START] = {0};
    for (int r = 0; r < n_start; r++) {
        for (int q = 0; q < r && !dup_of[r]; q++)
            dup_of[r] = same_plan(start[order[r]], start[order[q]]);
        distinct += !dup_of[r];
    }
    for (int r = 0; r < n_start && s.evals < for_starts && (double)s.evals < hard; r++) {
        if (dup_of[r])
            continue;
        if (ub_meets_bound(best, lb))
            break;
        s.budget = s.evals + (for_starts - s.evals) / distinct--;
        if ((double)s.budget > hard)
            s.budget = (long)hard;
        const ub_plan *p = start[order[r]];
        ub_wplan_load(&s.wp, p);
        s.gen++;
        long won = descend_and_keep(prof, &s, lb, &cand, out, &best);
        if (won >= 0) {
            from = p->policy;
            moves = won;
            regroup_and_keep(prof, &s, lb, &cand, out, &best);
        }
    }
    /* Iterated local search from the best plan: kick, descend, keep strict improvements. */
    uint64_t rng = 0x6b69636b5eedULL ^ (uint64_t)n;
    long improved_at = s.evals;
    while ((double)s.evals < hard && !ub_meets_bound(best, lb)) {
        double gap = lb > 0 ? best / lb - 1.0 : 0.0, stretch = 1.0 + gap / 0.005;
        if ((double)s.evals >= soft * (stretch < adapt_max ? stretch : adapt_max))
            break;
        /* Past the budget, the stretch is for a search that still gains: it ends after a whole
         * budget without improvement (the gap then is most likely the bound's). */
        if ((double)s.evals >= soft && (double)(s.evals - improved_at) >= soft)
            break;
        if (kicks % 2 == 0)
            ub_wplan_load(&s.wp, out); /* odd kicks continue from where the last descent ended */
        s.gen++;
        int n_kicks = 1 + (int)(ub_splitmix64(&rng) % 2);
        for (int k = 0; k < n_kicks; k++)
            ub_search_kick(&s, &rng);
        s.evals += 1 + s.wp.nb / 32;
        kicks++;
        s.budget = (long)hard;
        long won = descend_and_keep(prof, &s, lb, &cand, out, &best);
        if (won >= 0) {
            moves += won;
            regroup_and_keep(prof, &s, lb, &cand, out, &best);
            improved_at = s.evals;
        }
    }
    char from_name[32];
    snprintf(from_name, sizeof(from_name), "%s", from);
    snprintf(out->params, sizeof(out->params), "from=%s moves=%ld kicks=%ld evals=%ld", from_name, moves, kicks,
             s.evals);
    ub_plan_free(&cand);
    ub_search_free(&s);
    ub_plan_free(&fallback);
    for (int k = 0; k < N_EXTRA; k++)
        ub_plan_free(&extra[k]);
    for (int k = 0; k < n_start; k++)
        ub_plan_free(&regrouped[k]);
    return 0;
}
