/* usbyte-report's writers on crafted jobs (tools/report_html.c, report_trace.c): text from a
 * report is escaped (a reason holding markup stays text), a rank without the communicator and a
 * pass-through communicator are shown as such, the trace holds one process per rank, and calls
 * shaped like DDP's buckets get their section (report_html_ddp.c): which calls are, the earliest
 * profile derived by hand, the bound and the gain it leaves on the page. */
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

#include "../../../tools/report.h" /* tools/ is not on the include path of the tests */
#include "../../../tools/report_html.h"
#include "usbyte/model.h"

#define PLANNED(RANK, REASON)                                                                                    \
    "{\"index\": 0, \"rank\": " #RANK ", \"nranks\": 3, \"state\": \"planned\", \"measured_iteration\": 0.05,"  \
    " \"profile\": {\"usbyte_profile\": 1, \"name\": \"a<b>&c\", \"net\": {\"alpha\": 0.001, \"beta\": 1e-9},"  \
    "  \"backward_end\": 0.01, \"forward\": [0.02], \"calls\": [{\"bytes\": 4000, \"ready\": 0}]},"             \
    " \"verdict\": {\"schedulable\": false, \"reasons\": [\"" REASON "\"]},"                                    \
    " \"policies\": [{\"policy\": \"wfbp\", \"iteration\": 0.031004}],"                                         \
    " \"plan\": {\"usbyte_plan\": 1, \"policy\": \"wfbp\", \"iteration\": 0.031004, \"lower_bound\": 0.031004," \
    "  \"blocks\": [{\"segments\": [[0, 0, 4000]], \"start\": 0, \"end\": 0.001004}]}}"
#define REPORT(RANK, COMMS) "{\"usbyte_report\": 1, \"rank\": " #RANK ", \"world_size\": 3, \"comms\": [" COMMS "]}"

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *buf = malloc((size_t)n + 1);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = 0;
    fclose(f);
    return buf;
}

/* The page of `job`, written into a temporary file (its name in path, PATH_LEN bytes). */
#define PATH_LEN 40
static char *page_of(const rp_job *job, char *path)
{
    snprintf(path, PATH_LEN, "/tmp/test_report_html_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    char err[512];
    if (rp_write_html(job, path, err, sizeof err) != 0)
        fail_msg("%s", err);
    return slurp(path);
}

static void make_job(rp_job *job, const char *const *texts, int n)
{
    rp_report *rs = calloc((size_t)n, sizeof *rs);
    char err[512] = "", path[32];
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "r%d.json", i);
        if (rp_from_json(json_loads(texts[i], 0, NULL), path, &rs[i], err, sizeof err) != 0)
            fail_msg("%s", err);
    }
    if (rp_job_make(job, rs, n, err, sizeof err) != 0)
        fail_msg("%s", err);
}

/* The page of the job made of texts[0..n) (job filled, path: the page's file). */
static char *page_for(const char *const *texts, int n, rp_job *job, char *path)
{
    make_job(job, texts, n);
    return page_of(job, path);
}

static void test_page_escapes_and_shows_missing(void **state)
{
    (void)state;
    const char *texts[] = {REPORT(0, PLANNED(0, "<script>x()</script> & \\\"more\\\"")),
                           REPORT(1, PLANNED(1, "<script>x()</script> & \\\"more\\\"")), REPORT(2, "")};
    rp_job job;
    make_job(&job, texts, 3);
    char path[PATH_LEN], err[512];
    char *page = page_of(&job, path);
    /* The reason is text, never markup; the page's only script is its own. */
    assert_non_null(strstr(page, "&lt;script&gt;x()&lt;/script&gt; &amp; &quot;more&quot;"));
    assert_null(strstr(page, "<script>x()"));
    assert_non_null(strstr(page, "a&lt;b&gt;&amp;c"));
    /* Rank 2 has no communicator 0: a problem of the job, in red, and in its row. */
    assert_non_null(strstr(page, "id=\"consistency\" data-problems=\"1\""));
    assert_non_null(strstr(page, "<li class=\"diff\">rank 2 has no communicator 0</li>"));
    assert_non_null(strstr(page, "no communicator 0 in r2.json"));
    assert_non_null(strstr(page, "class=\"box bad verdict\" id=\"verdict-0\""));
    free(page);
    assert_int_equal(rp_write_trace(&job, path, err, sizeof err), 0);
    json_t *trace = json_load_file(path, 0, NULL);
    assert_non_null(trace);
    int procs = 0, model = 0;
    json_t *ev;
    size_t i;
    json_array_foreach(json_object_get(trace, "traceEvents"), i, ev)
        if (!strcmp(json_string_value(json_object_get(ev, "name")), "process_name")) {
            const char *name = json_string_value(json_object_get(json_object_get(ev, "args"), "name"));
            procs += !strncmp(name, "rank ", 5);
            model += !strncmp(name, "model", 5);
        }
    assert_int_equal(procs, 3); /* one per rank, and the model once */
    assert_int_equal(model, 1);
    json_decref(trace);
    unlink(path);
    rp_job_free(&job);
}

