/* The cost function (partition/cost.c), its fit (profiler/fit.c, fit_model.c), the lower bound under
 * a curve against the exhaustive optimum (tests/unit/order/oracle.c), and the curve in profile JSON
 * (profiler/profile_io.c). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "oracle.h"
#include "usbyte/fit.h"
#include "usbyte/io.h"
#include "usbyte/model.h"
#include "usbyte/policy.h"
#include "usbyte/synthetic.h"

static void near(double got, double want, double rel)
{
    double tol = rel * (fabs(want) > 1e-300 ? fabs(want) : 1e-300);
    if (fabs(got - want) > tol)
        fail_msg("got %.15g, want %.15g", got, want);
}

/* A latency floor of 10 s up to 100 bytes, 0.1 s/B up to 200, then 0.02 s/B (a protocol switch
 * with a kink), as points through which ub_net_curve_from_points draws the table's rule. */
static const double pts_bytes[] = {100, 200, 1000};
static const double pts_secs[] = {10, 20, 36};

static ub_profile line_profile(double alpha, double beta)
{
    return (ub_profile){.has_net = true, .alpha = alpha, .beta = beta};
}

static void test_curve_values(void **state)
{
    (void)state;
    ub_profile p = line_profile(1.0, 2.0);
    near(ub_link_cost(&p, 10), 21.0, 1e-15); /* no curve: the line */
    assert_int_equal(ub_net_curve_from_points(pts_bytes, pts_secs, 3, UB_NET_TAIL_TABLE, &p.curve), 0);
    assert_int_equal(p.curve.n, 4);
    near(ub_link_cost(&p, 1), 10.0, 1e-15);    /* below the first point: its time */
    near(ub_link_cost(&p, 100), 10.0, 1e-15);
    near(ub_link_cost(&p, 150), 15.0, 1e-15);  /* linear between points */
    near(ub_link_cost(&p, 600), 28.0, 1e-15);
    near(ub_link_cost(&p, 1000), 36.0, 1e-15);
    near(ub_link_cost(&p, 2000), 72.0, 1e-15); /* above: the last time times the ratio of bytes */
    double a, b;
    ub_link_local(&p, 150, &a, &b);
    near(b, 0.1, 1e-12);
    near(a + b * 150, 15.0, 1e-12);
    char err[200];
    assert_int_equal(ub_net_curve_check(&p.curve, true, err, sizeof err), 0);
    /* The block cost adds staging to the curve. */
    p.copy_beta = 0.5;
    near(ub_block_cost(&p, 150, 1), 15.0 + 75.0, 1e-15);
    near(ub_block_cost(&p, 150, 0), 15.0, 1e-15);
    /* A cost per block (the executor's wait) adds to every size, the curve and its line alike,
     * and the curve stays well formed. */
    ub_profile w = p;
    ub_link_add(&w, 3.0);
    for (double m = 1; m <= 4000; m *= 3)
        near(ub_link_cost(&w, m), ub_link_cost(&p, m) + 3.0, 1e-12);
    near(w.alpha, p.alpha + 3.0, 1e-15);
    assert_int_equal(ub_net_curve_check(&w.curve, true, err, sizeof err), 0);

    /* Chords: the first and last chords run on outside the points. */
    ub_profile q = line_profile(0, 0);
    assert_int_equal(ub_net_curve_from_points(pts_bytes, pts_secs, 3, UB_NET_TAIL_CHORDS, &q.curve), 0);
    near(ub_link_cost(&q, 0), 0.0, 1e-15);    /* chord 100-200 meets 0 s at 0 bytes */
    near(ub_link_cost(&q, 50), 5.0, 1e-15);
    near(ub_link_cost(&q, 2000), 56.0, 1e-12); /* 36 + 0.02 * 1000 */
    /* A first chord that would fall below 0 s at 0 bytes becomes the first point's time. */
    const double xb[] = {100, 200}, xs[] = {10, 30};
    assert_int_equal(ub_net_curve_from_points(xb, xs, 2, UB_NET_TAIL_CHORDS, &q.curve), 0);
    near(ub_link_cost(&q, 10), 10.0, 1e-15);
    near(ub_link_cost(&q, 300), 50.0, 1e-12);
    /* Points out of order are refused. */
    const double bad_b[] = {200, 100};
    assert_int_equal(ub_net_curve_from_points(bad_b, xs, 2, UB_NET_TAIL_TABLE, &q.curve), -1);
}

