/* The runtime's side of the report (profiler/report.c, profiler/agree.c): a signature mismatch
 * says whether the call sequences or the settings differ and names every setting with its
 * values; reasons are kept whole however long; the report carries the job's identity, the run's
 * details, refused settings and this rank's own measurements. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "usbyte/config.h"
#include "usbyte/record.h"
#include "usbyte/report.h"

/* The header as the max-combination of two ranks' headers leaves it. */
static void combine(const ub_agree_settings *a, int calls_a, const ub_agree_settings *b, int calls_b,
                    double out[UB_AGREE_HEADER_LEN])
{
    double x[UB_AGREE_HEADER_LEN], y[UB_AGREE_HEADER_LEN];
    ub_agree_header_encode(calls_a, 7, 0x1234, a, x);
    ub_agree_header_encode(calls_b, 7, 0x1234, b, y);
    for (int i = 0; i < UB_AGREE_HEADER_LEN; i++)
        out[i] = fmax(x[i], y[i]);
}

static void test_mismatch_names_what_differs(void **state)
{
    (void)state;
    ub_config cfg;
    ub_config_defaults(&cfg);
    ub_agree_settings a = {.policy = cfg.policy, .completion = cfg.completion,
                           .staging_mb = cfg.staging_mb, .align = cfg.align, .min_gain_pct = cfg.min_gain_pct};
    ub_agree_settings b = a;
    b.policy = ub_policy_parse("mgwfbp");
    b.align = 256;
    double h[UB_AGREE_HEADER_LEN];
    char text[1024];
    combine(&a, 5, &b, 5, h);
    assert_false(ub_agree_header_unanimous(h));
    size_t n = ub_agree_mismatch_text(h, text, sizeof text);
    assert_int_equal(n, strlen(text));
    assert_string_equal(text, "signature mismatch: the ranks run with different settings: USBYTE_POLICY (mgwfbp on some "
                              "ranks, best on others), USBYTE_ALIGN (256 on some ranks, 512 on others): set the same "
                              "values on every rank");
    /* The call sequence alone. */
    combine(&a, 5, &a, 6, h);
    ub_agree_mismatch_text(h, text, sizeof text);
    assert_string_equal(text, "signature mismatch: the ranks saw different call sequences (5 to 6 allreduces per "
                              "iteration)");
    /* Both, and a buffer too small: the length it needs, and a terminated prefix. */
    combine(&a, 5, &b, 6, h);
    char small[40];
    size_t need = ub_agree_mismatch_text(h, small, sizeof small);
    assert_true(need >= sizeof small);
    assert_int_equal(strlen(small), sizeof small - 1);
    char *whole = malloc(need + 1);
    assert_int_equal(ub_agree_mismatch_text(h, whole, need + 1), need);
    assert_non_null(strstr(whole, "different call sequences"));
    assert_non_null(strstr(whole, "; the ranks run with different settings: USBYTE_POLICY"));
    free(whole);
}

static void test_report_json(void **state)
{
    (void)state;
    ub_config cfg;
    ub_config_defaults(&cfg);
    cfg.source[UB_CFG_align] = UB_SRC_FALLBACK;
    ub_comm_report r;
    ub_comm_report_init(&r);
    r.index = 0;
    r.id = 0x0123456789abcdefull;
    r.nranks = 2;
    /* A reason longer than any fixed buffer the runtime had, kept whole. */
    char *long_reason = malloc(5001);
    memset(long_reason, 'x', 5000);
    long_reason[5000] = '\0';
    ub_comm_report_add_reason(&r, "%s", long_reason);
    ub_comm_report_add_reason(&r, "second %d", 2);
    double ready[2] = {0.0, 0.25};
    ub_rank_local l = {.iteration = ub_spread_of((double[]){0.1, NAN, 0.3}, 3), .n_calls = 2,
                       .ready = malloc(sizeof ready), .origin = 1.7e9, .rec_iterations = 1,
                       .rec = malloc(6 * sizeof(double))};
    memcpy(l.ready, ready, sizeof ready);
    for (int i = 0; i < 6; i++)
        l.rec[i] = 0.1 * i;
    ub_comm_report_set_local(&r, &l);
    ub_versions v = {"0.4.0", 22809, 13000, 13000, "/lib/libnccl.so.2", NULL};
    ub_run_info run = {.started = 1.7e9, .host = "node-7", .pid = 42, .command = "python train.py", .gpu = "H100",
                       .device = 3, .n_ignored = 1, .ignored_name = {"USBYTE_ALIGN"}, .ignored_value = {"500"}};
    const ub_comm_report *list[] = {&r};
    json_t *doc = ub_report_json(1, 2, &cfg, &v, &run, list, 1);
    json_t *c = json_array_get(json_object_get(doc, "comms"), 0);
    assert_string_equal(json_string_value(json_object_get(c, "id")), "0123456789abcdef");
    assert_string_equal(json_string_value(json_object_get(json_object_get(doc, "job"), "id")), "0123456789abcdef");
    json_t *reasons = json_object_get(json_object_get(c, "verdict"), "reasons");
    assert_int_equal(json_array_size(reasons), 2);
    assert_int_equal(strlen(json_string_value(json_array_get(reasons, 0))), 5000);
    assert_string_equal(json_string_value(json_array_get(reasons, 1)), "second 2");
    json_t *runj = json_object_get(doc, "run");
    assert_string_equal(json_string_value(json_object_get(runj, "host")), "node-7");
    assert_string_equal(json_string_value(json_object_get(runj, "started")), "2023-11-14T22:13:20Z");
    assert_string_equal(json_string_value(json_object_get(runj, "gpu")), "H100");
    json_t *cfgj = json_object_get(doc, "config");
    assert_string_equal(json_string_value(json_object_get(json_object_get(cfgj, "ignored"), "USBYTE_ALIGN")), "500");
    assert_string_equal(json_string_value(json_object_get(json_object_get(cfgj, "sources"), "USBYTE_ALIGN")),
                        "bad value ignored");
    assert_true(json_is_null(json_object_get(json_object_get(doc, "versions"), "cudart_library")));
    json_t *loc = json_object_get(c, "local");
    json_t *it = json_object_get(loc, "iteration");
    assert_int_equal(json_integer_value(json_object_get(it, "n")), 2); /* the NAN skipped */
    assert_true(fabs(json_real_value(json_object_get(it, "mean")) - 0.2) < 1e-15);
    assert_true(fabs(json_real_value(json_object_get(it, "stdev")) - sqrt(0.02)) < 1e-15);
    assert_true(json_real_value(json_array_get(json_object_get(loc, "ready"), 1)) == 0.25);
    json_t *wu = json_object_get(loc, "warmup");
    assert_true(json_real_value(json_object_get(wu, "origin")) == 1.7e9);
    assert_true(json_real_value(json_array_get(json_array_get(json_array_get(json_object_get(wu, "iterations"), 0), 1),
                                               2)) == 0.5);
    json_decref(doc);
    ub_comm_report_clear_reasons(&r);
    assert_int_equal(r.n_reasons, 0);
    ub_comm_report_free(&r);
    free(long_reason);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mismatch_names_what_differs),
        cmocka_unit_test(test_report_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
