/* usbyte-report's view of a job (tools/report_job.c): reports are grouped by the identities their
 * ranks share (a stale file of another job never joins), the headline's outcome follows the
 * state and the mode, and the runtime's reasons get their fixes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../../tools/report.h" /* tools/ is not on the include path of the tests */

static void load(const char *text, const char *path, rp_report *r)
{
    char err[512] = "";
    json_error_t je;
    json_t *root = json_loads(text, 0, &je);
    if (!root)
        fail_msg("test JSON does not parse: %s", je.text);
    if (rp_from_json(root, path, r, err, sizeof err) != 0)
        fail_msg("%s", err);
}

#define COMM_ID(INDEX, ID)                                                                                          \
    "{\"index\": " #INDEX ", \"id\": \"" ID "\", \"state\": \"detect\", \"verdict\": {\"schedulable\": false}}"
#define REPORT(RANK, JOB, COMMS)                                                                                    \
    "{\"usbyte_report\": 1, \"rank\": " #RANK ", \"world_size\": 2, " JOB "\"comms\": [" COMMS "]}"

static void test_group_by_identity(void **state)
{
    (void)state;
    rp_report r[7];
    load(REPORT(0, "\"job\": {\"id\": \"aaaa\"}, ", COMM_ID(0, "aaaa")), "a0", &r[0]);
    load(REPORT(0, "", COMM_ID(0, "bbbb")), "b0", &r[1]);
    load(REPORT(1, "", COMM_ID(0, "aaaa")), "a1", &r[2]);
    load(REPORT(1, "", COMM_ID(0, "bbbb")), "b1", &r[3]);
    /* No identity at all (an older runtime): one job of their own. */
    load(REPORT(0, "", "{\"state\": \"detect\", \"verdict\": {\"schedulable\": false}}"), "old0", &r[4]);
    load(REPORT(1, "", "{\"state\": \"detect\", \"verdict\": {\"schedulable\": false}}"), "old1", &r[5]);
    /* A rank whose first communicator is another one, sharing a second with job b: job b. */
    load(REPORT(0, "", COMM_ID(0, "cccc") "," COMM_ID(1, "bbbb")), "b-sub", &r[6]);
    int group[7];
    assert_int_equal(rp_group_jobs(r, 7, group), 3);
    assert_int_equal(group[0], 0);
    assert_int_equal(group[2], 0);
    assert_int_equal(group[1], 1);
    assert_int_equal(group[3], 1);
    assert_int_equal(group[6], 1);
    assert_int_equal(group[4], 2);
    assert_int_equal(group[5], 2);
    for (int i = 0; i < 7; i++)
        rp_free(&r[i]);
}

#define PLANNED(SCHEDULABLE, REASONS, POLICIES)                                                                     \
    "{\"index\": 0, \"nranks\": 2, \"state\": \"planned\", \"measured_iteration\": 0.05,"                          \
    " \"profile\": {\"usbyte_profile\": 1, \"net\": {\"alpha\": 0.001, \"beta\": 1e-9}, \"backward_end\": 0.01,"   \
    "  \"forward\": [0.02], \"calls\": [{\"bytes\": 4000, \"ready\": 0}]},"                                       \
    " \"verdict\": {\"schedulable\": " SCHEDULABLE ", \"reasons\": [" REASONS "]}, \"policies\": " POLICIES ","     \
    " \"plan\": {\"usbyte_plan\": 1, \"policy\": \"wfbp\", \"iteration\": 0.031004,"                              \
    "  \"blocks\": [{\"segments\": [[0, 0, 4000]], \"start\": 0, \"end\": 0.001004}]}}"
#define MODE(M) "\"config\": {\"USBYTE_MODE\": \"" M "\", \"USBYTE_MIN_GAIN_PCT\": \"2\"}, "
#define WFBP_ONLY "[{\"policy\": \"wfbp\", \"iteration\": 0.031004}]"

static rp_report cur; /* the report of the latest outcome(): `why` may point into it */

static rp_outcome outcome(const char *text, const char **why, int *bad)
{
    rp_free(&cur);
    load(text, "o.json", &cur);
    return rp_comm_outcome(&cur, &cur.comms[0], why, bad);
}