static void test_curve_check(void **state)
{
    (void)state;
    char err[200];
    ub_net_curve c = {.n = 2, .seg = {{0, 10, 0}, {100, 5, 0.01}}}; /* 10 s, then 6 s at 100 bytes */
    assert_int_equal(ub_net_curve_check(&c, true, err, sizeof err), -1);
    assert_non_null(strstr(err, "segments[1]"));
    assert_non_null(strstr(err, "must not fall"));
    assert_int_equal(ub_net_curve_check(&c, false, err, sizeof err), 0); /* a table may have spikes */
    c.seg[0].from = 1;
    assert_int_equal(ub_net_curve_check(&c, false, err, sizeof err), -1);
    assert_non_null(strstr(err, "segments[0].from"));
    c.seg[0].from = 0;
    c.seg[1].beta = -1;
    assert_int_equal(ub_net_curve_check(&c, false, err, sizeof err), -1);
    assert_non_null(strstr(err, "beta is negative"));
}

/* Every lower line lies at or below the curve at every size (checked densely, kinks included). */
static void check_lines_below(const ub_profile *p)
{
    double a[2 * UB_NET_MAX_SEGMENTS + 2], b[2 * UB_NET_MAX_SEGMENTS + 2];
    int n = ub_link_lower_lines(p, a, b, 2 * UB_NET_MAX_SEGMENTS + 2);
    assert_true(n >= 1);
    for (int i = 0; i < n; i++) {
        assert_true(a[i] >= 0 && b[i] >= 0);
        for (double m = 0; m < 1e5; m = m < 1 ? 1 : m * 1.01) {
            double c = ub_link_cost(p, m), l = a[i] + b[i] * m;
            if (l > c * (1 + 1e-12) + 1e-300)
                fail_msg("line %d (%g + %g M) above the cost %g at %g bytes", i, a[i], b[i], c, m);
        }
    }
}

static void test_lower_lines(void **state)
{
    (void)state;
    ub_profile p = line_profile(3.0, 0.5);
    double a[4], b[4];
    assert_int_equal(ub_link_lower_lines(&p, a, b, 4), 1);
    near(a[0], 3.0, 0);
    near(b[0], 0.5, 0);
    assert_int_equal(ub_net_curve_from_points(pts_bytes, pts_secs, 3, UB_NET_TAIL_TABLE, &p.curve), 0);
    check_lines_below(&p);
    /* A table with a spike (not monotone) still gets lines below it. */
    const double sb[] = {8, 16, 32, 64, 128}, ss[] = {13, 13, 68, 14, 15};
    assert_int_equal(ub_net_curve_from_points(sb, ss, 5, UB_NET_TAIL_TABLE, &p.curve), 0);
    check_lines_below(&p);
    /* The flat floor gives a line of slope 0 at the floor. */
    int n = ub_link_lower_lines(&p, a, b, 4);
    bool floor_line = false;
    for (int i = 0; i < n; i++)
        floor_line |= b[i] == 0 && a[i] == 13;
    assert_true(floor_line);
}

/* A random monotone curve through 2-5 points with a latency floor, on the synthetic profile's
 * scale (its line's cost at its mean call size). */
