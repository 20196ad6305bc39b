/* Property tests on seeded random profiles (order/synthetic.c): barrier and layer-wise, with
 * "merge": false calls, mixed dtypes and staging cost.
 * - every policy's plan is valid and its cuts are whole elements of the call's dtype;
 * - best <= every other policy (1e-12 relative), and >= the lower bound;
 * - mgwfbp-dp <= mgwfbp on barrier profiles;
 * - US-Byte's priority adjustment never makes its plan slower;
 * - the evaluator agrees with an independent discrete-event simulation written here (events:
 *   gradients becoming ready, the link finishing a block, the forward finishing a segment; a
 *   block starts when the link is free and its last member is ready, a forward segment when
 *   the previous one ended and its last needed call completed) on every block's start and end
 *   and on the iteration time, 1e-9 relative;
 * - determinism: every policy run twice on the same profile gives identical plans;
 * - the runtime's constraints (random align and staging_max): every policy's plan validates,
 *   through ub_plan_every and ub_plan_all as the runtime calls them;
 * - proofs of optimality: a plan that meets the lower bound says so ("optimal"), best stops
 *   searching there (no evaluations), and a larger search budget never gives a slower plan. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "usbyte/model.h"
#include "usbyte/policy.h"
#include "usbyte/schedulers.h"
#include "usbyte/synthetic.h"

#define N_PROFILES 40

typedef struct {
    ub_synthetic_opts opts;
    ub_profile prof;
    ub_plan plan[UB_POLICY_COUNT];
} sample;

static sample samples[N_PROFILES];

static int setup(void **state)
{
    (void)state;
    static const int sizes[] = {3, 8, 20, 60, 150};
    for (int i = 0; i < N_PROFILES; i++) {
        sample *s = &samples[i];
        s->opts = (ub_synthetic_opts){.n_calls = sizes[i % 5],
                                      .seed = 77 + (uint64_t)i,
                                      .barrier = i % 2 == 0,
                                      .merge_false_fraction = i % 3 == 0 ? 0.1 : 0.0,
                                      .mixed_dtypes = i % 4 == 1,
                                      .copy_beta = i % 5 == 2 ? 1e-10 : 0.0};
        if (ub_synthetic_profile(&s->opts, &s->prof) != 0)
            return -1;
        for (int id = 0; id < UB_POLICY_COUNT; id++) {
            ub_plan_init(&s->plan[id], "");
            if (ub_policy_run(id, &s->prof, &s->plan[id]) != 0)
                return -1;
        }
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    for (int i = 0; i < N_PROFILES; i++) {
        for (int id = 0; id < UB_POLICY_COUNT; id++)
            ub_plan_free(&samples[i].plan[id]);
        ub_synthetic_free(&samples[i].prof);
    }
    return 0;
}

static void test_valid_and_aligned(void **state)
{
    (void)state;
    for (int i = 0; i < N_PROFILES; i++) {
        const ub_profile *p = &samples[i].prof;
        for (int id = 0; id < UB_POLICY_COUNT; id++) {
            const ub_plan *plan = &samples[i].plan[id];
            char err[256] = "";
            if (ub_plan_validate(p, plan, err, sizeof(err)) != 0)
                fail_msg("profile %d, %s: %s", i, ub_policy_name(id), err);
            for (uint32_t k = 0; k < plan->n_segments; k++) {
                const ub_segment *g = &plan->segments[k];
                uint64_t z = ub_dtype_size(p->calls[g->call].dtype);
                if (g->offset % z != 0 || (g->length % z != 0 && g->offset + g->length != p->calls[g->call].bytes))
                    fail_msg("profile %d, %s: segment [%d, %llu, %llu] is not whole %zu-byte elements", i,
                             ub_policy_name(id), (int)g->call, (unsigned long long)g->offset,
                             (unsigned long long)g->length, (size_t)z);
            }
        }
    }
}

/* plan[UB_POLICY_BEST] is no slower than any other policy's plan (1e-12 relative); `label`
 * names the profile in messages. */
static void expect_best_dominates(const ub_plan *plan, const char *label)
{
    double best = plan[UB_POLICY_BEST].iteration;
    for (int id = 0; id < UB_POLICY_BEST; id++)
        if (!(best <= plan[id].iteration * (1.0 + 1e-12)))
            fail_msg("%s: best %.12g is slower than %s %.12g", label, best, ub_policy_name(id), plan[id].iteration);
}

