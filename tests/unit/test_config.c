/* The runtime's configuration: every variable parsed, each bad value warned about once (naming
 * variable, value and default) and replaced by its default; the report path pattern. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "usbyte/config.h"
#include "usbyte/policy.h"

typedef struct {
    const char *const *env; /* NAME, VALUE pairs, NULL-terminated */
    int warnings;
    char last[1500];
} fake_env;

static const char *lookup(const char *name, void *ctx)
{
    fake_env *f = ctx;
    for (int i = 0; f->env[i]; i += 2)
        if (strcmp(f->env[i], name) == 0)
            return f->env[i + 1];
    return NULL;
}

static void warn(const char *line, void *ctx)
{
    fake_env *f = ctx;
    f->warnings++;
    snprintf(f->last, sizeof f->last, "%s", line);
}

static void test_defaults(void **state)
{
    (void)state;
    const char *env[] = {NULL};
    fake_env f = {env, 0, ""};
    ub_config c;
    assert_int_equal(ub_config_parse(&c, lookup, warn, &f), 0);
    assert_int_equal(c.mode, UB_MODE_SCHEDULE);
    assert_int_equal(c.policy, UB_POLICY_BEST);
    assert_int_equal(c.completion, UB_COMPLETION_STREAM);
    assert_int_equal(c.staging_mb, 256);
    assert_int_equal(c.align, 512);
    assert_int_equal(c.hang_s, 30);
    assert_int_equal(c.max_deviations, 4);
    assert_int_equal(c.min_gain_pct, 2);
    assert_true(c.verify);
    assert_int_equal(c.verify_every, 200);
    assert_int_equal(c.warmup, 5);
    assert_string_equal(c.report, "usbyte-report-%r.json");
    assert_int_equal(c.log, UB_LOG_WARN);
    assert_string_equal(c.log_file, "");
    assert_string_equal(c.nccl_lib, "");
    assert_true(c.cupti);
    assert_false(c.dump_config);
    for (int i = 0; i < UB_CFG_COUNT; i++)
        assert_int_equal(c.source[i], UB_SRC_DEFAULT);
}

static void test_every_variable_from_env(void **state)
{
    (void)state;
    const char *env[] = {"USBYTE_MODE", "off", "USBYTE_POLICY", "mgwfbp-dp", "USBYTE_WARMUP", "12",
                         "USBYTE_REPORT", "/tmp/r-%h-%p-%r.json", "USBYTE_LOG", "debug", "USBYTE_LOG_FILE",
                         "/tmp/log", "USBYTE_NCCL_LIB", "/opt/nccl/libnccl.so.2", "USBYTE_CUPTI", "no",
                         "USBYTE_DUMP_CONFIG", "1", "USBYTE_COMPLETION", "call", "USBYTE_STAGING_MB", "0",
                         "USBYTE_ALIGN", "4096", "USBYTE_HANG_S", "7", "USBYTE_MAX_DEVIATIONS", "0", "USBYTE_MIN_GAIN_PCT", "-100",
                         "USBYTE_VERIFY", "off", "USBYTE_VERIFY_EVERY", "50", "USBYTE_CALIBRATE", "0", NULL};
    fake_env f = {env, 0, ""};
    ub_config c;
    assert_int_equal(ub_config_parse(&c, lookup, warn, &f), 0);
    assert_int_equal(f.warnings, 0);
    assert_int_equal(c.mode, UB_MODE_OFF);
    assert_int_equal(c.policy, UB_POLICY_MGWFBP_DP);
    assert_int_equal(c.warmup, 12);
    assert_string_equal(c.report, "/tmp/r-%h-%p-%r.json");
    assert_int_equal(c.log, UB_LOG_DEBUG);
    assert_string_equal(c.log_file, "/tmp/log");
    assert_string_equal(c.nccl_lib, "/opt/nccl/libnccl.so.2");
    assert_false(c.cupti);
    assert_true(c.dump_config);
    assert_int_equal(c.completion, UB_COMPLETION_CALL);
    assert_int_equal(c.staging_mb, 0);
    assert_int_equal(c.align, 4096);
    assert_int_equal(c.hang_s, 7);
    assert_int_equal(c.max_deviations, 0);
    assert_int_equal(c.min_gain_pct, -100);
    assert_false(c.verify);
    assert_int_equal(c.verify_every, 50);
    assert_false(c.calibrate);
    for (int i = 0; i < UB_CFG_COUNT; i++)
        assert_int_equal(c.source[i], UB_SRC_ENV);
    char line[1200];
    ub_config_describe(&c, UB_CFG_warmup, line, sizeof line);
    assert_string_equal(line, "USBYTE_WARMUP=12 (env)");
}

