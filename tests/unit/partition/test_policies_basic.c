/* wfbp, syncea, mgwfbp and mgwfbp-dp on small cases derived by hand, mgwfbp-dp against brute
 * force over every consecutive grouping, and the orderings dp <= mgwfbp, wfbp, syncea on
 * seeded random barrier profiles. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "usbyte/io.h"
#include "usbyte/model.h"
#include "usbyte/policy.h"
#include "usbyte/synthetic.h"

#define MAXC 16

typedef struct {
    ub_profile p;
    ub_call calls[MAXC];
    double forward[1];
} fixture;

/* Barrier profile: B = last ready, forward [0], so the iteration is the end of the link. */
static void setup(fixture *f, int n, const double *ready, const uint64_t *bytes, double alpha, double beta)
{
    memset(f, 0, sizeof(*f));
    for (int k = 0; k < n; k++)
        f->calls[k] = (ub_call){.bytes = bytes[k], .ready = ready[k], .dtype = UB_DTYPE_FLOAT32, .op = UB_OP_SUM,
                                .merge = true, .measured_comm = -1};
    f->p = (ub_profile){.has_net = true, .alpha = alpha, .beta = beta, .backward_end = ready[n - 1], .n_forward = 1,
                        .forward = f->forward, .n_calls = n, .calls = f->calls};
}

/* Runs a policy, checks validity, returns the iteration time. */
static double run(ub_policy_id id, const ub_profile *p, ub_plan *plan)
{
    ub_plan_init(plan, "");
    assert_int_equal(ub_policy_run(id, p, plan), 0);
    char err[512];
    if (ub_plan_validate(p, plan, err, sizeof(err)) != 0)
        fail_msg("%s: invalid plan: %s", ub_policy_name(id), err);
    return plan->iteration;
}

/* run for a plan nobody keeps. */
static double iteration_of(ub_policy_id id, const ub_profile *p)
{
    ub_plan plan;
    double t = run(id, p, &plan);
    ub_plan_free(&plan);
    return t;
}

/* The plan as "0,1|2": calls of each block, blocks separated by '|' (whole calls only). */
static void groups(const ub_plan *plan, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (uint32_t b = 0; b < plan->n_blocks; b++)
        for (uint32_t i = 0; i < plan->blocks[b].n_segments; i++)
            used += (size_t)snprintf(buf + used, len - used, "%s%d", i ? "," : b ? "|" : "",
                                     (int)plan->segments[plan->blocks[b].first_segment + i].call);
}

static void expect(ub_policy_id id, const ub_profile *p, const char *want_groups, double want_iteration)
{
    ub_plan plan;
    double t = run(id, p, &plan);
    char got[256];
    groups(&plan, got, sizeof(got));
    if (strcmp(got, want_groups) != 0)
        fail_msg("%s: blocks %s, want %s", ub_policy_name(id), got, want_groups);
    if (fabs(t - want_iteration) > 1e-9 * (fabs(want_iteration) + 1))
        fail_msg("%s: iteration %.12g, want %.12g", ub_policy_name(id), t, want_iteration);
    ub_plan_free(&plan);
}

/* Startup-dominated: alpha 1, beta 0, ready 0, 0.1, 0.2.
 * wfbp: 0 -> 1, 1 -> 2, 2 -> 3: iteration 3.
 * syncea: one block at max ready 0.2 -> 1.2.
 * mgwfbp: group {0} would start at 0 and end at 1; call 1 is ready at 0.1 < 1 and the wait
 * 0.1 - 0 < alpha -> merge; {0,1} starts at 0.1, ends 1.1; call 2 ready 0.2 < 1.1, wait
 * 0.1 < alpha -> merge; {0,1,2} starts 0.2, ends 1.2.
 * mgwfbp-dp: the single block is optimal (any split pays alpha twice, > 2): 1.2. */
static void test_startup_dominated(void **state)
{
    (void)state;
    fixture f;
    setup(&f, 3, (double[]){0, 0.1, 0.2}, (uint64_t[]){10, 10, 10}, 1.0, 0.0);
    expect(UB_POLICY_WFBP, &f.p, "0|1|2", 3.0);
    expect(UB_POLICY_SYNCEA, &f.p, "0,1,2", 1.2);
    expect(UB_POLICY_MGWFBP, &f.p, "0,1,2", 1.2);
    expect(UB_POLICY_MGWFBP_DP, &f.p, "0,1,2", 1.2);
}