static void test_pass_through_shows_state_and_fix(void **state)
{
    (void)state;
    const char *texts[] = {REPORT(0, "{\"index\": 0, \"nranks\": 3, \"state\": \"pass-through\", \"state_reason\":"
                                     " \"signature mismatch: the ranks saw different call sequences\","
                                     " \"verdict\": {\"schedulable\": false, \"reasons\": []}}")};
    rp_job job;
    char path[PATH_LEN];
    char *page = page_for(texts, 1, &job, path);
    /* Not scheduled, in red, the state's reason as the headline's why, its fix once. */
    assert_non_null(strstr(page, "class=\"box bad verdict\" id=\"verdict-0\" data-outcome=\"Not scheduled\""));
    assert_non_null(strstr(page, "<span class=\"why\">signature mismatch: the ranks saw different call sequences"));
    assert_non_null(strstr(page, "Fix: every rank must issue the same allreduces in the same order"));
    assert_non_null(strstr(page, "No report of ranks 1, 2."));
    free(page);
    unlink(path);
    rp_job_free(&job);
}


static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

#define HVD_REASON                                                                                                  \
    "stream-ordered work on the NCCL stream between collectives (284 operations per warm-up on the busiest rank): " \
    "it consumes results in stream order and cannot be redirected; with Horovod, set HOROVOD_FUSION_THRESHOLD=0 "   \
    "so that usbyte does the fusion"
#define SCHEDULE_CONFIG "\"config\": {\"USBYTE_MODE\": \"schedule\", \"sources\": {\"USBYTE_MODE\": \"default\"}}, "
#define REPORT_CFG(RANK, CONFIG, COMMS)                                                                              \
    "{\"usbyte_report\": 1, \"rank\": " #RANK ", \"world_size\": 2, " CONFIG "\"comms\": [" COMMS "]}"
#define HVD_COMM(STATE_REASON)                                                                                      \
    "{\"index\": 0, \"nranks\": 2, \"state\": \"pass-through\", \"state_reason\": \"" STATE_REASON "\","          \
    " \"verdict\": {\"schedulable\": false, \"reasons\": [\"" HVD_REASON "\"]}}"

/* A Horovod job with fusion on, in schedule mode: the reason and its fix once each, never cut,
 * whether the state's reason points at the verdict (this runtime) or repeats the reason cut at
 * 200 bytes (an older one). */
static void test_each_reason_and_fix_once(void **state)
{
    (void)state;
    const char *states[] = {"not schedulable (the verdict says why)",
                            "not schedulable: stream-ordered work on the NCCL stream between collectives (284 "
                            "operations per warm-up on the busiest rank): it consumes results in stream order and cannot "
                            "be redirected; with Horovod, set HOROVOD_FUS"};
    for (int k = 0; k < 2; k++) {
        char a[4096], b[4096];
        snprintf(a, sizeof a, REPORT_CFG(0, SCHEDULE_CONFIG, HVD_COMM("%s")), states[k]);
        snprintf(b, sizeof b, REPORT_CFG(1, SCHEDULE_CONFIG, HVD_COMM("%s")), states[k]);
        const char *texts[] = {a, b};
        rp_job job;
        make_job(&job, texts, 2);
        char path[PATH_LEN];
        char *page = page_of(&job, path);
        assert_int_equal(count(page, HVD_REASON), 1);
        assert_int_equal(count(page, "stream-ordered work on the NCCL stream"), 1);
        assert_int_equal(count(page, "Fix: Horovod: set HOROVOD_FUSION_THRESHOLD=0"), 1);
        assert_null(strstr(page, "HOROVOD_FUS<"));
        assert_null(strstr(page, "the verdict says why"));
        assert_non_null(strstr(page, "data-outcome=\"Not scheduled\""));
        free(page);
        unlink(path);
        rp_job_free(&job);
    }
}

#define CONFIG(POLICY, ALIGN)                                                                                       \
    "\"config\": {\"USBYTE_MODE\": \"schedule\", \"USBYTE_POLICY\": \"" POLICY "\", \"USBYTE_ALIGN\": \"" ALIGN   \
    "\", \"USBYTE_WARMUP\": 5, \"sources\": {\"USBYTE_POLICY\": \"env\"}, \"ignored\": {}}, "