static void test_outcome_follows_state(void **state)
{
    (void)state;
    const char *why;
    int bad;
    /* Observe mode: Observed; a plan that gains less than USBYTE_MIN_GAIN_PCT is said to stay. */
    assert_int_equal(outcome(REPORT(0, MODE("observe"), PLANNED("true", "", WFBP_ONLY)), &why, &bad), RP_OBSERVED);
    assert_false(bad);
    assert_non_null(strstr(why, "USBYTE_MIN_GAIN_PCT"));
    assert_int_equal(outcome(REPORT(0, MODE("observe"), PLANNED("false", "\"CUPTI was not available\"", WFBP_ONLY)),
                             &why, &bad),
                     RP_OBSERVED);
    assert_true(bad);
    /* Schedule mode, pass-through below the least gain: not scheduled, yellow, the state's reason. */
    const char *min_gain = "{\"index\": 0, \"state\": \"pass-through\", \"state_reason\": \"the plan is predicted 1.00x "
                           "over wfbp, below USBYTE_MIN_GAIN_PCT=2%: not re-scheduled\", \"verdict\": "
                           "{\"schedulable\": true}}";
    char text[1024];
    snprintf(text, sizeof text, REPORT(0, MODE("schedule"), "%s"), min_gain);
    assert_int_equal(outcome(text, &why, &bad), RP_NOT_SCHEDULED);
    assert_false(bad);
    assert_non_null(strstr(why, "USBYTE_MIN_GAIN_PCT=2%"));
    /* Schedule mode, not schedulable: red, the verdict's reasons below. */
    assert_int_equal(outcome(REPORT(0, MODE("schedule"), "{\"index\": 0, \"state\": \"pass-through\", \"state_reason\":"
                                                          " \"not schedulable (the verdict says why)\", \"verdict\": "
                                                          "{\"schedulable\": false, \"reasons\": [\"x\"]}}"),
                             &why, &bad),
                     RP_NOT_SCHEDULED);
    assert_true(bad);
    assert_string_equal(why, "not schedulable (below)");
    /* Still measuring. */
    assert_int_equal(outcome(REPORT(0, MODE("schedule"), "{\"index\": 0, \"state\": \"profile\", \"verdict\": "
                                                          "{\"schedulable\": false}}"),
                             &why, &bad),
                     RP_NOT_SCHEDULED);
    assert_non_null(strstr(why, "still measuring"));
    /* A plan that ran. */
    assert_int_equal(outcome(REPORT(0, MODE("schedule"),
                                    "{\"index\": 0, \"state\": \"schedule\", \"measured_iteration\": 0.05, \"profile\": "
                                    "{\"usbyte_profile\": 1, \"net\": {\"alpha\": 0.001, \"beta\": 1e-9}, \"backward_end\": 0, \"calls\": "
                                    "[{\"bytes\": 4000, \"ready\": 0}]}, \"verdict\": {\"schedulable\": true}, \"plan\": "
                                    "{\"usbyte_plan\": 1, \"policy\": \"wfbp\", \"blocks\": [{\"segments\": [[0, 0, "
                                    "4000]]}]}, \"schedule\": {\"iterations\": 5, \"predicted_iteration\": 0.04}}"),
                             &why, &bad),
                     RP_SCHEDULED);
    rp_free(&cur);
}

static void test_hints_for_the_runtime_reasons(void **state)
{
    (void)state;
    /* profiler/agree.c's mismatch texts: settings, or the call sequence. */
    const char *h = rp_hint("signature mismatch: the ranks run with different settings: USBYTE_POLICY (mgwfbp on some "
                            "ranks, best on others): set the same values on every rank");
    assert_non_null(h);
    assert_non_null(strstr(h, "same USBYTE_* values"));
    h = rp_hint("signature mismatch: the ranks saw different call sequences (5 to 6 allreduces per iteration)");
    assert_non_null(strstr(h, "same allreduces in the same order"));
    assert_non_null(strstr(rp_hint("the plan is predicted 1.01x over wfbp, below USBYTE_MIN_GAIN_PCT=2%"),
                           "USBYTE_MIN_GAIN_PCT"));
    /* Every policy the planner has is described. */
    for (int id = 0; id < UB_POLICY_COUNT; id++)
        if (!rp_policy_about(ub_policy_name((ub_policy_id)id)))
            fail_msg("policy %s has no description", ub_policy_name((ub_policy_id)id));
    assert_true(rp_repeats("not schedulable: stream-ordered work on the NC", "stream-ordered work on the NCCL stream"));
    assert_false(rp_repeats("not schedulable (the verdict says why)", "stream-ordered work"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_group_by_identity),
        cmocka_unit_test(test_outcome_follows_state),
        cmocka_unit_test(test_hints_for_the_runtime_reasons),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