/* The same profile with barriers and dtypes: nothing may merge across them.
 * Call 0 merge:false: {0} 0 -> 1, then {1,2} starts max(1, 0.2) = 1 -> 2.  (mgwfbp: call 0's
 * group is closed; {1} starts at 1, call 2 ready 0.2 < 2 and 1 > 0.2 -> merge.)
 * syncea: the region ends at call 0, so {0} and {1,2}: same 2.
 * Call 2 float16 instead: {0,1} starts 0.1 -> 1.1, {2} 1.1 -> 2.1 for mgwfbp and dp;
 * syncea: one block per dtype in first-arrival order, the same groups. */
static void test_barriers_and_dtypes(void **state)
{
    (void)state;
    fixture f;
    setup(&f, 3, (double[]){0, 0.1, 0.2}, (uint64_t[]){10, 10, 10}, 1.0, 0.0);
    f.calls[0].merge = false;
    expect(UB_POLICY_SYNCEA, &f.p, "0|1,2", 2.0);
    expect(UB_POLICY_MGWFBP, &f.p, "0|1,2", 2.0);
    expect(UB_POLICY_MGWFBP_DP, &f.p, "0|1,2", 2.0);
    f.calls[0].merge = true;
    f.calls[2].dtype = UB_DTYPE_FLOAT16;
    expect(UB_POLICY_SYNCEA, &f.p, "0,1|2", 2.1);
    expect(UB_POLICY_MGWFBP, &f.p, "0,1|2", 2.1);
    expect(UB_POLICY_MGWFBP_DP, &f.p, "0,1|2", 2.1);
    /* Interleaved dtypes: syncea groups {0,2} (float32) before {1} (float16); both wait for
     * call 2: {0,2} 0.2 -> 1.2, {1} -> 2.2. */
    f.calls[2].dtype = UB_DTYPE_FLOAT32;
    f.calls[1].dtype = UB_DTYPE_FLOAT16;
    expect(UB_POLICY_SYNCEA, &f.p, "0,2|1", 2.2);
    expect(UB_POLICY_MGWFBP_DP, &f.p, "0|1|2", 3.0);
}

/* The rule "merge when the allreduce would not start before the successor is ready":
 * alpha 0.1, beta 1 s/B, bytes 2, 1, 1, ready 0, 0.5, 0.6.
 * mgwfbp: {0} 0 -> 2.1; call 1 ready 0.5 < 2.1 but the wait 0.5 - 0 >= alpha -> close.
 * {1} would start at max(2.1, 0.5) = 2.1 > call 2's ready 0.6 -> merge: {1,2} 2.1 -> 4.2.
 * wfbp: 2.1, 3.2, 4.3.  syncea: 0.6 + 0.1 + 4 = 4.7.
 * dp over the four groupings: 0|1|2 4.3, 0,1|2 (0.5 -> 3.6 -> 4.7) 4.7, 0|1,2 4.2,
 * 0,1,2 4.7 -> 4.2, the same as mgwfbp. */
static void test_merge_when_start_after_successor_ready(void **state)
{
    (void)state;
    fixture f;
    setup(&f, 3, (double[]){0, 0.5, 0.6}, (uint64_t[]){2, 1, 1}, 0.1, 1.0);
    expect(UB_POLICY_WFBP, &f.p, "0|1|2", 4.3);
    expect(UB_POLICY_SYNCEA, &f.p, "0,1,2", 4.7);
    expect(UB_POLICY_MGWFBP, &f.p, "0|1,2", 4.2);
    expect(UB_POLICY_MGWFBP_DP, &f.p, "0|1,2", 4.2);
}

