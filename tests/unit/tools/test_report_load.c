/* usbyte-report's reader of the runtime's report (tools/report_load.c): a minimal report loads
 * with every field, another version and each class of malformed input give one line naming the
 * file and the place, ranks are compared on exactly what is agreed (plan_seconds is not), a
 * job's reports must be one job, and the hints match the runtime's reasons. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../../tools/report.h" /* tools/ is not on the include path of the tests */

/* One communicator, two calls, a one-block plan: the shape docs/runtime.md gives. */
#define COMM(RANK, PLAN_SECONDS)                                                                                   \
    "{\"index\": 0, \"rank\": " #RANK ", \"nranks\": 2, \"state\": \"planned\", \"calls_per_iteration\": 2,"    \
    " \"nccl_calls_per_iteration\": 2, \"iterations_observed\": 9, \"warmup_iterations\": 5,"                 \
    " \"measured_iteration\": 0.05,"                                                                            \
    " \"profile\": {\"usbyte_profile\": 1, \"net\": {\"alpha\": 0.001, \"beta\": 1e-9}, \"backward_end\": 0.01," \
    "  \"forward\": [0.02], \"calls\": [{\"bytes\": 4000, \"ready\": 0}, {\"bytes\": 8000, \"ready\": 0.01}]},"  \
    " \"fit\": {\"alpha\": 0.001, \"beta\": 1e-9, \"rms\": 1e-6, \"rel_rms\": 0.01, \"max_abs\": 2e-6,"        \
    "  \"samples\": 2, \"distinct_sizes\": 2, \"flags\": []},"                                                 \
    " \"verdict\": {\"schedulable\": true, \"reasons\": []},"                                                   \
    " \"policies\": [{\"policy\": \"wfbp\", \"iteration\": 0.04}, {\"policy\": \"syncea\", \"iteration\": 0.03}]," \
    " \"plan\": {\"usbyte_plan\": 1, \"policy\": \"syncea\", \"iteration\": 0.031012, \"lower_bound\": 0.03,"   \
    "  \"plan_seconds\": " #PLAN_SECONDS ", \"blocks\": [{\"segments\": [[0, 0, 4000], [1, 0, 8000]],"          \
    "  \"start\": 0.01, \"end\": 0.011012}]}}"
#define REPORT(RANK, WORLD, COMMS) \
    "{\"usbyte_report\": 1, \"rank\": " #RANK ", \"world_size\": " #WORLD ", \"comms\": [" COMMS "]}"

static int load_text(const char *text, const char *path, rp_report *r, char *err, size_t len)
{
    json_error_t je;
    json_t *root = json_loads(text, 0, &je);
    if (!root)
        fail_msg("test JSON does not parse: %s (line %d)", je.text, je.line);
    return rp_from_json(root, path, r, err, len);
}

static void test_minimal_report_loads(void **state)
{
    (void)state;
    rp_report r;
    char err[512] = "";
    if (load_text(REPORT(1, 2, COMM(1, 0.5)), "r1.json", &r, err, sizeof err) != 0)
        fail_msg("%s", err);
    assert_int_equal(r.rank, 1);
    assert_int_equal(r.world_size, 2);
    assert_int_equal(r.n_comms, 1);
    const rp_comm *c = &r.comms[0];
    assert_string_equal(c->state, "planned");
    assert_true(c->have_profile && c->have_fit && c->have_plan && c->schedulable);
    assert_int_equal(c->profile.n_calls, 2);
    assert_int_equal(c->n_policies, 2);
    assert_string_equal(c->policies[1].name, "syncea");
    assert_int_equal(c->plan.n_blocks, 1);
    /* Re-evaluated under the profile: 0.01 + alpha + beta * 12000 bytes. */
    assert_true(fabs(c->plan.blocks[0].end - 0.011012) < 1e-12);
    assert_true(fabs(c->plan.lower_bound - 0.03) < 1e-15);
    assert_int_equal(c->optimal, -1);
    assert_false(c->schedule.present);
    rp_free(&r);
}

static void expect_bad(const char *text, const char *want)
{
    rp_report r;
    char err[512] = "";
    assert_int_equal(load_text(text, "bad.json", &r, err, sizeof err), -1);
    if (strcmp(err, want) != 0)
        fail_msg("got  \"%s\"\nwant \"%s\"", err, want);
    rp_free(&r);
}

