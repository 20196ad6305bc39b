/* From agreed numbers to a docs/model.md profile: the barrier case (DDP: one segment), distinct
 * forward segments (per layer), structural joining, calls nobody waited on, the fitted net. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>
#include <stdlib.h>

/* cmocka has no double comparison with a tolerance in this version. */
#define assert_double_equal(a, b, eps) assert_true(fabs((double)(a) - (double)(b)) <= (eps))

#include "usbyte/model.h"
#include "usbyte/record.h"

static uint64_t bytes[4] = {1000000, 2000000, 3000000, 4000000};
static int dtype[4] = {UB_DTYPE_FLOAT32, UB_DTYPE_FLOAT32, UB_DTYPE_FLOAT32, UB_DTYPE_FLOAT32};
static int op[4] = {UB_OP_SUM, UB_OP_SUM, UB_OP_SUM, UB_OP_SUM};

/* comm = 1 ms + 1 ns/B exactly */
static void calls_with_exact_link(ub_summary_call *c, int n)
{
    for (int k = 0; k < n; k++) {
        c[k].ready = 0.010 * k;
        c[k].comm_cost = 1e-3 + 1e-9 * (double)bytes[k];
        c[k].comm_mean = c[k].comm_cost * 1.1;
        c[k].done = c[k].ready + c[k].comm_cost;
        c[k].split = true;
    }
}

static void test_barrier_case(void **state)
{
    (void)state;
    ub_summary_call c[4] = {{0}};
    calls_with_exact_link(c, 4);
    for (int k = 0; k < 4; k++)
        c[k].need = 0.040 + 1e-5 * k; /* waits in a row, structurally joined */
    for (int k = 1; k < 4; k++)
        c[k].split = false;
    ub_agreed a = {4, 4, c, 0.060, {.other_calls = 0}, 0};
    ub_profile p;
    ub_fit_result fit;
    assert_int_equal(ub_derive_profile(&a, bytes, dtype, op, false, &p, &fit), 0);
    assert_int_equal(p.n_forward, 1);
    for (int k = 0; k < 4; k++)
        assert_int_equal(p.calls[k].need, 0);
    assert_double_equal(p.backward_end, 0.030, 1e-12);
    assert_double_equal(p.gap, 0.010, 1e-12);
    /* the consumer passed the last wait at max(need, done) = 0.035 + ... */
    double pass = fmax(0.040 + 3e-5, c[3].done);
    assert_double_equal(p.forward[0], 0.060 - pass, 1e-12);
    assert_true(p.has_net);
    assert_double_equal(p.alpha, 1e-3, 1e-9);
    assert_double_equal(p.beta, 1e-9, 1e-15);
    assert_double_equal(p.calls[2].measured_comm, c[2].comm_mean, 0);
    assert_int_equal(p.ranks, 4);
    /* a valid profile for the evaluator: wfbp-like single blocks predict about the iteration */
    assert_true(ub_lower_bound(&p) > 0);
    free(p.calls);
    free(p.forward);
}

static void test_distinct_segments_reversed(void **state)
{
    (void)state;
    ub_summary_call c[4] = {{0}};
    calls_with_exact_link(c, 4);
    /* the forward needs the last-produced call first (per layer) */
    c[3].need = 0.040; c[2].need = 0.045; c[1].need = 0.046; c[0].need = 0.050;
    c[1].split = false; /* directly after call 2's wait */
    ub_agreed a = {4, 2, c, 0.060, {.other_calls = 0}, 0};
    ub_profile p;
    assert_int_equal(ub_derive_profile(&a, bytes, dtype, op, false, &p, NULL), 0);
    assert_int_equal(p.n_forward, 3);
    assert_int_equal(p.calls[3].need, 0);
    assert_int_equal(p.calls[2].need, 1);
    assert_int_equal(p.calls[1].need, 1);
    assert_int_equal(p.calls[0].need, 2);
    assert_double_equal(p.forward[0], 0.045 - fmax(0.040, c[3].done), 1e-12);
    free(p.calls);
    free(p.forward);
}