#define MISMATCH_COMM                                                                                               \
    "{\"index\": 0, \"nranks\": 2, \"state\": \"pass-through\", \"state_reason\": \"signature mismatch: the ranks "  \
    "run with different settings\", \"measured_iteration\": 0, \"verdict\": {\"schedulable\": false, \"reasons\": "  \
    "[\"signature mismatch: the ranks run with different settings\"]}}"

/* Ranks with different settings: every setting that differs is a problem of the job (the page,
 * the summary and the exit status count the same list), and no 0 ms bar is drawn. */
static void test_settings_that_differ(void **state)
{
    (void)state;
    const char *texts[] = {REPORT_CFG(0, CONFIG("best", "512"), MISMATCH_COMM),
                           REPORT_CFG(1, CONFIG("mgwfbp", "256"), MISMATCH_COMM)};
    rp_job job;
    make_job(&job, texts, 2);
    assert_int_equal(job.n_problems, 2);
    assert_string_equal(job.problems[0].text, "USBYTE_POLICY differs between the ranks: best on rank 0; mgwfbp on "
                                              "rank 1 (every rank must run with the same value)");
    assert_string_equal(job.problems[1].text, "USBYTE_ALIGN differs between the ranks: 512 on rank 0; 256 on rank 1 "
                                              "(every rank must run with the same value)");
    char path[PATH_LEN];
    char *page = page_of(&job, path);
    assert_non_null(strstr(page, "id=\"consistency\" data-problems=\"2\""));
    assert_non_null(strstr(page, "USBYTE_POLICY differs between the ranks"));
    assert_non_null(strstr(page, "USBYTE_ALIGN differs between the ranks"));
    assert_null(strstr(page, "class=\"bar\"")); /* nothing measured: no bar at all */
    assert_non_null(strstr(page, "No iteration time was agreed"));
    /* The differing settings are red in the run's details, with their ranks. */
    assert_non_null(strstr(page, "<code class=\"diff\">USBYTE_POLICY=best (rank 0) | mgwfbp (rank 1)</code>"));
    free(page);
    unlink(path);
    rp_job_free(&job);
}

/* Two ranks whose reports hold different profiles and plans (a stale file of another job): the
 * trace draws each rank's recording with its own plan, never one rank's plan against another's
 * profile (which wrote past an array). */
#define SCHED_COMM(N_CALLS_JSON, PLAN_BLOCKS, REC_BLOCKS, REC_BLOCKS2)                                                           \
    "{\"index\": 0, \"nranks\": 2, \"state\": \"schedule\", \"measured_iteration\": 0.05,"                        \
    " \"profile\": {\"usbyte_profile\": 1, \"net\": {\"alpha\": 0.001, \"beta\": 1e-9}, \"backward_end\": 0.01,"   \
    "  \"forward\": [0.02], \"calls\": " N_CALLS_JSON "},"                                                        \
    " \"verdict\": {\"schedulable\": true, \"reasons\": []}, \"policies\": [],"                                    \
    " \"plan\": {\"usbyte_plan\": 1, \"policy\": \"wfbp\", \"blocks\": " PLAN_BLOCKS "},"                          \
    " \"schedule\": {\"iterations\": 9, \"predicted_iteration\": 0.04, \"blocks\": [],"                           \
    "  \"recording\": {\"origin\": 1.7e9, \"iterations\": [{\"iteration\": 3, \"run\": 1, \"start\": 0.5,"        \
    "   \"blocks\": " REC_BLOCKS "}, {\"iteration\": 4, \"run\": 1, \"start\": 0.55, \"blocks\": " REC_BLOCKS2 "}]}}}"