static void test_bad_reports(void **state)
{
    (void)state;
    expect_bad("{\"usbyte_report\": 2, \"rank\": 0, \"world_size\": 1, \"comms\": []}",
               "bad.json: usbyte_report: version 2 is not supported (this usbyte-report reads version 1)");
    expect_bad("{\"usbyte_report\": \"1\"}", "bad.json: usbyte_report: must be an integer version, got a string");
    expect_bad("{\"rank\": 0}", "bad.json: not a usbyte report (no \"usbyte_report\" key)");
    expect_bad("{\"usbyte_profile\": 1}", "bad.json: a usbyte profile, not a report (replay it with usbyte-sim)");
    expect_bad("[1]", "bad.json: not a usbyte report: the document is an array, not an object");
    expect_bad("{\"usbyte_report\": 1, \"rank\": 0, \"world_size\": 1}", "bad.json: comms: missing");
    expect_bad("{\"usbyte_report\": 1, \"rank\": 2, \"world_size\": 2, \"comms\": []}",
               "bad.json: rank: 2 is not a rank of a job of world_size 2");
    expect_bad(REPORT(0, 1, "{\"state\": 3}"), "bad.json: comms[0].state: must be a string, got 3");
    expect_bad(REPORT(0, 1, "{\"state\": \"detect\", \"verdict\": {\"schedulable\": 1}}"),
               "bad.json: comms[0].verdict.schedulable: must be a boolean, got an integer");
    expect_bad(REPORT(0, 1, "{\"state\": \"detect\", \"verdict\": {\"schedulable\": false}, \"measured_iteration\": -1}"),
               "bad.json: comms[0].measured_iteration: must be a non-negative number, got -1");
    expect_bad(REPORT(0, 1, "{\"state\": \"detect\", \"verdict\": {\"schedulable\": false}, "
                            "\"policies\": [{\"iteration\": 1}]}"),
               "bad.json: comms[0].policies[0].policy: missing");
    expect_bad(REPORT(0, 1, "{\"state\": \"detect\", \"verdict\": {\"schedulable\": false}, "
                            "\"plan\": {\"usbyte_plan\": 1, \"blocks\": []}}"),
               "bad.json: comms[0].plan: a plan without a profile");
    expect_bad(REPORT(0, 1, "{\"state\": \"detect\", \"verdict\": {\"schedulable\": false}},"
                            "{\"state\": \"detect\", \"verdict\": {\"schedulable\": false}, \"index\": 0}"),
               "bad.json: comms[1].index: 0 is also comms[0]'s index");
}

static void test_schedule_object(void **state)
{
    (void)state;
    /* The runtime's schedule-mode object next to a plan; "optimal" on the plan. */
    json_t *root = json_loads(REPORT(0, 2, COMM(0, 0.5)), 0, NULL);
    json_t *c = json_array_get(json_object_get(root, "comms"), 0);
    json_object_set_new(json_object_get(c, "plan"), "optimal", json_true());
    json_object_set_new(c, "schedule",
                        json_pack("{s:i, s:f, s:f, s:f, s:f, s:f, s:i, s:i, s:i, s:s, s:[{s:f, s:f}]}", "iterations",
                                  7, "measured_iteration", 0.033, "predicted_iteration", 0.031,
                                  "measured_pass_through", 0.05, "measured_speedup", 1.5, "predicted_speedup", 1.6,
                                  "deviations", 0, "flushes", 1, "staging_bytes", 12000, "completion", "stream",
                                  "blocks", "start", 0.0101, "end", 0.0112));
    rp_report r;
    char err[512] = "";
    if (rp_from_json(root, "s.json", &r, err, sizeof err) != 0)
        fail_msg("%s", err);
    const rp_schedule *s = &r.comms[0].schedule;
    assert_true(s->present);
    assert_int_equal(s->iterations, 7);
    assert_int_equal(s->n_blocks, 1);
    assert_true(s->blocks[0].end == 0.0112);
    assert_string_equal(s->completion, "stream");
    assert_int_equal(r.comms[0].optimal, 1);
    rp_free(&r);
}