static void test_time_rule_without_cupti(void **state)
{
    (void)state;
    ub_summary_call c[4] = {{0}};
    calls_with_exact_link(c, 4);
    c[3].need = 0.040; c[2].need = 0.040 + 5e-6; c[1].need = 0.048; c[0].need = 0.048 + 5e-6;
    for (int k = 0; k < 4; k++)
        c[k].split = true; /* meaningless without CUPTI */
    ub_agreed a = {4, 2, c, 0.060, {.cupti_missing = 1}, 0};
    ub_profile p;
    assert_int_equal(ub_derive_profile(&a, bytes, dtype, op, false, &p, NULL), 0);
    assert_int_equal(p.n_forward, 2);
    assert_int_equal(p.calls[3].need, 0);
    assert_int_equal(p.calls[2].need, 0);
    assert_int_equal(p.calls[1].need, 1);
    assert_int_equal(p.calls[0].need, 1);
    free(p.calls);
    free(p.forward);
}

static void test_unwaited_calls_and_merge(void **state)
{
    (void)state;
    ub_summary_call c[4] = {{0}};
    calls_with_exact_link(c, 4);
    for (int k = 0; k < 4; k++)
        c[k].need = -1;
    c[1].barrier = true;
    ub_agreed a = {4, 2, c, 0.060, {.other_calls = 0}, 0};
    ub_profile p;
    assert_int_equal(ub_derive_profile(&a, bytes, dtype, op, false, &p, NULL), 0);
    assert_int_equal(p.n_forward, 1);
    assert_double_equal(p.gap, 0, 0);
    assert_false(p.calls[1].merge);
    assert_true(p.calls[0].merge);
    assert_double_equal(p.forward[0], 0.060 - c[3].done, 1e-12);
    free(p.calls);
    free(p.forward);
}

/* Stream semantics: the forward that waits for the input-side layer (the last call) first waits
 * for every call, so the per-layer profile becomes a barrier profile. */
static void test_stream_semantics_is_transitive(void **state)
{
    (void)state;
    ub_summary_call c[4] = {{0}};
    calls_with_exact_link(c, 4);
    c[3].need = 0.040; c[2].need = 0.045; c[1].need = 0.046; c[0].need = 0.050;
    ub_agreed a = {4, 2, c, 0.060, {.copy_beta = 1e-10}, 0};
    ub_profile p;
    assert_int_equal(ub_derive_profile(&a, bytes, dtype, op, true, &p, NULL), 0);
    assert_int_equal(p.n_forward, 1);
    for (int k = 0; k < 4; k++)
        assert_int_equal(p.calls[k].need, 0);
    assert_double_equal(p.gap, 0.040 - 0.030, 1e-12);
    assert_double_equal(p.copy_beta, 1e-10, 0);
    free(p.calls);
    free(p.forward);
    /* the same numbers per call keep their three segments */
    assert_int_equal(ub_derive_profile(&a, bytes, dtype, op, false, &p, NULL), 0);
    assert_int_equal(p.n_forward, 4);
    free(p.calls);
    free(p.forward);
}

/* A consumer that waits once, on an event after the last call, releases every call with one wait:
 * one segment, not one per call (every call carries the wait's time and its split flag). */
static void test_one_wait_one_segment(void **state)
{
    (void)state;
    ub_summary_call c[4] = {{0}};
    calls_with_exact_link(c, 4);
    for (int k = 0; k < 4; k++)
        c[k].need = -1;
    c[3].need = 0.041;
    c[3].split = true;
    ub_agreed a = {4, 2, c, 0.060, {.other_calls = 0}, 0};
    ub_profile p;
    assert_int_equal(ub_derive_profile(&a, bytes, dtype, op, true, &p, NULL), 0);
    assert_int_equal(p.n_forward, 1);
    assert_double_equal(p.forward[0], 0.060 - fmax(0.041, c[3].done), 1e-12);
    free(p.calls);
    free(p.forward);
}

static void test_need_transitive(void **state)
{
    (void)state;
    double own[6] = {0.05, -1, 0.03, 0.04, -1, -1};
    int from[6];
    ub_need_transitive(6, own, from);
    int expect[6] = {2, 2, 2, 3, -1, -1};
    for (int k = 0; k < 6; k++)
        assert_int_equal(from[k], expect[k]);
    /* ties go to the earlier call: its wait is the one that released both */
    double tie[3] = {0.02, 0.02, 0.02};
    ub_need_transitive(3, tie, from);
    for (int k = 0; k < 3; k++)
        assert_int_equal(from[k], k);
}