static void test_best_dominates(void **state)
{
    (void)state;
    double sum_gain_bs = 0.0;
    for (int i = 0; i < N_PROFILES; i++) {
        const sample *s = &samples[i];
        char label[32];
        snprintf(label, sizeof(label), "profile %d", i);
        expect_best_dominates(s->plan, label);
        double best = s->plan[UB_POLICY_BEST].iteration;
        double lb = ub_lower_bound(&s->prof);
        assert_true(best >= lb * (1.0 - 1e-12));
        sum_gain_bs += s->plan[UB_POLICY_BYTESCHEDULER].iteration / best;
    }
    printf("mean speedup of best over bytescheduler on %d random profiles: %.4f\n", N_PROFILES,
           sum_gain_bs / N_PROFILES);
}

static void test_dp_not_worse_than_rule(void **state)
{
    (void)state;
    for (int i = 0; i < N_PROFILES; i++) {
        const sample *s = &samples[i];
        if (!s->opts.barrier)
            continue;
        double dp = s->plan[UB_POLICY_MGWFBP_DP].iteration, rule = s->plan[UB_POLICY_MGWFBP].iteration;
        if (!(dp <= rule * (1.0 + 1e-12)))
            fail_msg("profile %d (barrier): mgwfbp-dp %.12g is slower than mgwfbp %.12g", i, dp, rule);
    }
}

static void test_usbyte_adjustment_never_hurts(void **state)
{
    (void)state;
    ub_plan a, b;
    ub_plan_init(&a, "");
    ub_plan_init(&b, "");
    for (int i = 0; i < N_PROFILES; i++) {
        const ub_profile *p = &samples[i].prof;
        double plain = ub_usbyte_plan(p, 1u << 20, false, &a);
        double adjusted = ub_usbyte_plan(p, 1u << 20, true, &b);
        assert_true(adjusted <= plain);
        char err[256];
        assert_int_equal(ub_plan_validate(p, &b, err, sizeof(err)), 0);
    }
    ub_plan_free(&a);
    ub_plan_free(&b);
}

/* ---- the independent discrete-event simulation ---- */
enum { EV_READY, EV_COMPUTE, EV_BLOCK_END, EV_FORWARD_END };
typedef struct {
    double t;
    int kind, arg;
    long seq;
} event;

typedef struct {
    event *v;
    int n;
    long seq;
} queue;

static bool before(const event *a, const event *b) { return a->t < b->t || (a->t == b->t && a->seq < b->seq); }

static void push(queue *q, double t, int kind, int arg)
{
    event e = {t, kind, arg, q->seq++};
    int i = q->n++;
    q->v[i] = e;
    while (i > 0 && before(&q->v[i], &q->v[(i - 1) / 2])) {
        event x = q->v[i];
        q->v[i] = q->v[(i - 1) / 2];
        q->v[(i - 1) / 2] = x;
        i = (i - 1) / 2;
    }
}

static event pop(queue *q)
{
    event top = q->v[0];
    q->v[0] = q->v[--q->n];
    for (int i = 0;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < q->n && before(&q->v[l], &q->v[m]))
            m = l;
        if (r < q->n && before(&q->v[r], &q->v[m]))
            m = r;
        if (m == i)
            break;
        event x = q->v[i];
        q->v[i] = q->v[m];
        q->v[m] = x;
        i = m;
    }
    return top;
}