/* Each bad value alone: exactly one warning naming variable, value and the value used: the
 * default, or the safe side where the default is not (USBYTE_MODE: observe, never schedule). */
static void test_bad_values_warn_once_and_fall_back(void **state)
{
    (void)state;
    static const char *const bad[][3] = {
        {"USBYTE_MODE", "sideways", "observe"}, {"USBYTE_MODE", "", "observe"},
        {"USBYTE_COMPLETION", "per-call", "stream"}, {"USBYTE_STAGING_MB", "-1", "256"},
        {"USBYTE_STAGING_MB", "65537", "256"},  {"USBYTE_ALIGN", "500", "512"},
        {"USBYTE_ALIGN", "0", "512"},           {"USBYTE_ALIGN", "2097152", "512"},
        {"USBYTE_HANG_S", "0", "30"},           {"USBYTE_HANG_S", "1.5", "30"},
        {"USBYTE_MAX_DEVIATIONS", "many", "4"}, {"USBYTE_MAX_DEVIATIONS", " 3", "4"},
        {"USBYTE_MIN_GAIN_PCT", "100001", "2"},   {"USBYTE_MIN_GAIN_PCT", "2%", "2"}, {"USBYTE_MIN_GAIN_PCT", "-101", "2"},
        {"USBYTE_LOG_FILE", "/tmp/log-%q", ""},
        {"USBYTE_POLICY", "fastest", "best"},   {"USBYTE_WARMUP", "three", "5"},
        {"USBYTE_WARMUP", "0", "5"},            {"USBYTE_WARMUP", "-2", "5"},
        {"USBYTE_WARMUP", "7x", "5"},           {"USBYTE_WARMUP", "1001", "5"},
        {"USBYTE_WARMUP", "99999999999999999999", "5"}, {"USBYTE_REPORT", "", "usbyte-report-%r.json"},
        {"USBYTE_REPORT", "r-%q.json", "usbyte-report-%r.json"}, {"USBYTE_LOG", "chatty", "warn"},
        {"USBYTE_CUPTI", "maybe", "1"},         {"USBYTE_DUMP_CONFIG", "2", "0"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *env[] = {bad[i][0], bad[i][1], NULL};
        fake_env f = {env, 0, ""};
        ub_config c, d;
        ub_config_defaults(&d);
        assert_int_equal(ub_config_parse(&c, lookup, warn, &f), 1);
        assert_int_equal(f.warnings, 1);
        assert_non_null(strstr(f.last, bad[i][0]));
        char quoted[64];
        snprintf(quoted, sizeof quoted, "\"%s\"", bad[i][1]);
        assert_non_null(strstr(f.last, quoted));
        snprintf(quoted, sizeof quoted, "using the %s \"%s\"", strcmp(bad[i][0], "USBYTE_MODE") ? "default" : "safe value",
                 bad[i][2]);
        assert_non_null(strstr(f.last, quoted));
        /* the bad variable has the value used, every other one its default */
        char a[600], b[600], prefix[64];
        snprintf(prefix, sizeof prefix, "%s=", bad[i][0]);
        for (int id = 0; id < UB_CFG_COUNT; id++) {
            char line[1200];
            ub_config_describe(&c, (ub_config_id)id, line, sizeof line);
            const char *want = strncmp(line, prefix, strlen(prefix)) == 0 ? bad[i][2]
                                                                          : ub_config_value_text(&d, (ub_config_id)id, b, sizeof b);
            assert_string_equal(ub_config_value_text(&c, (ub_config_id)id, a, sizeof a), want);
        }
    }
}

/* A bad report name keeps its directory (the default name there); the policy warning lists every
 * policy the planner knows. */
static void test_bad_report_keeps_directory_and_policy_lists_all(void **state)
{
    (void)state;
    const char *env[] = {"USBYTE_REPORT", "/tmp/out/r-%q.json", NULL};
    fake_env f = {env, 0, ""};
    ub_config c;
    assert_int_equal(ub_config_parse(&c, lookup, warn, &f), 1);
    assert_string_equal(c.report, "/tmp/out/usbyte-report-%r.json");
    assert_non_null(strstr(f.last, "using the default name in that directory \"/tmp/out/usbyte-report-%r.json\""));
    const char *env2[] = {"USBYTE_REPORT", "/tmp/%q/r.json", NULL};
    fake_env f2 = {env2, 0, ""};
    assert_int_equal(ub_config_parse(&c, lookup, warn, &f2), 1);
    assert_string_equal(c.report, "usbyte-report-%r.json");
    const char *env3[] = {"USBYTE_POLICY", "fastest", NULL};
    fake_env f3 = {env3, 0, ""};
    assert_int_equal(ub_config_parse(&c, lookup, warn, &f3), 1);
    for (int id = 0; id < UB_POLICY_COUNT; id++) {
        char word[64];
        snprintf(word, sizeof word, " %s", ub_policy_name((ub_policy_id)id));
        assert_non_null(strstr(f3.last, word));
    }
}

static void test_several_bad_values_each_warn(void **state)
{
    (void)state;
    const char *env[] = {"USBYTE_MODE", "x", "USBYTE_WARMUP", "y", "USBYTE_LOG", "z", "USBYTE_POLICY", "best", NULL};
    fake_env f = {env, 0, ""};
    ub_config c;
    assert_int_equal(ub_config_parse(&c, lookup, warn, &f), 3);
    assert_int_equal(f.warnings, 3);
    assert_int_equal(c.source[UB_CFG_mode], UB_SRC_FALLBACK);
    assert_int_equal(c.source[UB_CFG_policy], UB_SRC_ENV);
}

static void test_warning_is_one_line(void **state)
{
    (void)state;
    const char *env[] = {"USBYTE_LOG", "a\nb", NULL};
    fake_env f = {env, 0, ""};
    ub_config c;
    ub_config_parse(&c, lookup, warn, &f);
    assert_null(strchr(f.last, '\n'));
}

static void test_report_path_expansion(void **state)
{
    (void)state;
    char out[64];
    assert_int_equal(ub_expand_report_path("r-%r-%p-%h.json", 3, 1234, "node7", out, sizeof out), 0);
    assert_string_equal(out, "r-3-1234-node7.json");
    assert_int_equal(ub_expand_report_path("100%%-%r", -1, 1, "h", out, sizeof out), 0);
    assert_string_equal(out, "100%-unknown");
    assert_int_equal(ub_expand_report_path("plain", 0, 1, "h", out, sizeof out), 0);
    assert_string_equal(out, "plain");
    assert_int_equal(ub_expand_report_path("bad-%x", 0, 1, "h", out, sizeof out), -1);
    assert_non_null(strstr(out, "%x"));
    assert_int_equal(ub_expand_report_path("trailing-%", 0, 1, "h", out, sizeof out), -1);
    char tiny[8];
    assert_int_equal(ub_expand_report_path("abcdefghijk", 0, 1, "h", tiny, sizeof tiny), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_every_variable_from_env),
        cmocka_unit_test(test_bad_values_warn_once_and_fall_back),
        cmocka_unit_test(test_several_bad_values_each_warn),
        cmocka_unit_test(test_bad_report_keeps_directory_and_policy_lists_all),
        cmocka_unit_test(test_warning_is_one_line),
        cmocka_unit_test(test_report_path_expansion),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
