/* The self-contained HTML page of a job's reports: no network, no external script, font or
 * style, so that it opens from a cluster's shared disk or an e-mail attachment.  First what the
 * ranks disagree on (if anything) and the run's details (when, where, what, with which
 * settings); then per communicator (report_html_comm.c) the answer to "is it helping, how much,
 * and if not, why", the iteration times, the ranks side by side, the plan, the timelines and the
 * profile.
 *
 * Every number copied from a report is written as an element with data-r (the rank), data-p (its
 * JSON place, "/"-separated from the document's root) and data-x (the factor applied for
 * display, e.g. 1000 for ms): a reader, or a test, can check what the page shows against the
 * file it came from.  Numbers the page derives carry data-v, their exact value. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "report_html.h"
#include "usbyte/atomic_write.h"
#include "usbyte/alloc.h"

/* One row of the run details: a text per rank (NULL: absent), said once with the ranks that have
 * it when they differ. */
static void distinct_row(rp_page *pg, const char *label, const char *id, const char *(*get)(const rp_report *, char *,
                                                                                          size_t))
{
    const rp_job *job = pg->job;
    char **vals = ub_xcalloc((size_t)job->n, sizeof *vals, "writing the page");
    char buf[2048];
    int distinct = 0;
    for (int i = 0; i < job->n; i++) {
        const char *v = get(&job->r[i], buf, sizeof buf);
        vals[i] = v ? strdup(v) : NULL;
    }
    bool *done = ub_xcalloc((size_t)job->n, sizeof *done, "writing the page"),
         *on = ub_xcalloc((size_t)job->n, sizeof *on, "writing the page");
    rp_out(pg, "<tr id=\"%s\"><th>%s</th><td>", id, label);
    for (int i = 0; i < job->n; i++) {
        if (done[i])
            continue;
        for (int j = 0; j < job->n; j++)
            done[j] |= on[j] = (!vals[i] && !vals[j]) || (vals[i] && vals[j] && !strcmp(vals[i], vals[j]));
        distinct++;
        rp_out(pg, "%s", distinct > 1 ? "<br>" : "");
        if (vals[i])
            esc(pg->f, vals[i]);
        else
            rp_out(pg, "<span class=\"note\">not in the report</span>");
        if (job->n > 1) {
            int count = 0;
            for (int j = 0; j < job->n; j++)
                count += on[j];
            if (count < job->n || distinct > 1) {
                rp_out(pg, " <span class=\"note\">(rank%s ", count == 1 ? "" : "s");
                rp_rank_list(pg, on);
                rp_out(pg, ")</span>");
            }
        }
    }
    rp_out(pg, "</td></tr>\n");
    for (int i = 0; i < job->n; i++)
        free(vals[i]);
    free(vals);
    free(done);
    free(on);
}

static const char *get_host(const rp_report *r, char *b, size_t n) { return r->run.host ? (snprintf(b, n, "%s", r->run.host), b) : NULL; }
static const char *get_command(const rp_report *r, char *b, size_t n)
{
    return r->run.command ? (snprintf(b, n, "%s", r->run.command), b) : NULL;
}
static const char *get_gpu(const rp_report *r, char *b, size_t n)
{
    if (!r->run.gpu)
        return NULL;
    snprintf(b, n, "%s", r->run.gpu);
    return b;
}
static const char *get_versions(const rp_report *r, char *b, size_t n)
{
    char nccl[32], rt[32], drv[32];
    snprintf(b, n, "usbyte %s \xc2\xb7 NCCL %s%s%s%s \xc2\xb7 CUDA runtime %s%s%s%s \xc2\xb7 driver %s",
             r->usbyte_version ? r->usbyte_version : "?", rp_version_text(r->nccl, nccl, sizeof nccl, 1),
             r->nccl_library ? " (" : "", r->nccl_library ? r->nccl_library : "", r->nccl_library ? ")" : "",
             rp_version_text(r->cuda_runtime, rt, sizeof rt, 0), r->cudart_library ? " (" : "",
             r->cudart_library ? r->cudart_library : "", r->cudart_library ? ")" : "",
             rp_version_text(r->cuda_driver, drv, sizeof drv, 0));
    return b;
}

/* Started: the earliest rank, and how far apart the ranks started. */
static void started_row(rp_page *pg)
{
    const rp_job *job = pg->job;
    int first = -1;
    double lo = NAN, hi = NAN;
    for (int i = 0; i < job->n; i++) {
        double t = job->r[i].run.started_unix;
        if (!isfinite(t))
            continue;
        if (first < 0 || t < lo)
            lo = t, first = i;
        if (!(t <= hi))
            hi = t;
    }
    rp_out(pg, "<tr id=\"run-started\"><th>started</th><td>");
    if (first < 0 || !job->r[first].run.started) {
        rp_out(pg, "<span class=\"note\">not in the reports</span></td></tr>\n");
        return;
    }
    esc(pg->f, job->r[first].run.started);
    rp_out(pg, " (UTC, rank %d", job->r[first].rank);
    if (job->n > 1) {
        rp_out(pg, "; the last rank ");
        rp_derived(pg, "span", NULL, 1, 3, hi - lo);
        rp_out(pg, " s later");
    }
    rp_out(pg, ")</td></tr>\n");
}