static void random_curve(ub_profile *p, uint64_t *st)
{
    double mean = 0;
    for (int k = 0; k < p->n_calls; k++)
        mean += (double)p->calls[k].bytes / p->n_calls;
    int n = 2 + (int)(ub_splitmix64(st) % 4);
    double bytes[6], secs[6], x = mean * (0.05 + 0.5 * ub_uniform01(st)), y = p->alpha * (0.5 + ub_uniform01(st));
    for (int i = 0; i < n; i++) {
        bytes[i] = x;
        secs[i] = y;
        double grow = 1.5 + 3 * ub_uniform01(st);
        y += p->beta * x * (grow - 1) * (0.2 + 1.6 * ub_uniform01(st));
        x *= grow;
    }
    assert_int_equal(ub_net_curve_from_points(bytes, secs, n, ub_splitmix64(st) % 2 ? UB_NET_TAIL_TABLE : UB_NET_TAIL_CHORDS,
                                              &p->curve),
                     0);
}

/* The lower bound under a curve never exceeds the exhaustive optimum, nor any policy's plan; a
 * plan marked optimal is no slower than the optimum; the best policy stays near the optimum. */
static void test_bound_vs_oracle_on_curves(void **state)
{
    (void)state;
    int tight = 0, optimal_marked = 0;
    for (int i = 0; i < 200; i++) {
        uint64_t st = 0xc0575 + (uint64_t)i;
        int n = 2 + (int)(ub_splitmix64(&st) % 4);
        ub_synthetic_opts o = {.n_calls = n, .seed = 500 + (uint64_t)i, .barrier = i % 2 == 0,
                               .copy_beta = i % 5 == 1 ? 2e-10 : 0.0};
        ub_profile p;
        assert_int_equal(ub_synthetic_profile(&o, &p), 0);
        random_curve(&p, &st);
        int pieces = n <= 3 ? 4 : 2;
        ub_plan opt;
        ub_plan_init(&opt, "oracle");
        double t_opt = oracle_optimum(&p, pieces, &opt);
        assert_true(t_opt > 0);
        double lb = ub_lower_bound(&p);
        if (!(lb <= t_opt * (1 + 1e-12)))
            fail_msg("profile %d: lower bound %.12g above the optimum %.12g", i, lb, t_opt);
        tight += fabs(lb - t_opt) <= 1e-9 * t_opt;
        for (int id = 0; id < UB_POLICY_COUNT; id++) {
            ub_plan plan;
            ub_plan_init(&plan, "");
            assert_int_equal(ub_policy_run((ub_policy_id)id, &p, &plan), 0);
            char err[300];
            assert_int_equal(ub_plan_validate(&p, &plan, err, sizeof err), 0);
            double t = ub_evaluate(&p, &plan, NULL);
            if (!(lb <= t * (1 + 1e-12)))
                fail_msg("profile %d: bound %.12g above %s's %.12g", i, lb, ub_policy_name((ub_policy_id)id), t);
            if (plan.optimal) {
                optimal_marked++;
                assert_true(t <= t_opt * (1 + 1e-9));
            }
            ub_plan_free(&plan);
        }
        ub_plan_free(&opt);
        ub_synthetic_free(&p);
    }
    printf("curves: the bound equals the optimum on %d of 200 profiles; %d plans marked optimal\n", tight,
           optimal_marked);
}