/* Where the published greedy rule is not optimal: alpha 1, beta 1, bytes 1, 2, 1, ready 1,
 * 1.5, 2.5.  mgwfbp: {0} 1 -> 3; call 1 ready 1.5, wait 0.5 < alpha -> merge; {0,1} starts
 * 1.5, costs 1 + 3 -> 5.5; call 2 ready 2.5, wait 2.5 - 1.5 = 1 is not < alpha -> close;
 * {2} 5.5 -> 7.5.  dp: 0|1|2 = 3, 6, 8 -> 8; 0,1|2 7.5; 0,1,2 2.5 + 5 = 7.5;
 * 0|1,2: 1 -> 3, then max(3, 2.5) + 1 + 3 = 7 -> optimum 7. */
static void test_dp_beats_greedy(void **state)
{
    (void)state;
    fixture f;
    setup(&f, 3, (double[]){1, 1.5, 2.5}, (uint64_t[]){1, 2, 1}, 1.0, 1.0);
    expect(UB_POLICY_MGWFBP, &f.p, "0,1|2", 7.5);
    expect(UB_POLICY_MGWFBP_DP, &f.p, "0|1,2", 7.0);
    expect(UB_POLICY_WFBP, &f.p, "0|1|2", 8.0);
}

/* Staging makes merging cost copy_beta per byte: alpha 1, beta 0, copy_beta 0.1, two calls of
 * 10 bytes ready at 0: merged 1 + 2 = 3 vs separate 1 + 1 = 2, so dp keeps them apart;
 * with copy_beta 0.01: merged 1 + 0.2 = 1.2 < 2, so dp merges. */
static void test_staging_changes_the_optimum(void **state)
{
    (void)state;
    fixture f;
    setup(&f, 2, (double[]){0, 0}, (uint64_t[]){10, 10}, 1.0, 0.0);
    f.p.copy_beta = 0.1;
    expect(UB_POLICY_MGWFBP_DP, &f.p, "0|1", 2.0);
    f.p.copy_beta = 0.01;
    expect(UB_POLICY_MGWFBP_DP, &f.p, "0,1", 1.2);
}

/* Brute force: the best iteration over every consecutive grouping that respects merge:false
 * and dtype/op, by the evaluator. */
static double brute_force_consecutive(const ub_profile *p)
{
    int n = p->n_calls;
    double best = INFINITY;
    ub_plan plan;
    ub_plan_init(&plan, "brute");
    for (uint32_t mask = 0; mask < (1u << (n - 1)); mask++) {
        int ok = 1;
        ub_plan_clear(&plan);
        ub_plan_begin_block(&plan);
        ub_plan_add_segment(&plan, 0, 0, p->calls[0].bytes);
        for (int k = 1; k < n && ok; k++) {
            if (mask >> (k - 1) & 1) { /* k joins the block of k-1 */
                const ub_call *a = &p->calls[k - 1], *b = &p->calls[k];
                ok = a->merge && a->dtype == b->dtype && a->op == b->op;
            } else {
                ub_plan_begin_block(&plan);
            }
            ub_plan_add_segment(&plan, k, 0, p->calls[k].bytes);
        }
        if (!ok)
            continue;
        double t = ub_evaluate_const(p, &plan, NULL);
        if (t < best)
            best = t;
    }
    ub_plan_free(&plan);
    return best;
}

static int leq(double a, double b) { return a <= b * (1 + 1e-12) + 1e-15; }

static void expect_dp_not_worse(uint64_t seed, double dp, double mg, double wf)
{
    if (!leq(dp, mg) || !leq(dp, wf))
        fail_msg("seed %llu: dp %.15g mgwfbp %.15g wfbp %.15g", (unsigned long long)seed, dp, mg, wf);
}

/* dp is the exact optimum of consecutive merging on barrier profiles (checked against brute
 * force for n <= 10), and never worse than mgwfbp, wfbp, syncea (the latter two are
 * consecutive groupings when dtypes are not interleaved). */
