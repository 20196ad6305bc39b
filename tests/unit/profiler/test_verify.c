/* The verification's pure pieces (profiler/verify.c): the window's layout, the ranks' vector and
 * the verdict on it. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "usbyte/verify.h"

static void test_layout(void **state)
{
    (void)state;
    for (int w = 0; w < UB_VERIFY_SETTLE; w++) {
        assert_int_equal(ub_verify_slot(w), -1);
        assert_int_equal(ub_verify_side_of(w), UB_VERIFY_RUN_PLAN);
    }
    int plan = 0, pass = 0, slot = 0;
    for (int w = UB_VERIFY_SETTLE; w < UB_VERIFY_RUNS_END; w++) {
        int r = (w - UB_VERIFY_SETTLE) / UB_VERIFY_RUN;
        ub_verify_side side = ub_verify_side_of(w);
        assert_int_equal(side, r % 2 ? UB_VERIFY_RUN_PASS : UB_VERIFY_RUN_PLAN);
        /* Only a run's last iteration is measured: it follows one of its own side. */
        if ((w - UB_VERIFY_SETTLE) % UB_VERIFY_RUN == UB_VERIFY_RUN - 1) {
            assert_int_equal(ub_verify_slot(w), slot);
            assert_int_equal(ub_verify_slot_iteration(slot), w);
            assert_int_equal(ub_verify_side_of(w - 1), side);
            plan += side == UB_VERIFY_RUN_PLAN;
            pass += side == UB_VERIFY_RUN_PASS;
            slot++;
        } else {
            assert_int_equal(ub_verify_slot(w), -1);
        }
    }
    assert_int_equal(slot, UB_VERIFY_SLOTS);
    assert_int_equal(plan, UB_VERIFY_PER_SIDE);
    assert_int_equal(pass, UB_VERIFY_PER_SIDE);
    /* After the slots: pass-through, unmeasured, until the verdict applies. */
    for (int w = UB_VERIFY_RUNS_END; w <= UB_VERIFY_APPLY_AT; w++) {
        assert_int_equal(ub_verify_slot(w), -1);
        assert_int_equal(ub_verify_side_of(w), UB_VERIFY_RUN_PASS);
    }
    assert_true(UB_VERIFY_ISSUE_AT > UB_VERIFY_RUNS_END);
    assert_true(UB_VERIFY_APPLY_AT > UB_VERIFY_ISSUE_AT);
    assert_int_equal(UB_VERIFY_MARKS, UB_VERIFY_RUNS_END + 1);
}

static void test_encode(void **state)
{
    (void)state;
    double s[UB_VERIFY_SLOTS], v[UB_VERIFY_LEN];
    for (int j = 0; j < UB_VERIFY_SLOTS; j++)
        s[j] = 0.0123456789 + j * 1e-3;
    s[3] = NAN;
    s[5] = -1.0;
    ub_verify_encode(s, v);
    assert_true(v[0] == 1.0);
    for (int j = 0; j < UB_VERIFY_SLOTS; j++) {
        bool have = j != 3 && j != 5;
        assert_true(v[1 + UB_VERIFY_SLOTS + j] == (have ? 1.0 : 0.0));
        assert_true(v[1 + j] == (have ? nearbyint(s[j] * 1e9) : 0.0));
        assert_true(v[1 + j] == floor(v[1 + j])); /* integer nanoseconds: exact sums */
    }
}

/* The sum over `ranks` identical ranks of slots alternating plan, pass-through. */
static void agreed_of(const double *plan, const double *pass, int ranks, double v[UB_VERIFY_LEN])
{
    double s[UB_VERIFY_SLOTS], one[UB_VERIFY_LEN];
    for (int i = 0; i < UB_VERIFY_PER_SIDE; i++) {
        s[2 * i] = plan[i];
        s[2 * i + 1] = pass[i];
    }
    ub_verify_encode(s, one);
    for (int k = 0; k < UB_VERIFY_LEN; k++)
        v[k] = ranks * one[k];
}