static void test_fit_knots(void **state)
{
    (void)state;
    /* On a line, the knots lie on it; a size keeps the median of its times: neither a slower
     * repetition nor a luckier one moves it. */
    ub_fit_sample s[] = {{1000, 1e-5 + 1e-9 * 1000}, {1000, 9e-5}, {1000, 4e-6}, {8000, 1e-5 + 1e-9 * 8000},
                         {64000, 1e-5 + 1e-9 * 64000}, {70000, 1e-5 + 1e-9 * 70000}, {512000, 1e-5 + 1e-9 * 512000}};
    ub_fit_knot k[8];
    int n = 0;
    assert_int_equal(ub_fit_knots(s, 7, 8, k, &n), 0);
    assert_int_equal(n, 4); /* 64000 and 70000 pool into one knot */
    for (int i = 0; i < n; i++)
        near(k[i].seconds, 1e-5 + 1e-9 * k[i].bytes, 1e-12);
    near(k[2].bytes, 67000, 1e-15);
    /* Order of the samples does not matter (every rank fits the same agreed numbers). */
    ub_fit_sample r[7];
    for (int i = 0; i < 7; i++)
        r[i] = s[6 - i];
    ub_fit_knot k2[8];
    int n2 = 0;
    assert_int_equal(ub_fit_knots(r, 7, 8, k2, &n2), 0);
    assert_int_equal(n2, n);
    assert_memory_equal(k, k2, sizeof(ub_fit_knot) * (size_t)n);
    /* At most max_knots: the pooling ratio grows. */
    assert_int_equal(ub_fit_knots(s, 7, 2, k, &n), 0);
    assert_true(n <= 2 && n >= 1);
    /* A dip is pooled away: the knots never fall. */
    ub_fit_sample d[] = {{100, 5}, {1000, 3}, {10000, 7}};
    assert_int_equal(ub_fit_knots(d, 3, 8, k, &n), 0);
    assert_int_equal(n, 3);
    near(k[0].seconds, 4, 1e-15);
    near(k[1].seconds, 4, 1e-15);
    near(k[2].seconds, 7, 1e-15);
    /* Nothing valid. */
    ub_fit_sample z[] = {{100, -1}};
    assert_int_equal(ub_fit_knots(z, 1, 8, k, &n), -1);
    assert_int_equal(n, 0);
}

static void test_fit_cost_model(void **state)
{
    (void)state;
    /* On a line the model is the line (no curve). */
    ub_fit_sample s[8];
    for (int i = 0; i < 8; i++) {
        double b = 4096.0 * (1 << (2 * i));
        s[i] = (ub_fit_sample){b, 2e-5 + 1e-10 * b};
    }
    ub_profile p = {0};
    ub_fit_result line;
    assert_int_equal(ub_fit_cost_model(s, 8, &p, &line), 0);
    assert_int_equal(p.curve.n, 0);
    near(p.alpha, 2e-5, 1e-6);
    near(p.beta, 1e-10, 1e-6);
    /* A latency floor of 50 us below 1 MiB: the line misses it, the curve follows every size. */
    for (int i = 0; i < 8; i++) {
        double b = s[i].bytes;
        s[i].seconds = b < 1048576 ? 5e-5 : 5e-5 + 1e-10 * (b - 1048576);
    }
    assert_int_equal(ub_fit_cost_model(s, 8, &p, &line), 0);
    assert_true(p.curve.n >= 2);
    char err[200];
    assert_int_equal(ub_net_curve_check(&p.curve, true, err, sizeof err), 0);
    for (int i = 0; i < 8; i++)
        near(ub_link_cost(&p, s[i].bytes), s[i].seconds, 1e-9);
    /* The line it replaces was off at some size by more than the tolerance. */
    double worst = 0;
    for (int i = 0; i < 8; i++)
        worst = fmax(worst, fabs(line.alpha + line.beta * s[i].bytes - s[i].seconds) / s[i].seconds);
    assert_true(worst > UB_FIT_LINE_TOLERANCE);
}

/* Re-fitting with the plan's own blocks changes the plan.  The calls (alternately 0.5 and 1 MiB)
 * show a line with a startup of 0.14 ms; above 4 MiB the network costs far more per byte (sizes
 * the calls never reach).  The plan made from the calls merges 7 calls into one 5.5 MiB block;
 * its measured time shows the dear sizes; the re-fitted model splits it, and that plan is faster
 * on the network itself (measured: 2 blocks, 8.575 ms; after the re-fit 7 blocks, 7.740 ms). */
