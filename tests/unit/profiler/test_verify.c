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
    ub_verify_judge(v, "best", &d);
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
    ub_verify_judge(v, "best", &d);
    assert_false(d.keep);
    assert_non_null(strstr(d.reason, "dropped"));
    noisy(0.110, plan);
    agreed_of(plan, pass, 2, v);
    ub_verify_judge(v, "best", &d);
    assert_false(d.keep);
    /* Faster, but by less than its own noise: dropped. */
    noisy(0.099, plan);
    for (int i = 0; i < UB_VERIFY_PER_SIDE; i++)
        pass[i] = 0.100 * (1.0 + (i % 2 ? 0.05 : -0.05));
    agreed_of(plan, pass, 2, v);
    ub_verify_judge(v, "best", &d);
    assert_false(d.keep);
    assert_true(d.margin > d.gain);
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
    ub_verify_judge(v, "best", &calm);
    plan[2] = 1.0;
    agreed_of(plan, pass, 4, v);
    ub_verify_judge(v, "best", &stalled);
    assert_true(calm.keep && stalled.keep);
    assert_true(fabs(stalled.gain - calm.gain) < 0.005);
    noisy(0.090, plan);
    pass[4] = 1.0; /* a stall in a pass-through iteration does not make a slower plan look faster */
    for (int i = 0; i < UB_VERIFY_PER_SIDE; i++)
        plan[i] *= 1.2;
    agreed_of(plan, pass, 4, v);
    ub_verify_judge(v, "best", &stalled);
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
    ub_verify_verdict d;
    ub_verify_judge(v, "syncea", &d);
    assert_false(d.keep);
    assert_int_equal(d.pairs, 2);
    assert_int_equal(d.pass.n, 3);
    assert_non_null(strstr(d.reason, "only 2 pairs"));
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
    ub_verify_judge(v, "best", &d);
    assert_int_equal(d.plan.n, UB_VERIFY_PER_SIDE);
    assert_true(fabs(d.plan.median - 0.08) < 1e-9);
    assert_true(d.keep);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout),
        cmocka_unit_test(test_encode),
        cmocka_unit_test(test_faster_plan_kept),
        cmocka_unit_test(test_equal_or_slower_dropped),
        cmocka_unit_test(test_stall_is_an_outlier),
        cmocka_unit_test(test_too_few_pairs_dropped),
        cmocka_unit_test(test_mean_over_ranks_that_measured),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
