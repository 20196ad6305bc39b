/* `best`: ours (docs/policies-advanced.md).
 * Every other policy runs first; their plans, best first, are the starts of a deterministic
 * first-improvement local search under the model (moves: search_moves.c; incremental judging:
 * search_state.c), followed by an iterated local search (seeded kicks, then descent).  The
 * result replaces the best start only when the evaluator itself finds it strictly faster, so
 * `best` is never worse than any other policy.  The budget of move evaluations is a pure
 * function of the number of calls, the PRNG is seeded from it: the plan is a pure function of
 * the profile (no clock is read for decisions). */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "order_internal.h"
#include "search.h"
#include "usbyte/alloc.h"
#include "usbyte/model.h"
#include "usbyte/policy.h"
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

/* Runs every other policy, evaluated, into start[] (initialised here); returns how many. */
static int run_starts(const ub_profile *prof, ub_plan *start)
{
    int n_start = 0;
    for (int id = 0; id < UB_POLICY_COUNT; id++) {
        if (id == UB_POLICY_BEST)
            continue;
        ub_plan_init(&start[n_start], ub_policy_name(id));
        if (ub_policy_run(id, prof, &start[n_start]) != 0) {
            ub_plan_free(&start[n_start]);
            continue;
        }
        n_start++;
    }
    return n_start;
}

int ub_policy_best(const ub_profile *prof, ub_plan *out)
{
    if (prof->n_calls <= 0)
        return -1;
    ub_plan start[UB_POLICY_COUNT];
    const ub_plan *view[UB_POLICY_COUNT] = {0};
    int n_start = run_starts(prof, start);
    for (int k = 0; k < n_start; k++)
        view[k] = &start[k];
    int rc = ub_best_from_starts(prof, view, n_start, out);
    for (int k = 0; k < n_start; k++)
        ub_plan_free(&start[k]);
    return rc;
}

int ub_best_from_starts(const ub_profile *prof, const ub_plan *const *given, int n_given, ub_plan *out)
{
    int n = prof->n_calls;
    if (n <= 0)
        return -1;
    /* Only valid, evaluated starts: the search keeps validity, it does not repair it. */
    const ub_plan *start[UB_POLICY_COUNT];
    int order[UB_POLICY_COUNT], n_start = 0;
    char err[256];
    for (int k = 0; k < n_given && n_start < UB_POLICY_COUNT; k++)
        if (given[k]->n_blocks > 0 && ub_plan_validate(prof, given[k], err, sizeof(err)) == 0) {
            start[n_start] = given[k];
            order[n_start] = n_start;
            n_start++;
        }
    ub_plan fallback;
    ub_plan_init(&fallback, "wfbp");
    if (n_start == 0) { /* WFBP is valid for every profile */
        ub_policy_run(UB_POLICY_WFBP, prof, &fallback);
        start[0] = &fallback;
        order[0] = 0;
        n_start = 1;
    }
    /* Best start first; ties keep the registry order. */
    for (int a = 1; a < n_start; a++)
        for (int b = a; b > 0 && start[order[b]]->iteration < start[order[b - 1]]->iteration; b--) {
            int t = order[b];
            order[b] = order[b - 1];
            order[b - 1] = t;
        }

    ub_search s;
    memset(&s, 0, sizeof(s));
    ub_wplan_init(&s.wp, prof);
    /* Move evaluations: a pure function of n.  Up to 150,000 between 80 and 500 calls, fewer
     * for tiny profiles (they converge long before) and a slower-growing share for large ones
     * (each evaluation costs more there): 150,000 at 1,000 calls (some 20 ms on the 2-CPU
     * development machine), 636,000 at 10,000.  The starts share 30%, the iterated local
     * search gets the rest. */
    long extra = 1500L * n;
    if (extra > 300000)
        extra = 300000;
    if (extra > 60000000L / n)
        extra = 60000000L / n;
    long total = 30000 + extra + 60L * n, for_starts = total * 3 / 10;
    ub_plan cand;
    ub_plan_init(&cand, "best");
    ub_plan_copy(out, start[order[0]]);
    double best = ub_evaluate_const(prof, out, NULL);
    double lb = ub_lower_bound(prof);
    const char *from = start[order[0]]->policy;
    long moves = 0;
    int distinct = 0;
    bool *dup_of = ub_xcalloc((size_t)n_start, sizeof(bool), "planning best");
    for (int r = 0; r < n_start; r++) {
        for (int q = 0; q < r && !dup_of[r]; q++)
            dup_of[r] = same_plan(start[order[r]], start[order[q]]);
        distinct += !dup_of[r];
    }
    /* Each start gets an equal share of what is left, so budget a start does not use (it
     * reached a local optimum) goes to the next ones. */
    for (int r = 0; r < n_start && s.evals < for_starts; r++) {
        if (dup_of[r])
            continue;
        if (lb >= best - 1e-12 * best)
            break; /* the best plan so far meets the lower bound */
        s.budget = s.evals + (for_starts - s.evals) / distinct--;
        const ub_plan *p = start[order[r]];
        ub_wplan_load(&s.wp, p);
        s.gen++;
        long won = descend_and_keep(prof, &s, lb, &cand, out, &best);
        if (won >= 0) {
            from = p->policy;
            moves = won;
        }
    }
    /* Iterated local search from the best plan: kick, descend, keep strict improvements. */
    uint64_t rng = 0x6b69636b5eedULL ^ (uint64_t)n;
    long kicks = 0;
    while (s.evals < total && lb < best - 1e-12 * best) {
        if (kicks % 2 == 0)
            ub_wplan_load(&s.wp, out); /* odd kicks continue from where the last descent ended */
        s.gen++;
        int n_kicks = 1 + (int)(ub_splitmix64(&rng) % 2);
        for (int k = 0; k < n_kicks; k++)
            ub_search_kick(&s, &rng);
        s.evals += 1 + s.wp.nb / 32;
        kicks++;
        s.budget = total;
        long won = descend_and_keep(prof, &s, lb, &cand, out, &best);
        if (won >= 0)
            moves += won;
    }
    char from_name[32];
    snprintf(from_name, sizeof(from_name), "%s", from);
    snprintf(out->params, sizeof(out->params), "from=%s moves=%ld kicks=%ld evals=%ld", from_name, moves, kicks,
             s.evals);
    free(dup_of);
    ub_plan_free(&cand);
    ub_search_free(&s);
    ub_plan_free(&fallback);
    return 0;
}