static void test_refit_changes_plan(void **state)
{
    (void)state;
    const double tb[] = {524288, 1048576, 2097152, 4194304, 8388608}, ts[] = {0.62e-3, 1.1e-3, 2.0e-3, 3.8e-3, 12e-3};
    ub_call calls[8];
    for (int k = 0; k < 8; k++)
        calls[k] = (ub_call){.bytes = k % 2 ? 1048576 : 524288, .ready = 1e-4 * k, .dtype = UB_DTYPE_FLOAT32,
                             .merge = true, .measured_comm = -1};
    double fwd[1] = {1e-3};
    ub_profile truth = {.has_net = true, .backward_end = 8e-4, .n_forward = 1, .forward = fwd, .n_calls = 8,
                        .calls = calls};
    assert_int_equal(ub_net_curve_from_points(tb, ts, 5, UB_NET_TAIL_TABLE, &truth.curve), 0);
    ub_fit_sample base[8];
    for (int k = 0; k < 8; k++)
        base[k] = (ub_fit_sample){(double)calls[k].bytes, ub_link_cost(&truth, (double)calls[k].bytes)};
    ub_profile model = truth;
    assert_int_equal(ub_fit_cost_model(base, 8, &model, NULL), 0);
    ub_plan first, second;
    ub_plan_init(&first, "best");
    ub_plan_init(&second, "best");
    assert_int_equal(ub_policy_run(UB_POLICY_BEST, &model, &first), 0);
    /* What the blocks take on the network. */
    double secs[64];
    assert_true(first.n_blocks <= 64);
    for (uint32_t b = 0; b < first.n_blocks; b++) {
        double bytes = 0;
        for (uint32_t i = 0; i < first.blocks[b].n_segments; i++)
            bytes += (double)first.segments[first.blocks[b].first_segment + i].length;
        secs[b] = ub_link_cost(&truth, bytes);
    }
    ub_profile refit;
    assert_int_equal(ub_refit_with_blocks(base, 8, &model, &first, secs, &refit), 0);
    for (uint32_t b = 0; b < first.n_blocks; b++) {
        double bytes = 0;
        for (uint32_t i = 0; i < first.blocks[b].n_segments; i++)
            bytes += (double)first.segments[first.blocks[b].first_segment + i].length;
        near(ub_link_cost(&refit, bytes), secs[b], 0.05); /* the re-fit knows the sizes it measured */
    }
    assert_int_equal(ub_policy_run(UB_POLICY_BEST, &refit, &second), 0);
    double t_first = ub_evaluate_const(&truth, &first, NULL), t_second = ub_evaluate_const(&truth, &second, NULL);
    printf("plan from the calls: %u blocks, %.3f ms on the network; after the re-fit: %u blocks, %.3f ms\n",
           first.n_blocks, 1e3 * t_first, second.n_blocks, 1e3 * t_second);
    assert_true(second.n_blocks != first.n_blocks);
    assert_true(t_second < t_first);
    ub_plan_free(&first);
    ub_plan_free(&second);
}

static ub_call calls_of[4];

static ub_profile calls_profile(const uint64_t *bytes, int n, uint64_t staging_max)
{
    for (int k = 0; k < n; k++)
        calls_of[k] = (ub_call){.bytes = bytes[k], .dtype = UB_DTYPE_FLOAT32, .merge = true};
    return (ub_profile){.n_calls = n, .calls = calls_of, .staging_max = staging_max};
}