/* One setting: its value and source, or, where the ranks differ, each value with its ranks. */
static void setting(rp_page *pg, const char *key, const char *src)
{
    const rp_job *job = pg->job;
    char a[600], b[600];
    const char *v0 = rp_setting(&job->r[0], key, a, sizeof a);
    bool differ = false;
    for (int i = 1; i < job->n; i++) {
        const char *v = rp_setting(&job->r[i], key, b, sizeof b);
        differ |= !((!v && !v0) || (v && v0 && !strcmp(v, v0)));
    }
    rp_out(pg, "<code%s>", differ ? " class=\"diff\"" : "");
    esc(pg->f, key);
    rp_out(pg, "=");
    if (!differ) {
        esc(pg->f, v0 ? v0 : "?");
        rp_out(pg, "</code> <span class=\"note\">(");
        esc(pg->f, src ? src : "source unknown");
        rp_out(pg, ")</span>");
        return;
    }
    bool *done = ub_xcalloc((size_t)job->n, sizeof *done, "writing the page"),
         *on = ub_xcalloc((size_t)job->n, sizeof *on, "writing the page");
    bool first = true;
    for (int i = 0; i < job->n; i++) {
        if (done[i])
            continue;
        const char *vi = rp_setting(&job->r[i], key, a, sizeof a);
        char vis[600];
        snprintf(vis, sizeof vis, "%s", vi ? vi : "?");
        for (int j = 0; j < job->n; j++) {
            const char *vj = rp_setting(&job->r[j], key, b, sizeof b);
            done[j] |= on[j] = !strcmp(vj ? vj : "?", vis);
        }
        int count = 0;
        for (int j = 0; j < job->n; j++)
            count += on[j];
        rp_out(pg, "%s", first ? "" : " | ");
        esc(pg->f, vis);
        rp_out(pg, " (rank%s ", count > 1 ? "s" : "");
        rp_rank_list(pg, on);
        rp_out(pg, ")");
        first = false;
    }
    rp_out(pg, "</code>");
    free(done);
    free(on);
}

/* The settings: each USBYTE_ variable's value and where it came from; a value that was refused
 * is shown with the default used instead. */
static void settings_row(rp_page *pg)
{
    const rp_job *job = pg->job;
    const rp_report *r0 = &job->r[0];
    rp_out(pg, "<tr id=\"run-settings\"><th>settings</th><td>");
    if (!r0->config) {
        rp_out(pg, "<span class=\"note\">not in the report</span></td></tr>\n");
        return;
    }
    const json_t *sources = json_object_get(r0->config, "sources");
    const char *key;
    json_t *val;
    int from_env = 0, shown = 0;
    /* Set ones first, the defaults behind a disclosure. */
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1)
            rp_out(pg, "<details><summary>the defaults</summary>");
        json_object_foreach((json_t *)r0->config, key, val) {
            if (strncmp(key, "USBYTE_", 7) != 0)
                continue;
            const char *src = json_string_value(json_object_get(sources, key));
            bool set = src && strcmp(src, "default") != 0;
            for (int i = 1; i < job->n && !set; i++) {
                const json_t *si = job->r[i].config ? json_object_get(job->r[i].config, "sources") : NULL;
                const char *s2 = json_string_value(json_object_get(si, key));
                set = s2 && strcmp(s2, "default") != 0;
            }
            if (set != (pass == 0))
                continue;
            from_env += pass == 0 && src && !strcmp(src, "env");
            rp_out(pg, "%s", shown++ ? " &middot; " : "");
            setting(pg, key, src);
        }
        if (pass == 1)
            rp_out(pg, "</details>");
        else if (!from_env)
            rp_out(pg, "all defaults (none set in the environment)");
    }
    rp_out(pg, "</td></tr>\n");
    /* Refused values: shown where they cannot be missed, once per variable and value with the
     * ranks that gave it. */
    bool *on = ub_xcalloc((size_t)job->n, sizeof *on, "writing the page");
    for (int i = 0; i < job->n; i++) {
        const json_t *ign = job->r[i].config ? json_object_get(job->r[i].config, "ignored") : NULL;
        json_object_foreach((json_t *)ign, key, val) {
            const char *given = json_is_string(val) ? json_string_value(val) : "?";
            bool earlier = false;
            for (int j = 0; j < job->n; j++) {
                const json_t *g = job->r[j].config ? json_object_get(json_object_get(job->r[j].config, "ignored"), key)
                                                   : NULL;
                on[j] = g && !strcmp(json_is_string(g) ? json_string_value(g) : "?", given);
                earlier |= on[j] && j < i;
            }
            if (earlier)
                continue;
            char buf[600];
            int count = 0;
            for (int j = 0; j < job->n; j++)
                count += on[j];
            rp_out(pg, "<tr class=\"ignored\"><th class=\"diff\">refused</th><td class=\"diff\">rank%s ",
                   count > 1 ? "s" : "");
            rp_rank_list(pg, on);
            rp_out(pg, ": <code>");
            esc(pg->f, key);
            rp_out(pg, "=");
            esc(pg->f, given);
            rp_out(pg, "</code> is not a valid value: <code>");
            esc(pg->f, rp_setting(&job->r[i], key, buf, sizeof buf) ? buf : "?");
            rp_out(pg, "</code> was used instead</td></tr>\n");
        }
    }
    free(on);
}

