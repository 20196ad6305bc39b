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

bool ub_policy_is_reference(int id)
{
    return id == UB_POLICY_DDP || id == UB_POLICY_DDP_TUNED || id == UB_POLICY_HOROVOD;
}

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

enum { MAX_START = UB_POLICY_COUNT + N_EXTRA };

/* The starts of the search: valid, evaluated plans, best first (order). */
typedef struct starts {
    const ub_plan *plan[MAX_START];
    int order[MAX_START], n;
    ub_plan fallback, extra[N_EXTRA], regrouped[MAX_START];
    int n_regrouped; /* regrouped[] initialized */
} starts;

static void starts_free(starts *st)
{
    ub_plan_free(&st->fallback);
    for (int k = 0; k < N_EXTRA; k++)
        ub_plan_free(&st->extra[k]);
    for (int k = 0; k < st->n_regrouped; k++)
        ub_plan_free(&st->regrouped[k]);
}

/* The given plans that are valid (the search keeps validity, it does not repair it), or WFBP,
 * valid for every profile.  Returns one that meets the bound (optimal: nothing to search), or
 * NULL. */
static const ub_plan *given_starts(const ub_profile *prof, const ub_plan *const *given, int n_given, double lb,
                                   starts *st)
{
    char err[256];
    ub_plan_init(&st->fallback, "wfbp");
    for (int k = 0; k < N_EXTRA; k++)
        ub_plan_init(&st->extra[k], "ready-need");
    for (int k = 0; k < n_given && st->n < UB_POLICY_COUNT; k++)
        if (given[k]->n_blocks > 0 && ub_plan_validate(prof, given[k], err, sizeof(err)) == 0)
            st->plan[st->n++] = given[k];
    if (st->n == 0) {
        if (ub_policy_wfbp(prof, &st->fallback) == 0)
            ub_evaluate_with_bound(prof, &st->fallback, lb, NULL);
        st->plan[st->n++] = &st->fallback;
    }
    for (int k = 0; k < st->n; k++)
        if (ub_meets_bound(st->plan[k]->iteration, lb))
            return st->plan[k];
    return NULL;
}

/* The extra starts (best_starts.c), every start regrouped exactly for its own order of segments
 * (the merging the policies' own rules may have missed) where that is faster, and the order, best
 * first.  The exact-grouping DPs get a tenth of the budget for the extra starts, and at most a
 * twentieth per regrouping after that. */
static void more_starts(const ub_profile *prof, double lb, long base, starts *st)
{
    char err[256];
    long dp_evals = base / 10;
    double incumbent = st->plan[0]->iteration;
    for (int k = 1; k < st->n; k++)
        if (st->plan[k]->iteration < incumbent)
            incumbent = st->plan[k]->iteration;
    int n_extra = ub_ready_need_starts(prof, lb, incumbent, DP_STEPS_PER_EVAL * dp_evals, N_EXTRA, st->extra);
    for (int k = 0; k < n_extra; k++)
        if (ub_plan_validate(prof, &st->extra[k], err, sizeof(err)) == 0)
            st->plan[st->n++] = &st->extra[k];
    for (int k = 0; k < st->n; k++) {
        ub_plan_init(&st->regrouped[k], st->plan[k]->policy);
        st->n_regrouped = k + 1;
        if (ub_regroup_exact(prof, lb, DP_STEPS_PER_EVAL * dp_evals / (st->n + 1), st->plan[k], &st->regrouped[k]) < 0)
            continue;
        ub_evaluate_with_bound(prof, &st->regrouped[k], lb, NULL);
        if (st->regrouped[k].iteration < st->plan[k]->iteration &&
            ub_plan_validate(prof, &st->regrouped[k], err, sizeof(err)) == 0)
            st->plan[k] = &st->regrouped[k];
    }
    for (int k = 0; k < st->n; k++)
        st->order[k] = k;
    /* Ties keep the registry order (then the extra starts). */
    for (int a = 1; a < st->n; a++)
        for (int b = a; b > 0 && st->plan[st->order[b]]->iteration < st->plan[st->order[b - 1]]->iteration; b--) {
            int t = st->order[b];
            st->order[b] = st->order[b - 1];
            st->order[b - 1] = t;
        }
}

/* One search: its state, the incumbent (*out, its time best), where it came from, its counts. */
typedef struct run {
    const ub_profile *prof;
    double lb;
    ub_search s;
    ub_plan cand, *out;
    double best;
    const char *from;
    long moves, kicks;
} run;

/* A descent from each distinct start, best first, sharing `for_starts` evaluations (equal shares
 * of what is left, so a start that converges early passes its share on), never past `hard`. */