static void test_trace_draws_each_rank_with_its_own_plan(void **state)
{
    (void)state;
    const char *texts[] = {
        "{\"usbyte_report\": 1, \"rank\": 0, \"world_size\": 2, \"comms\": [" SCHED_COMM(
            "[{\"bytes\": 4000, \"ready\": 0}, {\"bytes\": 4000, \"ready\": 0.001}, {\"bytes\": 4000, \"ready\": 0.002}]",
            "[{\"segments\": [[0, 0, 4000]]}, {\"segments\": [[1, 0, 4000]]}, {\"segments\": [[2, 0, 4000]]}]",
            "[[0.501, 0.502], [0.503, 0.504], [0.505, 0.506]]", "[[0.551, 0.552], [0.553, 0.554], [0.555, 0.556]]") "]}",
        "{\"usbyte_report\": 1, \"rank\": 1, \"world_size\": 2, \"comms\": [" SCHED_COMM(
            "[{\"bytes\": 4000, \"ready\": 0}]", "[{\"segments\": [[0, 0, 4000]]}]", "[[0.501, 0.502]]",
            "[[0.551, 0.552]]") "]}"};
    rp_job job;
    make_job(&job, texts, 2);
    assert_true(job.n_problems >= 1); /* the profiles and plans differ */
    char path[PATH_LEN], err[512];
    snprintf(path, PATH_LEN, "/tmp/test_report_html_XXXXXX");
    int fd = mkstemp(path);
    close(fd);
    assert_int_equal(rp_write_trace(&job, path, err, sizeof err), 0);
    json_t *trace = json_load_file(path, 0, NULL);
    assert_non_null(trace);
    int measured[2] = {0, 0}, predicted[2] = {0, 0};
    json_t *ev;
    size_t i;
    json_array_foreach(json_object_get(trace, "traceEvents"), i, ev) {
        const char *cat = json_string_value(json_object_get(ev, "cat"));
        int pid = (int)json_integer_value(json_object_get(ev, "pid"));
        if (!cat || pid > 1 || strcmp(json_string_value(json_object_get(ev, "ph")), "X") != 0)
            continue;
        int tid = (int)json_integer_value(json_object_get(ev, "tid"));
        measured[pid] += !strcmp(cat, "measured") && tid == 2;
        predicted[pid] += !strcmp(cat, "predicted");
        /* On the recording's clock: microseconds since the epoch. */
        assert_true(json_number_value(json_object_get(ev, "ts")) > 1.7e15);
    }
    assert_int_equal(measured[0], 6); /* 2 iterations x 3 blocks */
    assert_int_equal(predicted[0], 6);
    assert_int_equal(measured[1], 2); /* 2 iterations x 1 block */
    assert_int_equal(predicted[1], 2);
    json_decref(trace);
    unlink(path);
    rp_job_free(&job);
}

/* A comm whose profile is DDP-shaped: a 1 MiB first bucket, three of 25-27 MiB, a last one of
 * 3 MiB, ready at 0, 10, 20, 30, 40 ms; alpha 1 ms, 1 ns per byte. */
#define DDP_COMM                                                                                                    \
    "{\"index\": 0, \"nranks\": 1, \"state\": \"planned\", \"measured_iteration\": 0.2,"                            \
    " \"profile\": {\"usbyte_profile\": 1, \"net\": {\"alpha\": 0.001, \"beta\": 1e-9},"                          \
    "  \"backward_end\": 0.04, \"forward\": [0.02], \"calls\": [{\"bytes\": 1048576, \"ready\": 0},"             \
    "  {\"bytes\": 26214400, \"ready\": 0.01}, {\"bytes\": 27262976, \"ready\": 0.02},"                            \
    "  {\"bytes\": 26738688, \"ready\": 0.03}, {\"bytes\": 3145728, \"ready\": 0.04}]},"                           \
    " \"verdict\": {\"schedulable\": true, \"reasons\": []}, \"policies\": []}"

static void calls_of(ub_profile *p, ub_call *calls, int n, const uint64_t *bytes)
{
    memset(p, 0, sizeof *p);
    for (int k = 0; k < n; k++)
        calls[k] = (ub_call){.bytes = bytes[k], .ready = 0.01 * k, .dtype = UB_DTYPE_FLOAT32, .op = UB_OP_SUM,
                             .merge = true, .measured_comm = -1};
    p->n_calls = n;
    p->calls = calls;
}

/* DDP-shaped: the calls between the first and the last of a class within a factor two of their
 * median; tensors of a per-layer profile are not; fewer than two such calls say nothing. */
static void test_ddp_shape(void **state)
{
    (void)state;
    ub_profile p;
    ub_call calls[8];
    rp_ddp_shape sh;
    const uint64_t ddp[] = {1 << 20, 25 << 20, 27 << 20, 26 << 20, 1 << 18};
    calls_of(&p, calls, 5, ddp);
    assert_true(rp_ddp_shaped(&p, &sh));
    assert_int_equal(sh.n_middle, 3);
    assert_int_equal(sh.min_middle, 25 << 20);
    assert_int_equal(sh.max_middle, 27 << 20);
    const uint64_t tensors[] = {4096, 1 << 20, 2048, 9 << 20, 512, 1 << 22};
    calls_of(&p, calls, 6, tensors);
    assert_false(rp_ddp_shaped(&p, &sh));
    calls_of(&p, calls, 3, ddp);
    assert_false(rp_ddp_shaped(&p, &sh));
    /* Per class: a float16 call in the middle is the first and the last of its own class. */
    const uint64_t mixed[] = {1 << 20, 25 << 20, 4096, 26 << 20, 25 << 20, 1 << 18};
    calls_of(&p, calls, 6, mixed);
    calls[2].dtype = UB_DTYPE_FLOAT16;
    assert_true(rp_ddp_shaped(&p, &sh));
    assert_int_equal(sh.n_middle, 3);
}