/* Returns the iteration time; block_start/block_end get each block's times. */
static double simulate(const ub_profile *p, const ub_plan *plan, double *block_start, double *block_end)
{
    int n = p->n_calls, S = p->n_forward;
    bool *ready = calloc((size_t)n, sizeof(bool));
    int *blocks_left = calloc((size_t)n, sizeof(int)); /* blocks still to finish, per call */
    int *waiting = calloc((size_t)S, sizeof(int));     /* incomplete calls, per forward segment */
    int *last_seen = malloc(sizeof(int) * (size_t)n);
    queue q = {malloc(sizeof(event) * (size_t)(n + plan->n_blocks + S + 4)), 0, 0};
    assert_non_null(ready);
    assert_non_null(blocks_left);
    assert_non_null(waiting);
    assert_non_null(last_seen);
    assert_non_null(q.v);
    for (int k = 0; k < n; k++)
        last_seen[k] = -1;
    for (uint32_t b = 0; b < plan->n_blocks; b++)
        for (uint32_t i = 0; i < plan->blocks[b].n_segments; i++) {
            int k = plan->segments[plan->blocks[b].first_segment + i].call;
            if (last_seen[k] != (int)b) {
                last_seen[k] = (int)b;
                blocks_left[k]++;
            }
        }
    for (int k = 0; k < n; k++) {
        waiting[p->calls[k].need]++;
        push(&q, p->calls[k].ready, EV_READY, k);
    }
    push(&q, p->backward_end + p->gap, EV_COMPUTE, 0);
    uint32_t next_block = 0;
    bool link_busy = false, compute_done = false, forward_busy = false;
    int segment = 0;
    double finish = 0.0;
    while (q.n > 0) {
        event e = pop(&q);
        double t = e.t;
        switch (e.kind) {
        case EV_READY:
            ready[e.arg] = true;
            break;
        case EV_COMPUTE:
            compute_done = true;
            break;
        case EV_BLOCK_END: {
            link_busy = false;
            const ub_block *blk = &plan->blocks[e.arg];
            for (uint32_t i = 0; i < blk->n_segments; i++) {
                int k = plan->segments[blk->first_segment + i].call;
                if (last_seen[k] == -2 - e.arg)
                    continue; /* this block already counted for call k */
                last_seen[k] = -2 - e.arg;
                if (--blocks_left[k] == 0)
                    waiting[p->calls[k].need]--;
            }
            break;
        }
        case EV_FORWARD_END:
            forward_busy = false;
            segment++;
            finish = t;
            break;
        }
        /* Start whatever can start now. */
        if (!link_busy && next_block < plan->n_blocks) {
            const ub_block *blk = &plan->blocks[next_block];
            bool all_ready = true, several = false;
            double bytes = 0.0;
            for (uint32_t i = 0; i < blk->n_segments; i++) {
                const ub_segment *g = &plan->segments[blk->first_segment + i];
                all_ready = all_ready && ready[g->call];
                bytes += (double)g->length;
                several = several || g->call != plan->segments[blk->first_segment].call;
            }
            if (all_ready) {
                double d = p->alpha + p->beta * bytes + (several ? p->copy_beta * bytes : 0.0);
                block_start[next_block] = t;
                block_end[next_block] = t + d;
                push(&q, t + d, EV_BLOCK_END, (int)next_block);
                link_busy = true;
                next_block++;
            }
        }
        if (compute_done && !forward_busy && segment < S && waiting[segment] == 0) {
            forward_busy = true;
            push(&q, t + p->forward[segment], EV_FORWARD_END, segment);
        }
    }
    assert_int_equal(segment, S);
    assert_int_equal(next_block, plan->n_blocks);
    free(ready);
    free(blocks_left);
    free(waiting);
    free(last_seen);
    free(q.v);
    return finish;
}

static bool close_rel(double a, double b, double rel)
{
    double scale = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
    return fabs(a - b) <= rel * (scale > 1e-300 ? scale : 1e-300);
}

/* The evaluator (fresh, and as stored in the plan by ub_policy_run) agrees with the event
 * simulation on the iteration time and on every block's start and end, 1e-9 relative. */
static void expect_simulation_agrees(const ub_profile *p, const ub_plan *plan, const char *label)
{
    double *st = malloc(sizeof(double) * (plan->n_blocks + 1) * 2);
    assert_non_null(st);
    double *en = st + plan->n_blocks + 1;
    double des = simulate(p, plan, st, en);
    double ev = ub_evaluate_const(p, plan, NULL);
    if (!close_rel(des, ev, 1e-9) || !close_rel(des, plan->iteration, 1e-9))
        fail_msg("%s: evaluator %.15g (stored %.15g), event simulation %.15g", label, ev, plan->iteration, des);
    for (uint32_t b = 0; b < plan->n_blocks; b++)
        if (!close_rel(st[b], plan->blocks[b].start, 1e-9) || !close_rel(en[b], plan->blocks[b].end, 1e-9))
            fail_msg("%s, block %u: evaluator [%.15g, %.15g], event simulation [%.15g, %.15g]", label, b,
                     plan->blocks[b].start, plan->blocks[b].end, st[b], en[b]);
    free(st);
}