static void descend_from_starts(run *r, const starts *st, long for_starts, double hard)
{
    int distinct = 0;
    bool dup_of[MAX_START] = {0};
    for (int k = 0; k < st->n; k++) {
        for (int q = 0; q < k && !dup_of[k]; q++)
            dup_of[k] = ub_plan_same_blocks(st->plan[st->order[k]], st->plan[st->order[q]]);
        distinct += !dup_of[k];
    }
    for (int k = 0; k < st->n && r->s.evals < for_starts && (double)r->s.evals < hard; k++) {
        if (dup_of[k])
            continue;
        if (ub_meets_bound(r->best, r->lb))
            break;
        r->s.budget = r->s.evals + (for_starts - r->s.evals) / distinct--;
        if ((double)r->s.budget > hard)
            r->s.budget = (long)hard;
        const ub_plan *p = st->plan[st->order[k]];
        ub_wplan_load(&r->s.wp, p);
        r->s.gen++;
        long won = descend_and_keep(r->prof, &r->s, r->lb, &r->cand, r->out, &r->best);
        if (won >= 0) {
            r->from = p->policy;
            r->moves = won;
            regroup_and_keep(r->prof, &r->s, r->lb, &r->cand, r->out, &r->best);
        }
    }
}

/* Iterated local search from the incumbent: kick, descend, keep strict improvements; until
 * `soft` evaluations, longer while the incumbent is far from the bound (soft * (1 + gap / 0.5%),
 * at most adapt_max * soft = `hard`). */
static void iterate_kicks(run *r, double soft, double adapt_max, double hard)
{
    uint64_t rng = 0x6b69636b5eedULL ^ (uint64_t)r->prof->n_calls;
    long improved_at = r->s.evals;
    while ((double)r->s.evals < hard && !ub_meets_bound(r->best, r->lb)) {
        double gap = r->lb > 0 ? r->best / r->lb - 1.0 : 0.0, stretch = 1.0 + gap / 0.005;
        if ((double)r->s.evals >= soft * (stretch < adapt_max ? stretch : adapt_max))
            break;
        /* Past the budget, the stretch is for a search that still gains: it ends after a whole
         * budget without improvement (the gap then is most likely the bound's). */
        if ((double)r->s.evals >= soft && (double)(r->s.evals - improved_at) >= soft)
            break;
        if (r->kicks % 2 == 0)
            ub_wplan_load(&r->s.wp, r->out); /* odd kicks continue from where the last descent ended */
        r->s.gen++;
        int n_kicks = 1 + (int)(ub_splitmix64(&rng) % 2);
        for (int k = 0; k < n_kicks; k++)
            ub_search_kick(&r->s, &rng);
        r->s.evals += 1 + r->s.wp.nb / 32;
        r->kicks++;
        r->s.budget = (long)hard;
        long won = descend_and_keep(r->prof, &r->s, r->lb, &r->cand, r->out, &r->best);
        if (won >= 0) {
            r->moves += won;
            regroup_and_keep(r->prof, &r->s, r->lb, &r->cand, r->out, &r->best);
            improved_at = r->s.evals;
        }
    }
}

int ub_best_from_starts(const ub_profile *prof, const ub_plan *const *given, int n_given, double lb,
                        double budget_scale, ub_plan *out)
{
    int n = prof->n_calls;
    if (n <= 0)
        return -1;
    starts st = {.n = 0, .n_regrouped = 0};
    const ub_plan *optimal = given_starts(prof, given, n_given, lb, &st);
    if (optimal) {
        ub_plan_copy(out, optimal);
        snprintf(out->params, sizeof(out->params), "from=%s moves=0 kicks=0 evals=0", optimal->policy);
        starts_free(&st);
        return 0;
    }
    long base = base_budget(n);
    more_starts(prof, lb, base, &st);

    /* The search is one deterministic sequence of move evaluations; the budget only decides
     * where it stops, so a larger budget never ends worse (it runs the same sequence further).
     * The starts share 30% of the unscaled budget, the iterated local search runs until `soft`,
     * longer while the incumbent is far from the bound, at most `hard` (8x soft up to 500 calls,
     * 2x beyond, where each evaluation costs more).  The first plan that meets the bound stops
     * everything. */
    run r = {.prof = prof, .lb = lb, .out = out};
    ub_wplan_init(&r.s.wp, prof);
    r.s.regroup_cap = base / 20;
    double soft = (double)base * (budget_scale > 0 ? budget_scale : 0.0);
    double adapt_max = n <= 500 ? 8.0 : 2.0, hard = soft * adapt_max;
    ub_plan_init(&r.cand, "best");
    ub_plan_copy(out, st.plan[st.order[0]]);
    r.best = ub_evaluate_const(prof, out, NULL);
    r.from = st.plan[st.order[0]]->policy;
    descend_from_starts(&r, &st, base * 3 / 10, hard);
    iterate_kicks(&r, soft, adapt_max, hard);
    char from_name[32];
    snprintf(from_name, sizeof(from_name), "%s", r.from);
    snprintf(out->params, sizeof(out->params), "from=%s moves=%ld kicks=%ld evals=%ld", from_name, r.moves, r.kicks,
             r.s.evals);
    ub_plan_free(&r.cand);
    ub_search_free(&r.s);
    starts_free(&st);
    return 0;
}