/* The earliest profile: each call after the first of its class ready when the previous one of
 * its class was, and needed no sooner than it; the first of each class as it is. */
static void test_ddp_earliest(void **state)
{
    (void)state;
    ub_profile p, e;
    ub_call calls[5];
    const uint64_t b[] = {100, 200, 300, 400, 500};
    calls_of(&p, calls, 5, b);
    calls[2].dtype = UB_DTYPE_FLOAT16; /* ready 0.02: its class's first */
    for (int k = 0; k < 5; k++)
        calls[k].need = 4 - k;
    assert_int_equal(rp_ddp_earliest(&p, &e), 0);
    const double ready[] = {0.0, 0.0, 0.02, 0.01, 0.03};
    const int need[] = {4, 4, 2, 3, 1};
    for (int k = 0; k < 5; k++) {
        assert_true(fabs(e.calls[k].ready - ready[k]) < 1e-15);
        assert_int_equal(e.calls[k].need, need[k]);
        assert_int_equal(e.calls[k].bytes, b[k]);
        assert_true(fabs(p.calls[k].ready - 0.01 * k) < 1e-15); /* the original untouched */
    }
    free(e.calls);
}

/* The page says what usbyte can and cannot do with DDP's buckets, with the bound of the earliest
 * profile (ub_lower_bound of the ready times derived by hand) and the gain it leaves; a page
 * without DDP-shaped calls has no such section. */
static void test_ddp_section(void **state)
{
    (void)state;
    const char *texts[] = {REPORT(0, DDP_COMM)};
    rp_job job;
    char path[PATH_LEN];
    char *page = page_for(texts, 1, &job, path);
    assert_non_null(strstr(page, "id=\"ddp-0\""));
    assert_non_null(strstr(page, "usbyte sees the buckets, not the tensors in them"));
    assert_non_null(strstr(page, "so the cap here is at most 25.0 MiB"));
    /* By hand: ready 0, 0, 0.01, 0.02, 0.03 (the last call's class-previous is call 3). */
    const ub_profile *prof = &job.r[0].comms[0].profile;
    ub_profile e = *prof;
    ub_call calls[5];
    memcpy(calls, prof->calls, sizeof calls);
    const double ready[] = {0.0, 0.0, 0.01, 0.02, 0.03};
    for (int k = 0; k < 5; k++)
        calls[k].ready = ready[k];
    e.calls = calls;
    double bound = ub_lower_bound(&e);
    char want[128];
    snprintf(want, sizeof want, "class=\"ddp-bound\" data-v=\"%.17g\"", bound);
    if (!strstr(page, want))
        fail_msg("no %s on the page", want);
    assert_true(bound < ub_lower_bound(prof)); /* earlier ready times do bound lower here */
    ub_plan best;
    ub_plan_init(&best, "best");
    assert_int_equal(ub_policy_run(UB_POLICY_BEST, prof, &best), 0);
    snprintf(want, sizeof want, "class=\"ddp-gain\" data-v=\"%.17g\"", best.iteration / bound - 1.0);
    if (!strstr(page, want))
        fail_msg("no %s on the page", want);
    assert_non_null(strstr(page, "finer buckets could gain at most"));
    ub_plan_free(&best);
    free(page);
    unlink(path);
    rp_job_free(&job);
    const char *plain[] = {REPORT(0, PLANNED(0, "x"))};
    page = page_for(plain, 1, &job, path);
    assert_null(strstr(page, "id=\"ddp-0\""));
    free(page);
    unlink(path);
    rp_job_free(&job);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_page_escapes_and_shows_missing),
        cmocka_unit_test(test_ddp_shape),
        cmocka_unit_test(test_ddp_earliest),
        cmocka_unit_test(test_ddp_section),
        cmocka_unit_test(test_pass_through_shows_state_and_fix),
        cmocka_unit_test(test_each_reason_and_fix_once),
        cmocka_unit_test(test_settings_that_differ),
        cmocka_unit_test(test_trace_draws_each_rank_with_its_own_plan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