static void test_evaluator_vs_event_simulation(void **state)
{
    (void)state;
    for (int i = 0; i < N_PROFILES; i++) {
        for (int id = 0; id < UB_POLICY_COUNT; id++) {
            char label[64];
            snprintf(label, sizeof(label), "profile %d, %s", i, ub_policy_name(id));
            expect_simulation_agrees(&samples[i].prof, &samples[i].plan[id], label);
        }
    }
}

static void test_determinism(void **state)
{
    (void)state;
    ub_plan again;
    ub_plan_init(&again, "");
    for (int i = 0; i < N_PROFILES; i += 3) {
        const ub_profile *p = &samples[i].prof;
        for (int id = 0; id < UB_POLICY_COUNT; id++) {
            const ub_plan *first = &samples[i].plan[id];
            assert_int_equal(ub_policy_run(id, p, &again), 0);
            assert_int_equal(again.n_blocks, first->n_blocks);
            assert_int_equal(again.n_segments, first->n_segments);
            assert_string_equal(again.params, first->params);
            for (uint32_t b = 0; b < first->n_blocks; b++) {
                assert_int_equal(again.blocks[b].first_segment, first->blocks[b].first_segment);
                assert_int_equal(again.blocks[b].n_segments, first->blocks[b].n_segments);
            }
            for (uint32_t k = 0; k < first->n_segments; k++) { /* fields: the struct has padding */
                assert_int_equal(again.segments[k].call, first->segments[k].call);
                assert_int_equal(again.segments[k].offset, first->segments[k].offset);
                assert_int_equal(again.segments[k].length, first->segments[k].length);
            }
            assert_true(again.iteration == first->iteration);
        }
    }
    ub_plan_free(&again);
}

/* Corner cases: one call; everything ready at once; no startup cost; no per-byte cost; calls of
 * a single element (and odd element counts of 2-byte types); ready times that decrease along
 * arrival order; staging dearer than the link. */
static void test_corner_profiles(void **state)
{
    (void)state;
    for (int c = 0; c < 7; c++) {
        ub_synthetic_opts o = {.n_calls = c == 0 ? 1 : 12, .seed = 900 + (uint64_t)c, .barrier = c % 2 == 1,
                               .mixed_dtypes = c == 4, .merge_false_fraction = c == 4 ? 0.2 : 0.0};
        ub_profile p;
        assert_int_equal(ub_synthetic_profile(&o, &p), 0);
        for (int k = 0; k < p.n_calls; k++) {
            ub_call *call = &p.calls[k];
            if (c == 2)
                call->ready = 0.0;
            if (c == 4)
                call->bytes = ub_dtype_size(call->dtype) * (k % 3 == 0 ? 1 : 3);
            if (c == 5)
                call->ready = 0.001 * (p.n_calls - k);
        }
        if (c == 2)
            p.backward_end = 0.0;
        if (c == 3)
            p.alpha = 0.0;
        if (c == 4)
            p.beta = 0.0;
        if (c == 6)
            p.copy_beta = 10 * p.beta;
        ub_plan plan[UB_POLICY_COUNT];
        for (int id = 0; id < UB_POLICY_COUNT; id++) {
            ub_plan_init(&plan[id], "");
            assert_int_equal(ub_policy_run(id, &p, &plan[id]), 0);
            char err[256] = "", label[64];
            if (ub_plan_validate(&p, &plan[id], err, sizeof(err)) != 0)
                fail_msg("corner case %d, %s: %s", c, ub_policy_name(id), err);
            snprintf(label, sizeof(label), "corner case %d, %s", c, ub_policy_name(id));
            expect_simulation_agrees(&p, &plan[id], label);
        }
        char label[32];
        snprintf(label, sizeof(label), "corner case %d", c);
        expect_best_dominates(plan, label);
        for (int id = 0; id < UB_POLICY_COUNT; id++)
            ub_plan_free(&plan[id]);
        ub_synthetic_free(&p);
    }
}

/* Random align (element sizes, powers of two, odd sizes) and staging_max (tiny to large):
 * every policy's plan obeys them.  The limits are drawn so that they bind: syncea and the
 * merging policies must split, bytescheduler/usbyte/best cut on the coarser quantum. */
