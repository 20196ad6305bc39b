/* usbyte-report REPORT.json|DIR|'GLOB' ... [-o DIR] [--summary] [--quiet]
 *
 * Turns the per-rank reports of one job into DIR/usbyte-report.html (a self-contained page) and
 * DIR/usbyte-trace.json (Chrome trace events for Perfetto / chrome://tracing).  Arguments are
 * report files, directories (every usbyte report in them: a run's directory, or each node's
 * when a multi-node job's reports were gathered in several) and quoted wildcards.  The reports
 * are grouped by job (the communicators' identities, which every rank of a job shares): one job
 * gives its page; two directories holding one job each give the comparison page
 * DIR/usbyte-compare.html; any other mix is refused with one line naming the files.
 * Exit status: 0, 1 when the ranks disagree (the page shows it in red), 2 for bad input. */
#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report.h"
#include "usbyte/alloc.h"
#include "usbyte/io.h"
#include "usbyte/verify.h"

static void usage(FILE *f)
{
    fputs("usage: usbyte-report REPORT.json|DIR|'GLOB' ... [-o DIR] [--summary] [--quiet]\n"
          "  writes DIR/usbyte-report.html and DIR/usbyte-trace.json (DIR: . by default) from the\n"
          "  reports of one job's ranks (USBYTE_REPORT files; a directory gives every report in it,\n"
          "  a quoted wildcard is expanded; several directories may hold one job's reports)\n"
          "  two directories of two jobs (usbyte-report runA/ runB/) write DIR/usbyte-compare.html\n"
          "  --summary        also print a text summary per communicator\n"
          "  --quiet          do not print the paths written\n"
          "  --list-policies  print the policy names this usbyte knows, one per line\n"
          "exit status: 0, 1 when the ranks' settings or agreed values differ, 2 for bad input\n",
          f);
}

static _Noreturn void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static _Noreturn void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("usbyte-report: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

typedef struct loaded {
    rp_report *r;
    int n, cap;
    struct file_id { dev_t dev; ino_t ino; const char *path; } *seen; /* per report loaded */
    int n_seen;
} loaded;

/* A file reached twice (named twice, or by a name and a directory or a wildcard) is one rank's
 * report, read once: true when `path` was already read (said on stderr). */
static bool already_read(loaded *l, const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return false; /* the load says why */
    for (int i = 0; i < l->n_seen; i++)
        if (l->seen[i].dev == st.st_dev && l->seen[i].ino == st.st_ino) {
            fprintf(stderr, "usbyte-report: %s: the same file as %s, read once\n", path, l->seen[i].path);
            return true;
        }
    l->seen = ub_xrealloc(l->seen, sizeof *l->seen * (size_t)(l->n_seen + 1), "loading reports");
    char *copy = strdup(path);
    if (!copy)
        die("out of memory");
    l->seen[l->n_seen++] = (struct file_id){st.st_dev, st.st_ino, copy};
    return false;
}

/* What a directory holds besides files (a FIFO, a socket, a device: never a report, and opening
 * a FIFO would wait for a writer). */
static bool regular_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static rp_report *add(loaded *l)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 16;
        l->r = ub_xrealloc(l->r, sizeof *l->r * (size_t)l->cap, "loading reports");
    }
    memset(&l->r[l->n], 0, sizeof l->r[0]);
    return &l->r[l->n++];
}

