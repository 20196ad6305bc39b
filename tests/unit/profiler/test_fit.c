/* alpha/beta fit: exact lines, noise, degenerate and constrained cases, invalid samples, and the
 * ring conversion of docs/model.md. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "usbyte/fit.h"

static uint64_t rng_state;
static double uniform(void) /* [0, 1) */
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}
static double gaussian(void)
{
    double u = uniform() + 1e-300, v = uniform();
    return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

static void assert_rel(double got, double want, double tol)
{
    double err = fabs(got - want) / (fabs(want) > 0 ? fabs(want) : 1);
    if (!(err <= tol))
        fail_msg("got %.17g, want %.17g (relative error %.3g > %.3g)", got, want, err, tol);
}

static void test_exact_lines(void **state)
{
    (void)state;
    const double alphas[] = {1.4e-4, 5e-6, 0.0};
    const double betas[] = {2.0e-10, 8.571e-10, 1e-12};
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            for (int w = 0; w < 2; w++) {
                ub_fit_sample s[40];
                for (int i = 0; i < 40; i++) {
                    s[i].bytes = (double)(1000ull << (i % 20)); /* 1 KB .. 0.5 GB */
                    s[i].seconds = alphas[a] + betas[b] * s[i].bytes;
                }
                ub_fit_result r;
                assert_int_equal(ub_fit_linear(s, 40, w ? UB_FIT_RELATIVE : UB_FIT_PLAIN, &r), 0);
                assert_rel(r.beta, betas[b], 1e-9);
                if (alphas[a] > 0)
                    assert_rel(r.alpha, alphas[a], 1e-9);
                else
                    assert_true(r.alpha < 1e-15);
                assert_int_equal(r.samples, 40);
                assert_int_equal(r.distinct_sizes, 20);
                assert_int_equal(r.ignored, 0);
                assert_true(r.rms < 1e-15 && r.rel_rms < 1e-9 && r.max_abs < 1e-14);
                assert_int_equal(r.flags & (UB_FIT_ONE_SIZE | UB_FIT_EMPTY), 0);
            }
}

/* Sizes near 1e12 differing by 1e6: without centring the normal equations lose all precision. */
static void test_centring(void **state)
{
    (void)state;
    ub_fit_sample s[10];
    for (int i = 0; i < 10; i++) {
        s[i].bytes = 1e12 + 1e6 * i;
        s[i].seconds = 3e-5 + 1e-10 * s[i].bytes;
    }
    ub_fit_result r;
    assert_int_equal(ub_fit_linear(s, 10, UB_FIT_PLAIN, &r), 0);
    assert_rel(r.beta, 1e-10, 1e-6);
    assert_rel(r.alpha, 3e-5, 1e-3);
}

/* Absolute jitter of 10 us on the emulator's kind of line, 30 samples per size: within 5%. */
static void test_noisy(void **state)
{
    (void)state;
    rng_state = 42;
    enum { SIZES = 8, REPS = 30 };
    ub_fit_sample s[SIZES * REPS];
    double alpha = 50e-6, beta = 1.0 / 10e9;
    for (int i = 0; i < SIZES * REPS; i++) {
        s[i].bytes = (double)(256ull << (2 * (i % SIZES))); /* 256 B .. 4 MB */
        s[i].seconds = alpha + beta * s[i].bytes + 10e-6 * gaussian();
        if (s[i].seconds < 0)
            s[i].seconds = 0;
    }
    ub_fit_result r;
    assert_int_equal(ub_fit_linear(s, SIZES * REPS, UB_FIT_PLAIN, &r), 0);
    assert_rel(r.alpha, alpha, 0.05);
    assert_rel(r.beta, beta, 0.05);
    assert_true(r.rms > 7e-6 && r.rms < 13e-6);
    assert_int_equal(r.distinct_sizes, SIZES);

    /* 5% multiplicative noise over 6 decades: the relative fit keeps alpha, the plain one does not
     * have to (it is dominated by the large calls). */
    ub_fit_sample m[SIZES * REPS];
    for (int i = 0; i < SIZES * REPS; i++) {
        m[i].bytes = (double)(64ull << (3 * (i % SIZES))); /* 64 B .. 128 MB */
        m[i].seconds = (alpha + beta * m[i].bytes) * (1 + 0.05 * gaussian());
    }
    assert_int_equal(ub_fit_linear(m, SIZES * REPS, UB_FIT_RELATIVE, &r), 0);
    assert_rel(r.alpha, alpha, 0.05);
    assert_rel(r.beta, beta, 0.05);
}

static void test_one_size(void **state)
{
    (void)state;
    ub_fit_sample s[5] = {{1e6, 1.0e-3}, {1e6, 1.2e-3}, {1e6, 0.8e-3}, {1e6, 1.1e-3}, {1e6, 0.9e-3}};
    ub_fit_result r;
    assert_int_equal(ub_fit_linear(s, 5, UB_FIT_PLAIN, &r), 0);
    assert_true(r.flags & UB_FIT_ONE_SIZE);
    assert_int_equal(r.distinct_sizes, 1);
    assert_true(r.alpha == 0);
    assert_rel(r.beta, 1e-3 / 1e6, 1e-12);
    assert_rel(r.rms, sqrt((0.04 + 0.04 + 0.01 + 0.01) * 1e-6 / 5), 1e-9);

    ub_fit_sample z[3] = {{0, 2e-5}, {0, 4e-5}, {0, 3e-5}};
    assert_int_equal(ub_fit_linear(z, 3, UB_FIT_PLAIN, &r), 0);
    assert_true(r.flags & UB_FIT_ONE_SIZE);
    assert_rel(r.alpha, 3e-5, 1e-12);
    assert_true(r.beta == 0);
}

/* Brute force over a fine grid of the feasible quadrant around the answer: nothing is better. */
static void assert_constrained_optimum(const ub_fit_sample *s, size_t n, const ub_fit_result *r)
{
    double best = 0;
    for (size_t i = 0; i < n; i++) {
        double e = s[i].seconds - r->alpha - r->beta * s[i].bytes;
        best += e * e;
    }
    double amax = r->alpha > 0 ? 2 * r->alpha : 1e-4, bmax = r->beta > 0 ? 2 * r->beta : 1e-9;
    for (int i = 0; i <= 200; i++)
        for (int j = 0; j <= 200; j++) {
            double a = amax * i / 200, b = bmax * j / 200, sse = 0;
            for (size_t k = 0; k < n; k++) {
                double e = s[k].seconds - a - b * s[k].bytes;
                sse += e * e;
            }
            assert_true(sse >= best * (1 - 1e-12));
        }
}

/* Fitted alpha < 0: the answer is the best line through the origin. */
static void test_negative_alpha_clamped(void **state)
{
    (void)state;
    ub_fit_sample s[6];
    double sxy = 0, sxx = 0;
    for (int i = 0; i < 6; i++) {
        s[i].bytes = 1e6 * (i + 1);
        s[i].seconds = 1e-9 * s[i].bytes - 2e-4 + (i % 2 ? 1e-5 : -1e-5);
        sxy += s[i].bytes * s[i].seconds;
        sxx += s[i].bytes * s[i].bytes;
    }
    ub_fit_result r;
    assert_int_equal(ub_fit_linear(s, 6, UB_FIT_PLAIN, &r), 0);
    assert_true(r.flags & UB_FIT_ALPHA_CLAMPED);
    assert_false(r.flags & UB_FIT_BETA_CLAMPED);
    assert_true(r.alpha == 0);
    assert_rel(r.beta, sxy / sxx, 1e-12);
    assert_constrained_optimum(s, 6, &r);
}

/* Durations falling with size (noise on a flat cost): beta = 0, alpha = the mean. */
static void test_negative_beta_clamped(void **state)
{
    (void)state;
    ub_fit_sample s[4] = {{1e3, 5.2e-5}, {1e4, 5.1e-5}, {1e5, 4.9e-5}, {1e6, 4.8e-5}};
    ub_fit_result r;
    assert_int_equal(ub_fit_linear(s, 4, UB_FIT_PLAIN, &r), 0);
    assert_true(r.flags & UB_FIT_BETA_CLAMPED);
    assert_false(r.flags & UB_FIT_ALPHA_CLAMPED);
    assert_true(r.beta == 0);
    assert_rel(r.alpha, 5.0e-5, 1e-12);
    assert_constrained_optimum(s, 4, &r);
}

static void test_invalid_samples_ignored(void **state)
{
    (void)state;
    ub_fit_sample s[] = {
        {1e3, 1e-4 + 1e-13 * 1e3}, {NAN, 1e-4}, {1e6, 1e-4 + 1e-13 * 1e6}, {1e5, INFINITY},
        {-5, 1e-4}, {1e4, -1e-6}, {1e7, 1e-4 + 1e-13 * 1e7}, {INFINITY, 1.0}, {1e8, NAN},
    };
    ub_fit_result r;
    assert_int_equal(ub_fit_linear(s, 9, UB_FIT_PLAIN, &r), 0);
    assert_int_equal(r.samples, 3);
    assert_int_equal(r.ignored, 6);
    assert_int_equal(r.distinct_sizes, 3);
    assert_rel(r.alpha, 1e-4, 1e-9);
    assert_rel(r.beta, 1e-13, 1e-6);
    assert_true(isfinite(r.rms));

    /* a zero duration cannot be weighted by 1/t^2 */
    ub_fit_sample z[] = {{1e3, 0}, {1e4, 2e-5}, {1e5, 3e-5}};
    assert_int_equal(ub_fit_linear(z, 3, UB_FIT_RELATIVE, &r), 0);
    assert_int_equal(r.ignored, 1);
    assert_int_equal(r.samples, 2);
}

static void test_empty(void **state)
{
    (void)state;
    ub_fit_result r;
    assert_int_equal(ub_fit_linear(NULL, 0, UB_FIT_PLAIN, &r), -1);
    assert_true(r.flags & UB_FIT_EMPTY);
    assert_int_equal(r.samples, 0);
    ub_fit_sample bad[2] = {{NAN, 1}, {1, -1}};
    assert_int_equal(ub_fit_linear(bad, 2, UB_FIT_PLAIN, &r), -1);
    assert_int_equal(r.ignored, 2);
    assert_true(r.alpha == 0 && r.beta == 0);
}

static void test_ring_conversion(void **state)
{
    (void)state;
    double a0, b0, alpha, beta;
    /* 8 ranks: 14 hops of startup, 14/8 of the bytes over the link */
    assert_int_equal(ub_fit_to_ring(14e-5, 1.75e-10, 8, &a0, &b0), 0);
    assert_rel(a0, 1e-5, 1e-15);
    assert_rel(b0, 1e-10, 1e-15);
    assert_int_equal(ub_ring_to_fit(a0, b0, 8, &alpha, &beta), 0);
    assert_rel(alpha, 14e-5, 1e-15);
    assert_rel(beta, 1.75e-10, 1e-15);
    for (int p = 2; p <= 64; p++) {
        assert_int_equal(ub_ring_to_fit(3e-6, 1.0 / 12e9, p, &alpha, &beta), 0);
        assert_int_equal(ub_fit_to_ring(alpha, beta, p, &a0, &b0), 0);
        assert_rel(a0, 3e-6, 1e-14);
        assert_rel(b0, 1.0 / 12e9, 1e-14);
    }
    a0 = b0 = 7;
    assert_int_equal(ub_fit_to_ring(1, 1, 1, &a0, &b0), -1);
    assert_int_equal(ub_fit_to_ring(1, 1, 0, &a0, &b0), -1);
    assert_int_equal(ub_ring_to_fit(1, 1, -3, &a0, &b0), -1);
    assert_true(a0 == 7 && b0 == 7);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_lines),
        cmocka_unit_test(test_centring),
        cmocka_unit_test(test_noisy),
        cmocka_unit_test(test_one_size),
        cmocka_unit_test(test_negative_alpha_clamped),
        cmocka_unit_test(test_negative_beta_clamped),
        cmocka_unit_test(test_invalid_samples_ignored),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_ring_conversion),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