static void test_random_barrier_profiles(void **state)
{
    (void)state;
    int checked = 0, strictly_better_than_mgwfbp = 0;
    for (uint64_t seed = 1; seed <= 300; seed++) {
        int n = 2 + (int)(seed % 9); /* 2..10 */
        ub_synthetic_opts o = {.n_calls = n, .seed = seed, .barrier = true,
                               .merge_false_fraction = seed % 3 == 0 ? 0.2 : 0.0,
                               .mixed_dtypes = seed % 5 == 0};
        /* Vary the network so that both startup- and bandwidth-dominated cases occur. */
        if (seed % 4 == 1)
            o.alpha = 5e-3;
        if (seed % 4 == 2)
            o.copy_beta = 1e-10;
        ub_profile p;
        assert_int_equal(ub_synthetic_profile(&o, &p), 0);
        double dp = iteration_of(UB_POLICY_MGWFBP_DP, &p), mg = iteration_of(UB_POLICY_MGWFBP, &p);
        double wf = iteration_of(UB_POLICY_WFBP, &p), se = iteration_of(UB_POLICY_SYNCEA, &p);
        double opt = brute_force_consecutive(&p);
        if (fabs(dp - opt) > 1e-12 * opt)
            fail_msg("seed %llu n %d: dp %.15g, brute force %.15g", (unsigned long long)seed, n, dp, opt);
        expect_dp_not_worse(seed, dp, mg, wf);
        if (!o.mixed_dtypes && !leq(dp, se))
            fail_msg("seed %llu: dp %.15g syncea %.15g", (unsigned long long)seed, dp, se);
        strictly_better_than_mgwfbp += dp < mg * (1 - 1e-9);
        checked++;
        ub_synthetic_free(&p);
    }
    print_message("%d profiles; dp strictly better than mgwfbp on %d\n", checked, strictly_better_than_mgwfbp);
}

/* Larger random profiles (layer-wise too): every plan valid, dp <= mgwfbp and wfbp on barrier
 * ones, and the DP stays fast enough for 2,000 calls. */
static void test_larger_profiles(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 12; seed++) {
        ub_synthetic_opts o = {.n_calls = seed == 12 ? 2000 : 50 + (int)seed * 20, .seed = seed * 7919,
                               .barrier = seed % 2 == 0, .merge_false_fraction = seed % 3 == 0 ? 0.05 : 0.0,
                               .mixed_dtypes = seed % 4 == 0};
        ub_profile p;
        assert_int_equal(ub_synthetic_profile(&o, &p), 0);
        double dp = iteration_of(UB_POLICY_MGWFBP_DP, &p), mg = iteration_of(UB_POLICY_MGWFBP, &p);
        double wf = iteration_of(UB_POLICY_WFBP, &p);
        iteration_of(UB_POLICY_SYNCEA, &p); /* valid too */
        if (o.barrier)
            expect_dp_not_worse(seed, dp, mg, wf);
        ub_synthetic_free(&p);
    }
}

/* The measured GoogleNet trace (data/profiles/README.md): WFBP about 414 ms and the best merge
 * about 318 ms under its own net.  Run from the repository's root; USBYTE_PROFILES names
 * another folder. */
static void test_googlenet_trace(void **state)
{
    (void)state;
    const char *dir = getenv("USBYTE_PROFILES");
    char path[4096], err[512];
    snprintf(path, sizeof(path), "%s/googlenet-k80-8x10gbe-measured.json", dir ? dir : "data/profiles");
    ub_profile p;
    if (ub_profile_load(path, &p, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    double wf = iteration_of(UB_POLICY_WFBP, &p), mg = iteration_of(UB_POLICY_MGWFBP, &p);
    double dp = iteration_of(UB_POLICY_MGWFBP_DP, &p);
    print_message("googlenet: wfbp %.3f ms, mgwfbp %.3f ms, mgwfbp-dp %.3f ms\n", wf * 1e3, mg * 1e3, dp * 1e3);
    assert_true(fabs(wf - 0.414) < 0.002);
    assert_true(fabs(dp - 0.318) < 0.002);
    assert_true(leq(dp, mg));
    ub_profile_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_startup_dominated),
        cmocka_unit_test(test_barriers_and_dtypes),
        cmocka_unit_test(test_merge_when_start_after_successor_ready),
        cmocka_unit_test(test_dp_beats_greedy),
        cmocka_unit_test(test_staging_changes_the_optimum),
        cmocka_unit_test(test_random_barrier_profiles),
        cmocka_unit_test(test_larger_profiles),
        cmocka_unit_test(test_googlenet_trace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