static void load_file(loaded *l, const char *path, const char *arg)
{
    char err[2048];
    if (already_read(l, path))
        return;
    rp_report *r = add(l);
    if (rp_load(path, r, err, sizeof err) != 0)
        die("%s", err);
    r->arg = arg;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every usbyte report in a directory, in name order: the other JSON files a run leaves there (the
 * trace, a profile) are skipped; a report that does not load is an error, as is a directory
 * without any. */
static void load_dir(loaded *l, const char *dir, const char *arg)
{
    DIR *d = opendir(dir);
    if (!d)
        die("%s: cannot read the directory: %s", dir, strerror(errno));
    char **names = NULL;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".json") != 0)
            continue;
        names = ub_xrealloc(names, sizeof *names * (size_t)(n + 1), "listing %s", dir);
        if (asprintf(&names[n], "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", e->d_name) < 0)
            die("out of memory");
        if (regular_file(names[n]))
            n++;
        else
            free(names[n]);
    }
    closedir(d);
    if (n)
        qsort(names, (size_t)n, sizeof *names, by_name);
    int found = 0;
    for (int i = 0; i < n; i++) {
        char err[2048];
        json_t *root = ub_json_load_file(names[i], err, sizeof err);
        if (!root)
            die("%s", err);
        bool report = json_is_object(root) && json_object_get(root, "usbyte_report");
        if (!report || already_read(l, names[i])) {
            found += report;
            json_decref(root);
            free(names[i]);
            continue;
        }
        rp_report *r = add(l);
        if (rp_from_json(root, names[i], r, err, sizeof err) != 0)
            die("%s", err);
        r->arg = arg;
        found++;
        free(names[i]);
    }
    free(names);
    if (!found)
        die("%s: no usbyte report in this directory", dir);
}

static bool is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static void load_arg(loaded *l, const char *arg)
{
    struct stat st;
    if (stat(arg, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            load_dir(l, arg, arg);
        else
            load_file(l, arg, arg);
        return;
    }
    if (!strpbrk(arg, "*?[")) {
        load_file(l, arg, arg); /* says that it does not exist */
        return;
    }
    glob_t g;
    if (glob(arg, 0, NULL, &g) != 0)
        die("%s: no file matches", arg);
    for (size_t i = 0; i < g.gl_pathc; i++) {
        if (is_dir(g.gl_pathv[i]))
            load_dir(l, g.gl_pathv[i], arg);
        else
            load_file(l, g.gl_pathv[i], arg);
    }
    globfree(&g);
}

static int mkdirs(const char *dir)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", dir) >= (int)sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(buf, 0777) != 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    return mkdir(buf, 0777) != 0 && errno != EEXIST ? -1 : 0;
}

static double policy_iteration(const rp_comm *c, const char *name)
{
    for (int i = 0; i < c->n_policies; i++)
        if (!strcmp(c->policies[i].name, name))
            return c->policies[i].iteration;
    return NAN;
}