static void test_constraints_every_policy(void **state)
{
    (void)state;
    static const uint64_t aligns[] = {0, 4, 6, 256, 3000, 4096, 1u << 20, 12345};
    uint64_t rng = 0xa11a5eedULL;
    int split_by_cap = 0, n_profiles = 60;
    ub_plan plans[UB_POLICY_COUNT], chosen;
    for (int i = 0; i < n_profiles; i++) {
        ub_synthetic_opts o = {.n_calls = 2 + (int)(ub_splitmix64(&rng) % 40), .seed = 4000 + (uint64_t)i,
                               .barrier = i % 2 == 0, .mixed_dtypes = i % 3 == 0,
                               .merge_false_fraction = i % 5 == 0 ? 0.1 : 0.0,
                               .copy_beta = i % 4 == 1 ? 2e-10 : 0.0};
        ub_profile p;
        assert_int_equal(ub_synthetic_profile(&o, &p), 0);
        p.align = aligns[ub_splitmix64(&rng) % (sizeof(aligns) / sizeof(aligns[0]))];
        double total = 0;
        for (int k = 0; k < p.n_calls; k++)
            total += (double)p.calls[k].bytes;
        /* 0 (none), or from 1/1000 of the data to all of it */
        p.staging_max = i % 7 == 0 ? 0 : (uint64_t)(total * pow(10.0, -3.0 * ub_uniform01(&rng)));
        for (int id = 0; id < UB_POLICY_COUNT; id++)
            ub_plan_init(&plans[id], ub_policy_name(id));
        char err[700] = "";
        if (ub_plan_every(&p, plans, err, sizeof(err)) != 0)
            fail_msg("profile %d (align %llu, staging_max %llu): %s", i, (unsigned long long)p.align,
                     (unsigned long long)p.staging_max, err);
        for (int id = 0; id < UB_POLICY_COUNT; id++) {
            /* independently of ub_plan_every's own check */
            if (ub_plan_validate(&p, &plans[id], err, sizeof(err)) != 0)
                fail_msg("profile %d (align %llu, staging_max %llu), %s: %s", i, (unsigned long long)p.align,
                         (unsigned long long)p.staging_max, ub_policy_name(id), err);
        }
        char label[48];
        snprintf(label, sizeof(label), "constrained profile %d", i);
        expect_best_dominates(plans, label);
        /* Without the cap syncea has one block per class and region: count the cases that split. */
        ub_profile uncapped = p;
        uncapped.staging_max = 0;
        ub_plan free_syncea;
        ub_plan_init(&free_syncea, "");
        assert_int_equal(ub_policy_run(UB_POLICY_SYNCEA, &uncapped, &free_syncea), 0);
        split_by_cap += plans[UB_POLICY_SYNCEA].n_blocks > free_syncea.n_blocks;
        ub_plan_free(&free_syncea);

        double iter[UB_POLICY_COUNT];
        ub_plan_init(&chosen, "");
        assert_int_equal(ub_plan_all(&p, UB_POLICY_BEST, iter, &chosen), 0);
        assert_int_equal(ub_plan_validate(&p, &chosen, err, sizeof(err)), 0);
        assert_true(chosen.iteration == iter[UB_POLICY_BEST]);
        assert_string_equal(chosen.policy, "best");
        for (int id = 0; id < UB_POLICY_COUNT; id++)
            assert_true(iter[id] == plans[id].iteration);
        ub_plan_free(&chosen);
        for (int id = 0; id < UB_POLICY_COUNT; id++)
            ub_plan_free(&plans[id]);
        ub_synthetic_free(&p);
    }
    printf("staging_max split syncea's blocks on %d of %d profiles\n", split_by_cap, n_profiles);
    assert_true(split_by_cap >= n_profiles / 3);
    ub_plan_init(&chosen, "");
    double iter[UB_POLICY_COUNT];
    assert_int_equal(ub_plan_all(&samples[0].prof, UB_POLICY_COUNT, iter, &chosen), -1);
    ub_plan_free(&chosen);
}

/* Barrier profiles of one class without staging cost: mgwfbp-dp meets the bound, so its plan
 * and best's are marked optimal and best spends no search on them.  A plan above the bound is
 * not marked. */
