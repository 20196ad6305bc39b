/* Calibration's pure pieces (usbyte/calibrate.h): which sizes are probed for a plan, and the
 * vector by which the ranks agree on the probes' times. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "usbyte/calibrate.h"
#include "usbyte/fit.h"

#define assert_double_equal(a, b, eps) assert_true(fabs((double)(a) - (double)(b)) <= (eps))

/* 16 calls of 4 KiB to 8 KiB: a block of all of them (about 96 KiB) is a size none shows. */
static void make_profile(ub_profile *p, ub_call *calls, uint64_t staging)
{
    *p = (ub_profile){0};
    for (int k = 0; k < 16; k++)
        calls[k] = (ub_call){.bytes = (uint64_t)(4096 + 256 * k), .merge = true};
    p->calls = calls;
    p->n_calls = 16;
    p->staging_max = staging;
}

static void one_block_of_all(const ub_profile *p, ub_plan *plan)
{
    ub_plan_init(plan, "syncea");
    ub_plan_begin_block(plan);
    for (int k = 0; k < p->n_calls; k++)
        ub_plan_add_segment(plan, k, 0, p->calls[k].bytes);
}

static void a_block_per_call(const ub_profile *p, ub_plan *plan)
{
    ub_plan_init(plan, "wfbp");
    for (int k = 0; k < p->n_calls; k++) {
        ub_plan_begin_block(plan);
        ub_plan_add_segment(plan, k, 0, p->calls[k].bytes);
    }
}

static void test_merged_block_is_probed(void **state)
{
    (void)state;
    ub_call calls[16];
    ub_profile p;
    make_profile(&p, calls, 1 << 30);
    ub_plan plan;
    one_block_of_all(&p, &plan);
    uint64_t sizes[UB_CALIB_MAX_PROBES];
    int n = ub_calib_probe_sizes(&p, &plan, sizes);
    assert_true(n >= 1);
    for (int i = 0; i < n; i++) {
        if (i > 0)
            assert_true(sizes[i] > sizes[i - 1]);
        for (int k = 0; k < p.n_calls; k++) {
            double b = (double)calls[k].bytes, m = (double)sizes[i];
            assert_false(b <= m * UB_FIT_KNOT_RATIO && m <= b * UB_FIT_KNOT_RATIO);
        }
    }
    /* The probes reach the block's size (within a knot's ratio). */
    assert_true((double)sizes[n - 1] * UB_FIT_KNOT_RATIO >= ub_calib_block_bytes(&plan, 0));
    ub_plan_free(&plan);
}

static void test_calls_sizes_need_no_probe(void **state)
{
    (void)state;
    ub_call calls[16];
    ub_profile p;
    make_profile(&p, calls, 1 << 30);
    ub_plan plan;
    a_block_per_call(&p, &plan);
    uint64_t sizes[UB_CALIB_MAX_PROBES];
    assert_int_equal(ub_calib_probe_sizes(&p, &plan, sizes), 0);
    ub_plan_free(&plan);
}

static void test_probes_fit_the_staging_buffer(void **state)
{
    (void)state;
    ub_call calls[16];
    ub_profile p;
    make_profile(&p, calls, 70000); /* 64 KiB fits, 256 KiB does not */
    ub_plan plan;
    one_block_of_all(&p, &plan);
    uint64_t sizes[UB_CALIB_MAX_PROBES];
    int n = ub_calib_probe_sizes(&p, &plan, sizes);
    assert_int_equal(n, 1);
    assert_int_equal(sizes[0], 65536);
    p.staging_max = 1000; /* nothing fits */
    assert_int_equal(ub_calib_probe_sizes(&p, &plan, sizes), 0);
    ub_plan_free(&plan);
}

static void combine(double *into, const double *v)
{
    for (int i = 0; i < UB_CALIB_LEN; i++)
        into[i] = fmax(into[i], v[i]);
}

static void test_agreed_is_least_over_ranks_of_the_median_over_repeats(void **state)
{
    (void)state;
    /* 2 probes, 3 repeats: seconds[r * n + i].  Medians: rank 0 3e-4 and 8e-4, rank 1 2.8e-4 and
     * 6.5e-4; the least single times (2e-4, 6e-4) are one repeat's luck, not what a probe costs. */
    const double rank0[] = {3e-4, 9e-4, 2e-4, 8e-4, 5e-4, 7e-4};
    const double rank1[] = {2.5e-4, 6e-4, 4e-4, 1e-3, 2.8e-4, 6.5e-4};
    double v0[UB_CALIB_LEN], v1[UB_CALIB_LEN], out[2];
    ub_calib_encode(rank0, 2, 3, v0);
    ub_calib_encode(rank1, 2, 3, v1);
    combine(v0, v1);
    assert_true(ub_calib_decode(v0, 2, out));
    assert_double_equal(out[0], 2.8e-4, 0);
    assert_double_equal(out[1], 6.5e-4, 0);
}

static void test_a_rank_missing_a_time_agrees_nothing(void **state)
{
    (void)state;
    const double rank0[] = {3e-4, 9e-4, 2e-4, 8e-4, 5e-4, 7e-4};
    const double rank1[] = {2.5e-4, NAN, 4e-4, 1e-3, 3e-4, 6.5e-4};
    double v0[UB_CALIB_LEN], v1[UB_CALIB_LEN], out[2];
    ub_calib_encode(rank0, 2, 3, v0);
    ub_calib_encode(rank1, 2, 3, v1);
    combine(v0, v1);
    assert_false(ub_calib_decode(v0, 2, out));
    /* and the same outcome on the other rank's side of the combination */
    ub_calib_encode(rank0, 2, 3, v1);
    ub_calib_encode(rank1, 2, 3, v0);
    combine(v1, v0);
    assert_false(ub_calib_decode(v1, 2, out));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merged_block_is_probed),
        cmocka_unit_test(test_calls_sizes_need_no_probe),
        cmocka_unit_test(test_probes_fit_the_staging_buffer),
        cmocka_unit_test(test_agreed_is_least_over_ranks_of_the_median_over_repeats),
        cmocka_unit_test(test_a_rank_missing_a_time_agrees_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
