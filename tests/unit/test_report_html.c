/* usbyte-report's writers on crafted jobs (tools/report_html.c, report_trace.c): text from a
 * report is escaped (a reason holding markup stays text), a rank without the communicator and a
 * pass-through communicator are shown as such, and the trace holds one process per rank. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../tools/report.h" /* tools/ is not on the include path of the tests */

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
    int procs = 0;
    json_t *ev;
    size_t i;
    json_array_foreach(json_object_get(trace, "traceEvents"), i, ev)
        procs += !strcmp(json_string_value(json_object_get(ev, "name")), "process_name");
    assert_int_equal(procs, 3);
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
    make_job(&job, texts, 1);
    char path[PATH_LEN];
    char *page = page_of(&job, path);
    assert_non_null(strstr(page, "class=\"box warn verdict\" id=\"verdict-0\""));
    assert_non_null(strstr(page, "pass-through</b>: signature mismatch"));
    assert_non_null(strstr(page, "Fix: every rank must issue the same allreduce sequence"));
    assert_non_null(strstr(page, "No report of ranks 1, 2."));
    free(page);
    unlink(path);
    rp_job_free(&job);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_page_escapes_and_shows_missing),
        cmocka_unit_test(test_pass_through_shows_state_and_fix),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
