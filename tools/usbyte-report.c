/* usbyte-report REPORT.json [REPORT.json ...] [-o DIR] [--summary] [--quiet]
 *
 * Turns the per-rank reports of one job into DIR/usbyte-report.html (a self-contained page) and
 * DIR/usbyte-trace.json (Chrome trace events for Perfetto / chrome://tracing).  An argument
 * that names no file but holds a wildcard is expanded (a quoted "run/usbyte-report-*.json").
 * Exit status: 0, 1 when the ranks disagree (the page shows it in red), 2 for bad input. */
#include <errno.h>
#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report.h"
#include "usbyte/alloc.h"

static void usage(FILE *f)
{
    fputs("usage: usbyte-report REPORT.json [REPORT.json ...] [-o DIR] [--summary] [--quiet]\n"
          "  writes DIR/usbyte-report.html and DIR/usbyte-trace.json (DIR: . by default) from the\n"
          "  reports of one job's ranks (USBYTE_REPORT files; a quoted wildcard is expanded).\n"
          "  --summary  also print a text summary per communicator\n"
          "  --quiet    do not print the paths written\n"
          "exit status: 0, 1 when the ranks' agreed values differ, 2 for bad input\n",
          f);
}

static void die(const char *msg)
{
    fprintf(stderr, "usbyte-report: %s\n", msg);
    exit(2);
}

static void add_path(char ***paths, int *n, const char *p)
{
    *paths = ub_xrealloc(*paths, sizeof(char *) * (size_t)(*n + 1), "listing reports");
    (*paths)[(*n)++] = strdup(p);
}

static void expand(char ***paths, int *n, const char *arg)
{
    struct stat st;
    if (stat(arg, &st) == 0 || !strpbrk(arg, "*?[")) {
        add_path(paths, n, arg);
        return;
    }
    glob_t g;
    if (glob(arg, 0, NULL, &g) != 0) {
        char msg[1200];
        snprintf(msg, sizeof msg, "%s: no file matches", arg);
        die(msg);
    }
    for (size_t i = 0; i < g.gl_pathc; i++)
        add_path(paths, n, g.gl_pathv[i]);
    globfree(&g);
}

static int mkdirs(const char *dir)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", dir);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(buf, 0777) != 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    return mkdir(buf, 0777) != 0 && errno != EEXIST ? -1 : 0;
}

static int disagreements(const rp_job *job)
{
    int n = 0;
    for (int k = 0; k < job->n_comm_ids; k++) {
        const rp_comm *ref = rp_job_reference(job, job->comm_ids[k], NULL);
        for (int i = 0; i < job->n; i++) {
            const rp_comm *c = rp_comm_find(&job->r[i], job->comm_ids[k]);
            n += !c || rp_comm_diff(ref, c) != 0;
        }
    }
    return n;
}

static void summary(const rp_job *job, FILE *f)
{
    fprintf(f, "usbyte: %d of %d rank reports", job->n, job->world_size);
    int bad = disagreements(job);
    fprintf(f, "%s\n", job->n < 2 ? "" : bad ? "; THE RANKS DISAGREE (see the page)" : ", all agree");
    if (!job->n_comm_ids)
        fputs("  no communicator was seen: no NCCL call reached usbyte (try usbyte-doctor)\n", f);
    for (int k = 0; k < job->n_comm_ids; k++) {
        const rp_comm *c = rp_job_reference(job, job->comm_ids[k], NULL);
        fprintf(f, "communicator %d (%d ranks, %ld allreduces/iteration): %s%s%s, %s\n", c->index, c->nranks,
                c->calls_per_iteration, c->state, c->state_reason ? ": " : "", c->state_reason ? c->state_reason : "",
                c->schedulable ? "schedulable" : "not schedulable");
        if (c->measured_iteration > 0)
            fprintf(f, "  measured iteration %.3f ms\n", c->measured_iteration * 1e3);
        double wfbp = NAN;
        for (int i = 0; i < c->n_policies; i++)
            if (!strcmp(c->policies[i].name, "wfbp"))
                wfbp = c->policies[i].iteration;
        if (c->have_plan)
            fprintf(f, "  plan %s predicts %.3f ms (%.2fx over wfbp %.3f ms), lower bound %.3f ms\n", c->plan.policy,
                    c->plan_reported * 1e3, wfbp / c->plan_reported, wfbp * 1e3, c->plan.lower_bound * 1e3);
        const rp_schedule *s = &c->schedule;
        if (s->present && isfinite(s->measured_iteration))
            fprintf(f, "  scheduled (%ld iterations): %.3f ms against %.3f ms pass-through: %.2fx measured, %.2fx "
                       "predicted\n", s->iterations, s->measured_iteration * 1e3, s->measured_pass_through * 1e3,
                    s->measured_speedup, s->predicted_speedup);
        else if (s->present)
            fprintf(f, "  scheduled (%ld iterations): not measured yet; predicted %.3f ms\n", s->iterations,
                    s->predicted_iteration * 1e3);
        for (int i = 0; i < c->n_reasons; i++) {
            fprintf(f, "  why: %s\n", c->reasons[i]);
            const char *h = rp_hint(c->reasons[i]);
            if (h)
                fprintf(f, "  fix: %s\n", h);
        }
        const char *h = rp_hint(c->state_reason);
        if (h)
            fprintf(f, "  fix: %s\n", h);
    }
}

int main(int argc, char **argv)
{
    const char *dir = ".";
    int want_summary = 0, quiet = 0, n = 0;
    char **paths = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "-o")) {
            if (i + 1 >= argc)
                die("-o: needs a directory");
            dir = argv[++i];
        } else if (!strcmp(a, "--summary")) {
            want_summary = 1;
        } else if (!strcmp(a, "--quiet")) {
            quiet = 1;
        } else if (a[0] == '-' && a[1]) {
            char msg[600];
            snprintf(msg, sizeof msg, "%s: unknown option (usbyte-report --help)", a);
            die(msg);
        } else {
            expand(&paths, &n, a);
        }
    }
    if (!n) {
        usage(stderr);
        return 2;
    }
    char err[2048];
    rp_report *reports = ub_xcalloc((size_t)n, sizeof *reports, "loading reports");
    for (int i = 0; i < n; i++) {
        if (rp_load(paths[i], &reports[i], err, sizeof err) != 0)
            die(err);
        free(paths[i]);
    }
    free(paths);
    rp_job job;
    if (rp_job_make(&job, reports, n, err, sizeof err) != 0)
        die(err);
    if (mkdirs(dir) != 0) {
        snprintf(err, sizeof err, "%s: cannot create the directory: %s", dir, strerror(errno));
        die(err);
    }
    char html[1100], trace[1100];
    snprintf(html, sizeof html, "%s/usbyte-report.html", dir);
    snprintf(trace, sizeof trace, "%s/usbyte-trace.json", dir);
    if (rp_write_html(&job, html, err, sizeof err) != 0 || rp_write_trace(&job, trace, err, sizeof err) != 0)
        die(err);
    if (want_summary)
        summary(&job, stdout);
    if (!quiet)
        printf("usbyte-report: wrote %s and %s\n", html, trace);
    int rc = disagreements(&job) ? 1 : 0;
    rp_job_free(&job);
    return rc;
}