static void run_details(rp_page *pg)
{
    rp_out(pg, "<table class=\"run\" id=\"run\">\n");
    started_row(pg);
    distinct_row(pg, "hosts", "run-hosts", get_host);
    distinct_row(pg, "command", "run-command", get_command);
    distinct_row(pg, "GPU", "run-gpu", get_gpu);
    distinct_row(pg, "versions", "run-versions", get_versions);
    settings_row(pg);
    rp_out(pg, "</table>\n");
}

static void header(rp_page *pg)
{
    const rp_job *job = pg->job;
    const rp_report *r0 = &job->r[0];
    rp_out(pg, "<header><h1>usbyte report</h1>\n<p id=\"job\">%d of %d rank%s (", job->n, job->world_size,
           job->world_size == 1 ? "" : "s");
    bool *all = ub_xcalloc((size_t)job->n, sizeof *all, "writing the page");
    for (int i = 0; i < job->n; i++)
        all[i] = true;
    rp_rank_list(pg, all);
    free(all);
    rp_out(pg, ") &middot; mode ");
    esc(pg->f, r0->mode ? r0->mode : "?");
    rp_out(pg, " &middot; policy ");
    esc(pg->f, r0->policy ? r0->policy : "?");
    if (r0->job_id) {
        rp_out(pg, " &middot; job ");
        esc(pg->f, r0->job_id);
    }
    rp_out(pg, "</p></header>\n<section>\n");
    if (job->n_problems) {
        rp_out(pg, "<div class=\"box bad\" id=\"consistency\" data-problems=\"%d\"><span class=\"big\">The ranks "
                   "disagree</span><ul>\n", job->n_problems);
        for (int i = 0; i < job->n_problems; i++) {
            rp_out(pg, "<li class=\"diff\">");
            esc(pg->f, job->problems[i].text);
            rp_out(pg, "</li>\n");
        }
        rp_out(pg, "</ul></div>\n");
    } else if (job->n > 1) {
        rp_out(pg, "<div class=\"box ok\" id=\"consistency\" data-problems=\"0\">All %d ranks run with the same "
                   "settings and hold the same profile, verdict and plan.</div>\n", job->n);
    } else {
        rp_out(pg, "<div class=\"box warn\" id=\"consistency\" data-problems=\"0\">One rank's report: give every "
                   "rank's to check that they agree.</div>\n");
    }
    if (job->n < job->world_size) {
        rp_out(pg, "<div class=\"box warn\" id=\"missing\">No report of rank%s", job->world_size - job->n > 1 ? "s" : "");
        int first = 1;
        for (int r = 0; r < job->world_size; r++) {
            int have = 0;
            for (int i = 0; i < job->n; i++)
                have |= job->r[i].rank == r;
            if (!have) {
                rp_out(pg, "%s%d", first ? " " : ", ", r);
                first = 0;
            }
        }
        rp_out(pg, ".</div>\n");
    }
    if (!job->n_comm_ids)
        rp_out(pg, "<div class=\"box bad\"><span class=\"big\">No communicator was seen</span>: the job made no NCCL "
                   "call that usbyte intercepted (run usbyte-doctor on the framework's libraries)</div>\n");
    run_details(pg);
    rp_out(pg, "</section>\n");
}

int rp_write_html(const rp_job *job, const char *path, char *err, size_t errlen)
{
    /* Built in memory, then written as the report is (ub_write_file_atomic). */
    ub_memtext t;
    FILE *f = ub_memtext_open(&t, path, err, errlen);
    if (!f)
        return -1;
    rp_page pg = {f, job};
    char title[64];
    snprintf(title, sizeof title, "usbyte report: %d rank%s", job->world_size, job->world_size == 1 ? "" : "s");
    rp_page_open(&pg, title);
    header(&pg);
    for (int k = 0; k < job->n_comm_ids; k++)
        rp_html_comm(&pg, job->comm_ids[k]);
    rp_out(&pg, "<footer><p>Written by usbyte-report from");
    for (int i = 0; i < job->n; i++) {
        rp_out(&pg, "%s <code>", i ? "," : "");
        esc(f, job->r[i].path);
        rp_out(&pg, "</code> (rank %d)", job->r[i].rank);
    }
    rp_out(&pg, ". Click a table's header to sort it; hover a timeline's shape for its numbers.</p></footer>\n");
    rp_page_close(&pg);
    return ub_memtext_write(&t, path, ferror(f), err, errlen);
}