/* Noise of +-3% around each side's time, the same pattern on both sides shifted by one. */
static void noisy(double base, double *out)
{
    static const double jitter[] = {0.01, -0.03, 0.02, 0.0, -0.01, 0.03, -0.02, 0.015, -0.005, 0.025};
    for (int i = 0; i < UB_VERIFY_PER_SIDE; i++)
        out[i] = base * (1.0 + jitter[i % 10]);
}

static void test_faster_plan_kept(void **state)
{
    (void)state;
    double plan[UB_VERIFY_PER_SIDE], pass[UB_VERIFY_PER_SIDE], v[UB_VERIFY_LEN];
    noisy(0.090, plan);
    noisy(0.100, pass);
    agreed_of(plan, pass, 4, v);
    ub_verify_verdict d;
    ub_verify_judge(v, "best", NULL, &d);
    assert_true(d.keep);
    assert_int_equal(d.pairs, UB_VERIFY_PER_SIDE);
    assert_int_equal(d.plan.n, UB_VERIFY_PER_SIDE);
    assert_true(fabs(d.plan.median - 0.090) < 0.003);
    assert_true(fabs(d.pass.median - 0.100) < 0.003);
    assert_true(d.margin > 0 && d.margin < d.gain);
    assert_non_null(strstr(d.reason, "kept"));
}

static void test_equal_or_slower_dropped(void **state)
{
    (void)state;
    double plan[UB_VERIFY_PER_SIDE], pass[UB_VERIFY_PER_SIDE], v[UB_VERIFY_LEN];
    ub_verify_verdict d;
    noisy(0.100, plan);
    noisy(0.100, pass);
    agreed_of(plan, pass, 2, v);
    ub_verify_judge(v, "best", NULL, &d);
    assert_false(d.keep);
    assert_non_null(strstr(d.reason, "dropped"));
    noisy(0.110, plan);
    agreed_of(plan, pass, 2, v);
    ub_verify_judge(v, "best", NULL, &d);
    assert_false(d.keep);
    assert_false(d.again);   /* measured slower: dropped at once */
    assert_non_null(strstr(d.reason, "slower by"));
    /* Faster, but by less than its own noise: measured again, judged with the earlier windows,
     * and dropped when the last window still cannot tell. */
    noisy(0.099, plan);
    for (int i = 0; i < UB_VERIFY_PER_SIDE; i++)
        pass[i] = 0.100 * (1.0 + (i % 2 ? 0.05 : -0.05));
    agreed_of(plan, pass, 2, v);
    ub_verify_judge(v, "best", NULL, &d);
    assert_false(d.keep);
    assert_true(d.again);
    assert_true(d.margin > d.gain);
    assert_non_null(strstr(d.reason, "measured again (window 2 of at most 3)"));
    for (int w = 2; w <= UB_VERIFY_MAX_WINDOWS; w++) {
        ub_verify_verdict next;
        ub_verify_judge(v, "best", &d, &next);
        d = next;
        assert_int_equal(d.windows, w);
        assert_int_equal(d.pairs, w * UB_VERIFY_PER_SIDE);
        assert_false(d.keep);
    }
    assert_false(d.again);
    assert_non_null(strstr(d.reason, "over 3 windows"));
    assert_non_null(strstr(d.reason, "dropped"));
}

/* A window of a loaded machine (measured in runtime_verify.sh's keep test beside four other jobs
 * on two cores): the plan side 43-51 ms, pass-through 60-69 ms, but stalls of 50-70 ms hit four of
 * the eight pairs (one on the plan's side), so the median's margin (33.6 ms) exceeds its gain
 * (21.3 ms).  Measured again in a calm window, the 16 pairs keep it; judged alone, the first
 * window would have dropped a plan a third faster. */
