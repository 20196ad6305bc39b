/* The agreement encoding: headers combined with max reveal any difference between ranks; the
 * data vectors decode to max ready/need, min and mean comm on every rank; the recorder's
 * per-rank summary. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>
#include <stdlib.h>

/* cmocka has no double comparison with a tolerance in this version. */
#define assert_double_equal(a, b, eps) assert_true(fabs((double)(a) - (double)(b)) <= (eps))

#include "usbyte/record.h"

/* What an allreduce(max) / (sum) of n doubles over `ranks` vectors computes. */
static void combine(double *const *v, int ranks, int n, bool sum, double *out)
{
    for (int i = 0; i < n; i++) {
        out[i] = v[0][i];
        for (int r = 1; r < ranks; r++)
            out[i] = sum ? out[i] + v[r][i] : fmax(out[i], v[r][i]);
    }
}

static void test_header_unanimous_only_when_equal(void **state)
{
    (void)state;
    double a[UB_AGREE_HEADER_LEN], b[UB_AGREE_HEADER_LEN], out[UB_AGREE_HEADER_LEN];
    double *v[2] = {a, b};
    ub_agree_header_encode(5, 6, 0x0123456789abcdefull, a);
    ub_agree_header_encode(5, 6, 0x0123456789abcdefull, b);
    combine(v, 2, UB_AGREE_HEADER_LEN, false, out);
    assert_true(ub_agree_header_unanimous(out));
    /* any one field different, in either direction, on either rank */
    struct { int n; uint32_t p; uint64_t h; } other[] = {
        {4, 6, 0x0123456789abcdefull}, {6, 6, 0x0123456789abcdefull}, {5, 7, 0x0123456789abcdefull},
        {5, 6, 0x0123456789abcdeeull}, {5, 6, 0x8123456789abcdefull}, {0, 6, 0x0123456789abcdefull},
    };
    for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
        ub_agree_header_encode(other[i].n, other[i].p, other[i].h, b);
        combine(v, 2, UB_AGREE_HEADER_LEN, false, out);
        assert_false(ub_agree_header_unanimous(out));
        double *w[2] = {b, a};
        combine(w, 2, UB_AGREE_HEADER_LEN, false, out);
        assert_false(ub_agree_header_unanimous(out));
    }
}

static void test_data_roundtrip_two_ranks(void **state)
{
    (void)state;
    ub_summary_call c0[2] = {{.ready = 0, .need = 0.030, .done = 0.002, .comm_mean = 0.001, .comm_min = 0.0009},
                             {.ready = 0.010, .need = -1, .done = 0.012, .comm_mean = 0.002, .comm_min = 0.0019, .barrier = true}};
    ub_summary_call c1[2] = {{.ready = 0, .need = 0.031, .done = 0.0021, .comm_mean = 0.003, .comm_min = 0.0008, .fallback = true},
                             {.ready = 0.011, .need = -1, .done = 0.0119, .comm_mean = 0.004, .comm_min = 0.0021, .split = true}};
    ub_summary s0 = {2, c0, 0.050, 3}, s1 = {2, c1, 0.052, 3};
    ub_agree_flags f0 = {0, 0, 0, 1}, f1 = {3, 1, 0, 1};
    int nm = ub_agree_max_len(2), ns = ub_agree_sum_len(2);
    double m0[64], m1[64], q0[8], q1[8], m[64], q[8];
    ub_agree_encode(&s0, &f0, m0, q0);
    ub_agree_encode(&s1, &f1, m1, q1);
    double *vm[2] = {m0, m1}, *vq[2] = {q0, q1};
    combine(vm, 2, nm, false, m);
    combine(vq, 2, ns, true, q);
    ub_agreed a;
    assert_int_equal(ub_agree_decode(2, m, q, &a), 0);
    assert_int_equal(a.ranks, 2);
    assert_double_equal(a.calls[0].need, 0.031, 0);
    assert_double_equal(a.calls[0].done, 0.0021, 0);
    assert_double_equal(a.calls[0].comm_min, 0.0008, 0);
    assert_double_equal(a.calls[0].comm_mean, 0.002, 1e-15);
    assert_true(a.calls[0].fallback);
    assert_false(a.calls[0].barrier);
    assert_double_equal(a.calls[1].ready, 0.011, 0);
    assert_double_equal(a.calls[1].need, -1, 0);
    assert_double_equal(a.calls[1].comm_min, 0.0019, 0);
    assert_true(a.calls[1].barrier);
    assert_true(a.calls[1].split);
    assert_double_equal(a.iteration, 0.052, 0);
    assert_double_equal(a.flags.stream_ordered, 3, 0);
    assert_double_equal(a.flags.cupti_missing, 1, 0);
    assert_double_equal(a.flags.other_calls, 1, 0);
    ub_agreed_free(&a);
}

static void test_summary_averages_relative_to_first_ready(void **state)
{
    (void)state;
    ub_record r;
    assert_int_equal(ub_record_init(&r, 2, 3), 0);
    r.n_calls = 2;
    /* iteration 0 starts at 1.0, iteration 1 at 1.1 */
    double base[2] = {1.0, 1.1};
    for (int it = 0; it < 2; it++) {
        ub_rec_call *a = ub_record_at(&r, it, 0), *b = ub_record_at(&r, it, 1);
        *a = (ub_rec_call){.ready = base[it], .start = base[it] + 0.001, .end = base[it] + 0.003, .need = base[it] + 0.05,
                           .upstream = true, .needed = true};
        *b = (ub_rec_call){.ready = base[it] + 0.010 + 0.002 * it, .start = base[it] + 0.011, .end = base[it] + 0.012 + 0.001 * it,
                           .need = NAN, .upstream = it == 0, .barrier = true};
    }
    ub_summary s;
    assert_int_equal(ub_record_summarize(&r, &s), 0);
    assert_int_equal(s.iterations_used, 2);
    assert_double_equal(s.iteration, 0.1, 1e-12);
    assert_double_equal(s.calls[0].ready, 0, 0);
    assert_double_equal(s.calls[0].need, 0.05, 1e-12);
    assert_double_equal(s.calls[0].comm_mean, 0.002, 1e-12);
    assert_double_equal(s.calls[1].ready, 0.011, 1e-12);
    assert_double_equal(s.calls[1].need, -1, 0);
    assert_double_equal(s.calls[1].comm_min, 0.001, 1e-12);
    assert_double_equal(s.calls[1].comm_mean, 0.0015, 1e-12);
    assert_true(s.calls[1].fallback);
    assert_false(s.calls[1].barrier); /* the last call: a wait on it is the ordinary end */
    ub_summary_free(&s);
    ub_record_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header_unanimous_only_when_equal),
        cmocka_unit_test(test_data_roundtrip_two_ranks),
        cmocka_unit_test(test_summary_averages_relative_to_first_ready),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