static void test_optimal_and_early_stop(void **state)
{
    (void)state;
    int checked = 0;
    for (int i = 0; i < N_PROFILES; i++) {
        const sample *s = &samples[i];
        for (int id = 0; id < UB_POLICY_COUNT; id++) {
            const ub_plan *p = &s->plan[id];
            bool meets = p->iteration <= p->lower_bound * (1 + 1e-9);
            if (p->optimal != meets)
                fail_msg("profile %d, %s: optimal %d, iteration %.12g, bound %.12g", i, ub_policy_name(id),
                         p->optimal, p->iteration, p->lower_bound);
        }
        if (!s->opts.barrier || s->opts.mixed_dtypes || s->opts.merge_false_fraction > 0 || s->opts.copy_beta > 0)
            continue;
        checked++;
        assert_true(s->plan[UB_POLICY_MGWFBP_DP].optimal);
        assert_true(s->plan[UB_POLICY_BEST].optimal);
        if (!strstr(s->plan[UB_POLICY_BEST].params, "evals=0"))
            fail_msg("profile %d: best searched a proven optimal start: %s", i, s->plan[UB_POLICY_BEST].params);
    }
    assert_true(checked >= 4);
}

/* The search is one deterministic sequence that the budget only cuts: best with a larger
 * budget is never slower, on layer-wise profiles where the search does work. */
static void test_budget_monotone(void **state)
{
    (void)state;
    static const double scales[] = {0.02, 0.1, 0.3, 1.0, 2.0};
    ub_plan plan;
    ub_plan_init(&plan, "");
    int searched = 0;
    for (int i = 1; i < N_PROFILES; i += 4) {
        const ub_profile *p = &samples[i].prof;
        double prev = INFINITY;
        for (size_t k = 0; k < sizeof(scales) / sizeof(scales[0]); k++) {
            assert_int_equal(ub_best_plan(p, scales[k], &plan), 0);
            double t = ub_evaluate_const(p, &plan, NULL);
            if (!(t <= prev))
                fail_msg("profile %d: budget x%g gives %.12g, slower than %.12g with less", i, scales[k], t, prev);
            prev = t;
            searched += !strstr(plan.params, "evals=0");
        }
    }
    ub_plan_free(&plan);
    assert_true(searched > 0);
}

/* Every policy terminates with a valid plan on extreme but finite costs: tiny and subnormal
 * per-byte times (US-Byte once overflowed its unit count and looped), no cost at all, and
 * costs that dwarf the compute; with calls of one element and of 2^40 bytes. */
static void test_extreme_costs_terminate(void **state)
{
    (void)state;
    static const double nets[][2] = {{1e-4, 1e-30}, {0.0, 1e-320}, {1e-320, 0.0}, {0.0, 0.0}, {1e3, 1e-3}, {1e-4, 1e-3}};
    ub_plan plans[UB_POLICY_COUNT];
    for (size_t k = 0; k < sizeof(nets) / sizeof(nets[0]); k++)
        for (int v = 0; v < 3; v++) {
            ub_synthetic_opts o = {.n_calls = 12 + 7 * v, .seed = 31 + (uint64_t)v, .barrier = v == 0};
            ub_profile p;
            assert_int_equal(ub_synthetic_profile(&o, &p), 0);
            p.alpha = nets[k][0];
            p.beta = nets[k][1];
            if (v == 2) {
                p.calls[0].bytes = 4;
                p.calls[1].bytes = 1ULL << 40;
            }
            assert_true(ub_profile_times_finite(&p));
            for (int id = 0; id < UB_POLICY_COUNT; id++)
                ub_plan_init(&plans[id], "");
            char err[700];
            if (ub_plan_every(&p, plans, err, sizeof(err)) != 0)
                fail_msg("alpha %g, beta %g, variant %d: %s", nets[k][0], nets[k][1], v, err);
            for (int id = 0; id < UB_POLICY_COUNT; id++) {
                assert_true(isfinite(plans[id].iteration));
                ub_plan_free(&plans[id]);
            }
            ub_synthetic_free(&p);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_and_aligned),
        cmocka_unit_test(test_best_dominates),
        cmocka_unit_test(test_dp_not_worse_than_rule),
        cmocka_unit_test(test_usbyte_adjustment_never_hurts),
        cmocka_unit_test(test_evaluator_vs_event_simulation),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_corner_profiles),
        cmocka_unit_test(test_constraints_every_policy),
        cmocka_unit_test(test_optimal_and_early_stop),
        cmocka_unit_test(test_budget_monotone),
        cmocka_unit_test(test_extreme_costs_terminate),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