static void test_inconclusive_window_measured_again(void **state)
{
    (void)state;
    const double loaded_plan[UB_VERIFY_PER_SIDE] = {0.044860, 0.128102, 0.050597, 0.044124,
                                                    0.044638, 0.042403, 0.044125, 0.044450};
    const double loaded_pass[UB_VERIFY_PER_SIDE] = {0.125065, 0.063613, 0.138005, 0.060551,
                                                    0.069175, 0.059821, 0.062276, 0.111952};
    double plan[UB_VERIFY_PER_SIDE], pass[UB_VERIFY_PER_SIDE], v[UB_VERIFY_LEN];
    memcpy(plan, loaded_plan, sizeof plan);
    memcpy(pass, loaded_pass, sizeof pass);
    agreed_of(plan, pass, 2, v);
    ub_verify_verdict first, second;
    ub_verify_judge(v, "best", NULL, &first);
    assert_false(first.keep);
    assert_true(first.again);
    assert_true(first.gain > 0.021 && first.gain < 0.022 && first.margin > 0.033 && first.margin < 0.034);
    noisy(0.045, plan);
    noisy(0.064, pass);
    agreed_of(plan, pass, 2, v);
    ub_verify_judge(v, "best", &first, &second);
    assert_true(second.keep);
    assert_int_equal(second.windows, 2);
    assert_int_equal(second.pairs, 2 * UB_VERIFY_PER_SIDE);
    assert_true(fabs(second.plan_slots[1] - 0.128102) < 1e-6);   /* the first window's pairs are kept */
    assert_non_null(strstr(second.reason, "over 2 windows"));
    assert_non_null(strstr(second.reason, "kept"));
    /* The same calm window judged alone keeps it too; a slower one after an inconclusive window
     * is dropped without a third. */
    for (int i = 0; i < UB_VERIFY_PER_SIDE; i++)
        plan[i] = 0.080 * (1.0 + 0.01 * (i % 3));
    agreed_of(plan, pass, 2, v);
    ub_verify_judge(v, "best", &first, &second);
    assert_false(second.keep);
    assert_false(second.again);
}

/* A stall (one iteration ten times longer) in one pair changes neither the verdict nor, much,
 * its numbers: the same on every rank, since they judge the same agreed vector. */
static void test_stall_is_an_outlier(void **state)
{
    (void)state;
    double plan[UB_VERIFY_PER_SIDE], pass[UB_VERIFY_PER_SIDE], v[UB_VERIFY_LEN];
    ub_verify_verdict calm, stalled;
    noisy(0.090, plan);
    noisy(0.100, pass);
    agreed_of(plan, pass, 4, v);
    ub_verify_judge(v, "best", NULL, &calm);
    plan[2] = 1.0;
    agreed_of(plan, pass, 4, v);
    ub_verify_judge(v, "best", NULL, &stalled);
    assert_true(calm.keep && stalled.keep);
    assert_true(fabs(stalled.gain - calm.gain) < 0.005);
    noisy(0.090, plan);
    pass[4] = 1.0; /* a stall in a pass-through iteration does not make a slower plan look faster */
    for (int i = 0; i < UB_VERIFY_PER_SIDE; i++)
        plan[i] *= 1.2;
    agreed_of(plan, pass, 4, v);
    ub_verify_judge(v, "best", NULL, &stalled);
    assert_false(stalled.keep);
}

static void test_too_few_pairs_dropped(void **state)
{
    (void)state;
    double s[UB_VERIFY_SLOTS], v[UB_VERIFY_LEN];
    for (int j = 0; j < UB_VERIFY_SLOTS; j++)
        s[j] = NAN;
    s[0] = 0.05; s[1] = 0.1; s[2] = 0.05; s[3] = 0.1; s[5] = 0.1; /* two pairs */
    ub_verify_encode(s, v);
    ub_verify_verdict d, next;
    ub_verify_judge(v, "syncea", NULL, &d);
    assert_false(d.keep);
    assert_true(d.again);
    assert_int_equal(d.pairs, 2);
    assert_int_equal(d.pass.n, 3);
    assert_non_null(strstr(d.reason, "only 2 pairs"));
    /* Nothing measured in the later windows either: dropped after the last. */
    for (int j = 0; j < UB_VERIFY_SLOTS; j++)
        s[j] = NAN;
    ub_verify_encode(s, v);
    ub_verify_judge(v, "syncea", &d, &next);
    assert_true(next.again);
    ub_verify_judge(v, "syncea", &next, &d);
    assert_false(d.keep);
    assert_false(d.again);
    assert_int_equal(d.windows, 3);
    assert_non_null(strstr(d.reason, "only 2 pairs of iterations measured on every side over 3 windows"));
    assert_non_null(strstr(d.reason, "dropped"));
}