/* The phase of an iteration: ready times in ms from any origin, its length in ms. */
static int phase_of(const double *ready_ms, int n, double iteration_ms)
{
    double ready[8];
    for (int k = 0; k < n; k++)
        ready[k] = 5.0 + 1e-3 * ready_ms[k];
    return ub_iteration_phase(ready, n, 1e-3 * iteration_ms);
}

static void test_iteration_phase(void **state)
{
    (void)state;
    /* A true iteration: the widest silence is the wrap (the forward pass). */
    assert_int_equal(phase_of((double[]){0, 1, 2, 3}, 4, 10), 0);
    /* Locked mid-backward: calls 3 and 4 are the next backward's first ones. */
    assert_int_equal(phase_of((double[]){0, 0.5, 1.0, 8.0, 8.5}, 5, 10), 3);
    /* Not clearly wider than the wrap: left as it is (DDP's two buckets, the second ready at the
     * end of a backward twice as long as the forward). */
    assert_int_equal(phase_of((double[]){0, 5}, 2, 8), 0);
    assert_int_equal(phase_of((double[]){0, 7}, 2, 10), 0);   /* 7 ms against 3 */
    assert_int_equal(phase_of((double[]){0, 9}, 2, 11), 1);   /* 9 ms against 2 */
    /* Silences under UB_PHASE_MIN_GAP are noise. */
    assert_int_equal(phase_of((double[]){0, 0.1, 0.9, 0.95}, 4, 1.0), 0);
    /* A call ready before an earlier one: the silence counts from the latest ready so far. */
    assert_int_equal(phase_of((double[]){0, 3, 2, 9}, 4, 10), 3);
    /* A call never measured: the silence runs from the last measured one. */
    assert_int_equal(phase_of((double[]){0, 0.5, NAN, 8.0, 8.5}, 5, 10), 3);
    assert_int_equal(phase_of((double[]){0, 0.5, 1.0, NAN, 1.5}, 5, 10), 0);
    /* Without an iteration length, with one call, or without the first call's ready time,
     * nothing to decide. */
    assert_int_equal(phase_of((double[]){0, 0.5, 8.0}, 3, 0), 0);
    assert_int_equal(phase_of((double[]){0}, 1, 10), 0);
    assert_int_equal(phase_of((double[]){NAN, 0.5, 8.0}, 3, 10), 0);
}

static void test_phase_majority(void **state)
{
    (void)state;
    /* 8 voting iterations (4 ranks x 2): a call needs 5 of them. */
    assert_int_equal(ub_phase_majority((double[]){3, 0, 5, 0}, 4, 8), 2);
    assert_int_equal(ub_phase_majority((double[]){4, 0, 4, 0}, 4, 8), 0);
    /* one stalled iteration of one rank is outvoted */
    assert_int_equal(ub_phase_majority((double[]){7, 0, 0, 1}, 4, 8), 0);
    assert_int_equal(ub_phase_majority((double[]){0, 0, 1, 0}, 4, 1), 2);
    /* votes at call 0 keep the profile's start; no voters, nothing moves */
    assert_int_equal(ub_phase_majority((double[]){8, 0, 0, 0}, 4, 8), 0);
    assert_int_equal(ub_phase_majority((double[]){0, 0, 0, 0}, 4, 0), 0);
    assert_int_equal(ub_phase_majority(NULL, 4, 8), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_barrier_case),
        cmocka_unit_test(test_distinct_segments_reversed),
        cmocka_unit_test(test_time_rule_without_cupti),
        cmocka_unit_test(test_unwaited_calls_and_merge),
        cmocka_unit_test(test_stream_semantics_is_transitive),
        cmocka_unit_test(test_one_wait_one_segment),
        cmocka_unit_test(test_need_transitive),
        cmocka_unit_test(test_iteration_phase),
        cmocka_unit_test(test_phase_majority),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