/* The page's answers as text: the same problems, outcomes, reasons and fixes, each once. */
static void summary(const rp_job *job, FILE *f)
{
    fprintf(f, "usbyte: %d of %d rank reports", job->n, job->world_size);
    if (job->n_problems) {
        fprintf(f, "; THE RANKS DISAGREE (see the page):\n");
        for (int i = 0; i < job->n_problems; i++)
            fprintf(f, "  - %s\n", job->problems[i].text);
    } else {
        fprintf(f, "%s\n", job->n < 2 ? "" : ", all agree");
    }
    if (!job->n_comm_ids)
        fputs("  no communicator was seen: no NCCL call reached usbyte (try usbyte-doctor)\n", f);
    for (int k = 0; k < job->n_comm_ids; k++) {
        int ref_i;
        const rp_comm *c = rp_job_reference(job, job->comm_ids[k], &ref_i);
        const char *why;
        int bad;
        rp_outcome o = rp_comm_outcome(&job->r[ref_i], c, &why, &bad);
        /* No count before a warm-up was profiled (pass-through from the start): none is claimed. */
        char calls[48] = "no iteration profiled";
        if (c->calls_per_iteration > 0)
            snprintf(calls, sizeof calls, "%ld allreduces/iteration", c->calls_per_iteration);
        fprintf(f, "communicator %d (%d ranks, %s): %s%s%s (state %s, %s)\n", c->index, c->nranks, calls,
                o == RP_SCHEDULED ? "Scheduled" : o == RP_OBSERVED ? "Observed" : "Not scheduled",
                why ? ": " : "", why ? why : "", c->state, c->schedulable ? "schedulable" : "not schedulable");
        if (c->measured_iteration > 0)
            fprintf(f, "  measured iteration %.3f ms\n", c->measured_iteration * 1e3);
        double compute = rp_compute_alone(c);
        if (isfinite(compute) && c->measured_iteration > 0)
            fprintf(f, "  communication exposed: %.3f ms of the %.3f ms iteration (compute alone %.3f ms)\n",
                    fmax(0, c->measured_iteration - compute) * 1e3, c->measured_iteration * 1e3, compute * 1e3);
        double wfbp = policy_iteration(c, "wfbp");
        if (c->have_plan)
            fprintf(f, "  plan %s predicts %.3f ms (%.2fx over wfbp %.3f ms), lower bound %.3f ms\n", c->plan.policy,
                    c->plan_reported * 1e3, wfbp / c->plan_reported, wfbp * 1e3, c->plan.lower_bound * 1e3);
        const rp_schedule *s = &c->schedule;
        if (s->present && isfinite(s->measured_iteration))
            fprintf(f, "  scheduled (%ld iterations): %.3f ms against %.3f ms without the plan (%s): %.2fx measured, "
                       "%.2fx predicted\n", s->iterations, s->measured_iteration * 1e3, s->measured_pass_through * 1e3,
                    s->pass_through_side_by_side
                        ? "the verification's pass-through median, side by side"
                        : "the warm-up's, which carries the profiling's cost",
                    s->measured_speedup, s->predicted_speedup);
        else if (s->present)
            fprintf(f, "  scheduled (%ld iterations): not measured yet; predicted %.3f ms\n", s->iterations,
                    s->predicted_iteration * 1e3);
        const rp_verification *v = &c->verification;
        if (v->present && v->kept)
            fprintf(f, "  verified at call %ld: %s\n", v->at_call, v->reason && *v->reason ? v->reason : v->kept);
        else if (v->present)
            fprintf(f, "  verification: no verdict: the job ended inside the first window (%d iterations that alternate "
                       "the plan with pass-through), so the job's own iteration times mix both; a longer run decides\n",
                    UB_VERIFY_APPLY_AT);
        const char *fixes[64];
        int n_fixes = 0;
        for (int i = -1; i < c->n_reasons; i++) {
            const char *reason = i < 0 ? why : c->reasons[i];
            if (i >= 0 && why && !strcmp(why, reason))
                continue;
            if (i >= 0)
                fprintf(f, "  why: %s\n", reason);
            const char *h = rp_hint(reason);
            bool said = false;
            for (int j = 0; j < n_fixes; j++)
                said |= fixes[j] == h;
            if (h && !said && n_fixes < 64) {
                fixes[n_fixes++] = h;
                fprintf(f, "  fix: %s\n", h);
            }
        }
    }
}

/* One line naming every file of each job, for a mix that is refused. */
static _Noreturn void refuse_mix(const loaded *l, const int *group, int jobs)
{
    size_t len = 256;
    for (int i = 0; i < l->n; i++)
        len += strlen(l->r[i].path) + 4;
    for (int j = 0; j < jobs; j++)
        len += 96;
    static char *msg; /* reachable at the exit that follows */
    msg = ub_xcalloc(len, 1, "naming the files");
    size_t used = (size_t)snprintf(msg, len, "these reports are of %d different jobs:", jobs);
    for (int j = 0; j < jobs; j++) {
        const char *id = NULL, *started = NULL;
        for (int i = 0; i < l->n; i++)
            if (group[i] == j) {
                id = id ? id : l->r[i].job_id;
                started = started ? started : l->r[i].run.started;
            }
        used += (size_t)snprintf(msg + used, len - used, "%s job %s%s%s%s:", j ? ";" : "", id ? id : "(no identity)",
                                 started ? " started " : "", started ? started : "", "");
        bool first = true;
        for (int i = 0; i < l->n; i++)
            if (group[i] == j) {
                used += (size_t)snprintf(msg + used, len - used, "%s %s", first ? "" : ",", l->r[i].path);
                first = false;
            }
    }
    die("%s (give one job's reports, or two run directories to compare them)", msg);
}