/* A slot measured by some ranks only is their mean: what every rank reads from the sum. */
static void test_mean_over_ranks_that_measured(void **state)
{
    (void)state;
    double a[UB_VERIFY_SLOTS], b[UB_VERIFY_SLOTS], va[UB_VERIFY_LEN], vb[UB_VERIFY_LEN], v[UB_VERIFY_LEN];
    for (int j = 0; j < UB_VERIFY_SLOTS; j++)
        a[j] = b[j] = j % 2 ? 0.1 : 0.08;
    b[0] = NAN;
    a[2] = 0.07;
    b[2] = 0.09;
    ub_verify_encode(a, va);
    ub_verify_encode(b, vb);
    for (int k = 0; k < UB_VERIFY_LEN; k++)
        v[k] = va[k] + vb[k];
    ub_verify_verdict d;
    ub_verify_judge(v, "best", NULL, &d);
    assert_int_equal(d.plan.n, UB_VERIFY_PER_SIDE);
    assert_true(fabs(d.plan.median - 0.08) < 1e-9);
    assert_true(d.keep);
}

/* The executor's wait before a block is measured from where rule 1 starts it: on a link-bound
 * chain the previous block's end, on a ready-bound block its ready time after the iteration's start
 * mark; a block begun before that point waited 0; an untimed mark or an unknown ready time is left
 * out; the statistic is the median over blocks and iterations, so one late wake-up moves nothing. */
static void test_executor_wait(void **state)
{
    (void)state;
    /* 2 iterations (start marks 10 and 20 s), 3 blocks; ready 0, 0 and 0.5 s after the start. */
    double ready[3] = {0, 0, 0.5}, t0[2] = {10, 20};
    /* Iteration 0: block 0 begins 0.1 after its ready time, block 1 0.1 after block 0's end
     * (link-bound), block 2 0.1 after its ready time (10.5; block 1 ended at 10.35).
     * Iteration 1: the same, but block 1 begins 3 s late (one stall) and block 2 before its
     * ready time by the model (an early ready: waited 0). */
    double start[2 * 3] = {10.1, 10.3, 10.6, 20.1, 23.3, 20.45}, end[2 * 3] = {10.2, 10.35, 10.7, 20.2, 23.35, 20.6};
    double w = ub_verify_executor_wait(ready, 3, 3, t0, start, end, 2);
    /* Waits: 0.1, 0.1, 0.1 | 0.1, 3.1, 0 -> median 0.1. */
    assert_true(fabs(w - 0.1) < 1e-9);
    /* A stride wider than the blocks used (the plan's first blocks only), untimed marks and an
     * unknown ready time are skipped. */
    double start4[2 * 4] = {10.1, NAN, 10.6, 0, 20.3, 20.5, NAN, 0}, end4[2 * 4] = {10.2, NAN, 10.7, 0, 20.4, 20.6, 20.7, 0};
    double ready4[3] = {0, NAN, 0.4};
    /* Kept: (0,0) 0.1; (0,2) from max(10.4, end NAN of block 1) = 10.4 -> 0.2; (1,0) 0.3. */
    w = ub_verify_executor_wait(ready4, 3, 4, t0, start4, end4, 2);
    assert_true(fabs(w - 0.2) < 1e-9);
    assert_true(isnan(ub_verify_executor_wait(ready, 3, 3, t0, start, end, 0)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout),
        cmocka_unit_test(test_encode),
        cmocka_unit_test(test_faster_plan_kept),
        cmocka_unit_test(test_equal_or_slower_dropped),
        cmocka_unit_test(test_inconclusive_window_measured_again),
        cmocka_unit_test(test_stall_is_an_outlier),
        cmocka_unit_test(test_too_few_pairs_dropped),
        cmocka_unit_test(test_mean_over_ranks_that_measured),
        cmocka_unit_test(test_executor_wait),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