static void test_ranks_compared_on_agreed_values(void **state)
{
    (void)state;
    rp_report *rs = calloc(2, sizeof *rs);
    char err[512];
    /* Planning time is each rank's own: the same job. */
    assert_int_equal(load_text(REPORT(1, 2, COMM(1, 0.7)), "r1.json", &rs[0], err, sizeof err), 0);
    assert_int_equal(load_text(REPORT(0, 2, COMM(0, 0.5)), "r0.json", &rs[1], err, sizeof err), 0);
    rp_job job;
    assert_int_equal(rp_job_make(&job, rs, 2, err, sizeof err), 0);
    assert_int_equal(job.r[0].rank, 0); /* sorted */
    assert_int_equal(job.n_comm_ids, 1);
    int ref_i = -1;
    const rp_comm *ref = rp_job_reference(&job, 0, &ref_i);
    assert_int_equal(ref_i, 0);
    assert_int_equal(rp_comm_diff(ref, rp_comm_find(&job.r[1], 0)), 0);
    /* A plan's block that differs, a verdict, a profile: each its own bit. */
    json_t *plan = json_object_get((json_t *)job.r[1].comms[0].json, "plan");
    json_t *blk = json_array_get(json_object_get(plan, "blocks"), 0);
    json_object_set_new(blk, "end", json_real(0.5));
    assert_int_equal(rp_comm_diff(ref, &job.r[1].comms[0]), RP_DIFF_PLAN);
    json_object_set_new(json_object_get((json_t *)job.r[1].comms[0].json, "verdict"), "schedulable", json_false());
    json_object_set_new(json_object_get((json_t *)job.r[1].comms[0].json, "profile"), "gap", json_real(1));
    int bits = rp_comm_diff(ref, &job.r[1].comms[0]);
    assert_int_equal(bits, RP_DIFF_PLAN | RP_DIFF_VERDICT | RP_DIFF_PROFILE);
    char text[128];
    rp_diff_text(bits, text, sizeof text);
    assert_string_equal(text, "profile, verdict, plan");
    rp_job_free(&job);
}

static void test_not_one_job(void **state)
{
    (void)state;
    char err[512];
    rp_report *rs = calloc(2, sizeof *rs);
    assert_int_equal(load_text(REPORT(0, 2, COMM(0, 0.5)), "a.json", &rs[0], err, sizeof err), 0);
    assert_int_equal(load_text(REPORT(0, 2, COMM(0, 0.5)), "b.json", &rs[1], err, sizeof err), 0);
    rp_job job;
    assert_int_equal(rp_job_make(&job, rs, 2, err, sizeof err), -1);
    assert_non_null(strstr(err, "rank: 0 is also the rank of"));
    rp_job_free(&job);
    rs = calloc(2, sizeof *rs);
    assert_int_equal(load_text(REPORT(0, 2, COMM(0, 0.5)), "a.json", &rs[0], err, sizeof err), 0);
    assert_int_equal(load_text(REPORT(1, 3, COMM(1, 0.5)), "b.json", &rs[1], err, sizeof err), 0);
    assert_int_equal(rp_job_make(&job, rs, 2, err, sizeof err), -1);
    assert_string_equal(err, "b.json: world_size: 3, but a.json has 2: not one job");
    rp_job_free(&job);
}

/* The rank's own measurements and schedule mode's recording load with every field; lengths that
 * do not match what they are drawn against are errors naming the place. */