/* Reachable from here while the program runs, so that a one-line exit (die) leaves nothing a leak
 * checker calls lost. */
static loaded l;
static const char **args;
static int *group;
static rp_job job, two[2];

int main(int argc, char **argv)
{
    const char *dir = ".";
    int want_summary = 0, quiet = 0, n_args = 0;
    args = ub_xcalloc((size_t)argc, sizeof *args, "reading the arguments");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--list-policies")) {
            for (int id = 0; id < UB_POLICY_COUNT; id++)
                puts(ub_policy_name((ub_policy_id)id));
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
            die("%s: unknown option (usbyte-report --help)", a);
        } else {
            args[n_args++] = a;
        }
    }
    if (!n_args) {
        usage(stderr);
        return 2;
    }
    for (int i = 0; i < n_args; i++)
        load_arg(&l, args[i]);
    group = ub_xcalloc((size_t)(l.n ? l.n : 1), sizeof *group, "grouping reports");
    int jobs = rp_group_jobs(l.r, l.n, group);
    /* Two run directories, one whole job each: the comparison. */
    bool compare = jobs == 2 && n_args == 2 && is_dir(args[0]) && is_dir(args[1]);
    int job_of[2] = {-1, -1};
    for (int i = 0; compare && i < l.n; i++) {
        int side = l.r[i].arg == args[0] ? 0 : 1;
        if (job_of[side] < 0)
            job_of[side] = group[i];
        compare = job_of[side] == group[i];
    }
    compare = compare && job_of[0] != job_of[1];
    if (jobs > 1 && !compare)
        refuse_mix(&l, group, jobs);
    char err[2048];
    if (mkdirs(dir) != 0)
        die("%s: cannot create the directory: %s", dir, strerror(errno));
    if (jobs > 1) {
        rp_job *job = two;
        for (int j = 0; j < 2; j++) {
            /* The reports of args[j]. */
            int n = 0;
            rp_report *rs = ub_xcalloc((size_t)l.n, sizeof *rs, "grouping reports");
            for (int i = 0; i < l.n; i++)
                if (l.r[i].arg == args[j])
                    rs[n++] = l.r[i];
            if (rp_job_make(&job[j], rs, n, err, sizeof err) != 0)
                die("%s", err);
        }
        free(l.r);
        char path[4200];
        snprintf(path, sizeof path, "%s/usbyte-compare.html", dir);
        if (rp_write_compare(&job[0], args[0], &job[1], args[1], path, err, sizeof err) != 0)
            die("%s", err);
        if (want_summary)
            for (int j = 0; j < 2; j++) {
                printf("== %s %s\n", j ? "B:" : "A:", args[j]);
                summary(&job[j], stdout);
            }
        if (!quiet)
            printf("usbyte-report: wrote %s\n", path);
        int rc = job[0].n_problems || job[1].n_problems ? 1 : 0;
        rp_job_free(&job[0]);
        rp_job_free(&job[1]);
        free(group);
        free(args);
        return rc;
    }
    if (rp_job_make(&job, l.r, l.n, err, sizeof err) != 0)
        die("%s", err);
    char html[4200], trace[4200];
    snprintf(html, sizeof html, "%s/usbyte-report.html", dir);
    snprintf(trace, sizeof trace, "%s/usbyte-trace.json", dir);
    if (rp_write_html(&job, html, err, sizeof err) != 0 || rp_write_trace(&job, trace, err, sizeof err) != 0)
        die("%s", err);
    if (want_summary)
        summary(&job, stdout);
    if (!quiet)
        printf("usbyte-report: wrote %s and %s\n", html, trace);
    int rc = job.n_problems ? 1 : 0;
    rp_job_free(&job);
    free(group);
    free(args);
    return rc;
}