static void test_calibration_sizes(void **state)
{
    (void)state;
    /* Calls of 16, 25 and 25 MiB: the probes cover 64 KiB up to the whole 66 MiB, skipping
     * the sizes the calls show. */
    const uint64_t b[] = {16u << 20, 25u << 20, 25u << 20};
    ub_profile p = calls_profile(b, 3, 0);
    uint64_t out[16];
    int n = ub_calibration_sizes(&p, out, 16);
    assert_int_equal(n, 5);
    const uint64_t want[] = {65536, 262144, 1048576, 4194304, 67108864};
    assert_memory_equal(out, want, sizeof want);
    /* At most max: the step grows. */
    n = ub_calibration_sizes(&p, out, 3);
    assert_true(n >= 1 && n <= 3);
    assert_int_equal(out[0], 65536);
    /* staging_max caps the largest block. */
    p = calls_profile(b, 3, 16u << 20);
    n = ub_calibration_sizes(&p, out, 16);
    for (int i = 0; i < n; i++)
        assert_true(out[i] <= (uint64_t)(UB_FIT_KNOT_RATIO * (25u << 20)));
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_profile_json(void **state)
{
    (void)state;
    char path[] = "/tmp/test_cost_model_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    char err[512];
    ub_profile p;
    /* Round trip. */
    write_text(path, "{\"usbyte_profile\": 1, \"backward_end\": 0.01, \"calls\": [{\"bytes\": 4096, \"ready\": 0}],"
                     " \"net\": {\"alpha\": 1e-5, \"beta\": 1e-10, \"segments\": [{\"from\": 0, \"alpha\": 2e-5,"
                     " \"beta\": 0}, {\"from\": 65536, \"alpha\": 1.5e-5, \"beta\": 1.25e-10}]}}");
    assert_int_equal(ub_profile_load(path, &p, err, sizeof err), 0);
    assert_int_equal(p.curve.n, 2);
    near(ub_link_cost(&p, 100), 2e-5, 1e-15);
    near(ub_link_cost(&p, 131072), 1.5e-5 + 1.25e-10 * 131072, 1e-15);
    assert_int_equal(ub_profile_save(path, &p, err, sizeof err), 0);
    ub_profile q;
    assert_int_equal(ub_profile_load(path, &q, err, sizeof err), 0);
    assert_memory_equal(&p.curve, &q.curve, sizeof p.curve);
    ub_profile_free(&q);
    /* A profile with alpha and beta only has no curve (the line). */
    write_text(path, "{\"usbyte_profile\": 1, \"backward_end\": 0.01, \"calls\": [{\"bytes\": 4096, \"ready\": 0}],"
                     " \"net\": {\"alpha\": 1e-5, \"beta\": 1e-10}}");
    assert_int_equal(ub_profile_load(path, &q, err, sizeof err), 0);
    assert_int_equal(q.curve.n, 0);
    near(ub_link_cost(&q, 1000), 1e-5 + 1e-7, 1e-15);
    ub_profile_free(&q);
    ub_profile_free(&p);
    /* Errors name the JSON path. */
    static const struct {
        const char *segments, *want;
    } bad[] = {
        {"[]", "net.segments: must be an array of 1 to"},
        {"[{\"from\": 0, \"alpha\": 1}]", "net.segments[0].beta: missing"},
        {"[{\"from\": 0, \"alpha\": 1, \"beta\": \"x\"}]", "net.segments[0].beta: must be a number"},
        {"[{\"from\": 5, \"alpha\": 1, \"beta\": 0}]", "net.segments[0].from is 5"},
        {"[{\"from\": 0, \"alpha\": 1, \"beta\": 0}, {\"from\": 10, \"alpha\": 0, \"beta\": 0.01}]",
         "net.segments[1] costs"},
        {"[{\"from\": 0, \"alpha\": 1, \"beta\": 0}, {\"from\": 0, \"alpha\": 1, \"beta\": 0}]",
         "net.segments[1].from 0 is not above"},
        {"[7]", "net.segments[0]: must be an object"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[1024];
        snprintf(text, sizeof text,
                 "{\"usbyte_profile\": 1, \"backward_end\": 0.01, \"calls\": [{\"bytes\": 4096, \"ready\": 0}],"
                 " \"net\": {\"alpha\": 1e-5, \"beta\": 1e-10, \"segments\": %s}}",
                 bad[i].segments);
        write_text(path, text);
        assert_int_equal(ub_profile_load(path, &q, err, sizeof err), -1);
        if (!strstr(err, bad[i].want) || !strstr(err, path))
            fail_msg("case %zu: error \"%s\" does not say \"%s\" with the file", i, err, bad[i].want);
    }
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_curve_values),
        cmocka_unit_test(test_curve_check),
        cmocka_unit_test(test_lower_lines),
        cmocka_unit_test(test_bound_vs_oracle_on_curves),
        cmocka_unit_test(test_fit_knots),
        cmocka_unit_test(test_fit_cost_model),
        cmocka_unit_test(test_refit_changes_plan),
        cmocka_unit_test(test_calibration_sizes),
        cmocka_unit_test(test_profile_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