static void test_recordings(void **state)
{
    (void)state;
    json_t *root = json_loads(REPORT(0, 2, COMM(0, 0.5)), 0, NULL);
    json_t *c = json_array_get(json_object_get(root, "comms"), 0);
    json_object_set_new(c, "id", json_string("00000000deadbeef"));
    json_object_set_new(root, "run", json_pack("{s:s, s:f, s:s, s:i, s:s, s:i}", "started", "2025-01-01T00:00:00Z",
                                               "started_unix", 1.7e9, "host", "n1", "pid", 7, "gpu", "H100", "device", -1));
    json_object_set_new(c, "local",
                        json_pack("{s:{s:i, s:f, s:f, s:f, s:f}, s:[f, n], s:{s:f, s:[[[f, f, f], [n, f, f]]]}}",
                                  "iteration", "n", 3, "mean", 0.05, "min", 0.04, "max", 0.06, "stdev", 0.01, "ready",
                                  0.0, "warmup", "origin", 1.7e9, "iterations", 0.1, 0.2, 0.3, 0.4, 0.5));
    json_object_set_new(c, "schedule",
                        json_pack("{s:i, s:f, s:[], s:{s:i, s:n, s:n, s:n, s:n}, s:{s:f, s:[{s:i, s:i, s:f, "
                                  "s:[[f, f]]}]}}", "iterations", 9, "predicted_iteration", 0.03, "blocks",
                                  "iteration_spread", "n", 0, "mean", "min", "max", "stdev", "recording", "origin", 1.7e9,
                                  "iterations", "iteration", 3, "run", 1, "start", 0.5, "blocks", 0.51, 0.52));
    char *text = json_dumps(root, 0);
    rp_report r;
    char err[512] = "";
    if (load_text(text, "rec.json", &r, err, sizeof err) != 0)
        fail_msg("%s", err);
    const rp_comm *k = &r.comms[0];
    assert_string_equal(k->id, "00000000deadbeef");
    assert_string_equal(r.run.host, "n1");
    assert_int_equal(r.run.device, -1);
    assert_int_equal(k->local.iteration.n, 3);
    assert_int_equal(k->local.n_ready, 2);
    assert_true(isnan(k->local.ready[1]));
    assert_int_equal(k->local.rec_iterations, 1);
    assert_true(isnan(k->local.rec[3]) && k->local.rec[5] == 0.5);
    assert_int_equal(k->schedule.n_rec, 1);
    assert_true(k->schedule.rec[0].blocks[0].end == 0.52);
    assert_true(k->schedule.origin == 1.7e9);
    rp_free(&r);
    free(text);
    /* A recorded iteration with another number of blocks than the plan's. */
    json_t *bad = json_deep_copy(root);
    json_t *bc = json_array_get(json_object_get(bad, "comms"), 0);
    json_t *it0 = json_array_get(json_object_get(json_object_get(json_object_get(bc, "schedule"), "recording"),
                                                 "iterations"), 0);
    json_array_append_new(json_object_get(it0, "blocks"), json_pack("[f, f]", 0.53, 0.54));
    text = json_dumps(bad, 0);
    expect_bad(text, "bad.json: comms[0].schedule.recording.iterations[0].blocks: 2 blocks, the plan has 1");
    free(text);
    json_decref(bad);
    /* A warm-up row with another number of calls than local.ready. */
    bad = json_deep_copy(root);
    bc = json_array_get(json_object_get(bad, "comms"), 0);
    json_array_append_new(json_object_get(json_object_get(bc, "local"), "ready"), json_real(0.1));
    text = json_dumps(bad, 0);
    expect_bad(text, "bad.json: comms[0].local.warmup.iterations[0]: 2 calls, local.ready has 3");
    free(text);
    json_decref(bad);
    /* A time that is not [ready, start, end]. */
    bad = json_deep_copy(root);
    bc = json_array_get(json_object_get(bad, "comms"), 0);
    json_t *row = json_array_get(json_array_get(json_object_get(json_object_get(json_object_get(bc, "local"), "warmup"),
                                                                "iterations"), 0), 0);
    json_array_append_new(row, json_real(1));
    text = json_dumps(bad, 0);
    expect_bad(text, "bad.json: comms[0].local.warmup.iterations[0][0]: must be [ready, start, end], got 4 numbers");
    free(text);
    json_decref(bad);
    json_decref(root);
}

static void test_hints(void **state)
{
    (void)state;
    /* The runtime's own wording (interpose/agree_rt.c) gets the fix; an unknown reason none. */
    const char *h = rp_hint("stream-ordered work on the NCCL stream between collectives (12 operations per warm-up "
                            "on the busiest rank): it consumes results in stream order");
    assert_non_null(h);
    assert_non_null(strstr(h, "HOROVOD_FUSION_THRESHOLD=0"));
    /* Each reason gets its own fix, whole, though their wordings share phrases. */
    const char *cupti = rp_hint("CUPTI was not available on every rank: stream-ordered work on the NCCL stream cannot "
                                "be ruled out");
    assert_non_null(cupti);
    assert_non_null(strstr(cupti, "USBYTE_CUPTI=1"));
    const char *taken = rp_hint("another CUPTI subscriber held CUPTI during the warm-up on some rank (a profiler such "
                                "as torch.profiler, or an NVIDIA tool such as Nsight Systems the job runs under): "
                                "stream-ordered work on the NCCL stream could not be watched; profile without usbyte, "
                                "or run with USBYTE_MODE=observe to measure and plan while profiling");
    assert_non_null(taken);
    assert_non_null(strstr(taken, "USBYTE_MODE=observe while profiling"));
    const char *compute = rp_hint("stream-ordered compute on the NCCL stream between collectives: kernels, graphs or "
                                  "host functions (12 per warm-up on the busiest rank)");
    assert_non_null(compute);
    assert_null(strstr(compute, "set HOROVOD_FUSION_THRESHOLD=0"));
    assert_non_null(strstr(compute, "op=hvd.Sum and divide by hvd.size() yourself (scale the loss before backward)"));
    assert_non_null(strstr(rp_hint("signature mismatch: the ranks saw different call sequences"), "same"));
    /* The Horovod hint is whole. */
    assert_non_null(strstr(h, "between allreduces"));
    assert_null(rp_hint("something new"));
    assert_null(rp_hint(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_minimal_report_loads),
        cmocka_unit_test(test_bad_reports),
        cmocka_unit_test(test_schedule_object),
        cmocka_unit_test(test_ranks_compared_on_agreed_values),
        cmocka_unit_test(test_not_one_job),
        cmocka_unit_test(test_hints),
        cmocka_unit_test(test_recordings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
