/* Two runs side by side (usbyte-report A/ B/): what changed between them (settings, versions,
 * hosts, the command) and, per communicator (matched by creation order), the measured
 * iterations and speedups, the plans and the profiles.  Each value is taken from the run's
 * reference report (its first rank holding the communicator); cells carry data-v, the exact
 * value, and ids naming the communicator, the row and the run. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "report_html.h"
#include "usbyte/atomic_write.h"
#include "usbyte/alloc.h"

#define MIB (1024.0 * 1024.0)

static void text_cell(rp_page *pg, const char *t, bool differs)
{
    rp_out(pg, "<td%s>", differs ? " class=\"diff\"" : "");
    if (t)
        esc(pg->f, t);
    else
        rp_out(pg, "<span class=\"note\">&#8211;</span>");
    rp_out(pg, "</td>");
}

static bool same_text(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

/* A row "what | A | B" of texts, marked when they differ (unless `noted` is false: a start time
 * always differs), with an empty fourth cell in the communicators' tables; returns whether they
 * differ and are noted. */
static bool text_row4(rp_page *pg, const char *id, const char *what, const char *a, const char *b, bool noted, bool four)
{
    bool differs = noted && !same_text(a, b);
    rp_out(pg, "<tr id=\"%s\"%s><th>", id, differs ? " class=\"changed\"" : "");
    esc(pg->f, what);
    rp_out(pg, "</th>");
    text_cell(pg, a, false);
    text_cell(pg, b, differs);
    rp_out(pg, "%s</tr>\n", four ? "<td></td>" : "");
    return differs;
}

static bool text_row(rp_page *pg, const char *id, const char *what, const char *a, const char *b)
{
    return text_row4(pg, id, what, a, b, true, false);
}

/* Settings that change nothing the job does or measures: where the report and the log go. */
static bool incidental(const char *key)
{
    return !strcmp(key, "USBYTE_REPORT") || !strcmp(key, "USBYTE_LOG_FILE") || !strcmp(key, "USBYTE_DUMP_CONFIG");
}

/* A row of numbers shown times scale with dec decimals, and B's change relative to A. */
static void num_row(rp_page *pg, int comm, const char *key, const char *what, double a, double b, double scale, int dec)
{
    rp_out(pg, "<tr id=\"cmp-%d-%s\"><th>", comm, key);
    esc(pg->f, what);
    rp_out(pg, "</th>");
    rp_derived(pg, "td", "class=\"n\" data-run=\"a\"", scale, dec, a);
    rp_derived(pg, "td", "class=\"n\" data-run=\"b\"", scale, dec, b);
    rp_out(pg, "<td class=\"n\">");
    if (isfinite(a) && isfinite(b) && a != 0)
        rp_out(pg, "%+.1f%%", 100.0 * (b / a - 1.0));
    rp_out(pg, "</td></tr>\n");
}

static char *versions_text(const rp_report *r)
{
    char nccl[32], rt[32], drv[32], *t = NULL;
    if (asprintf(&t, "usbyte %s, NCCL %s, CUDA runtime %s, driver %s", r->usbyte_version ? r->usbyte_version : "?",
                 rp_version_text(r->nccl, nccl, sizeof nccl, 1), rp_version_text(r->cuda_runtime, rt, sizeof rt, 0),
                 rp_version_text(r->cuda_driver, drv, sizeof drv, 0)) < 0)
        t = NULL;
    return t;
}

/* The hosts of a run, each once. */
static char *hosts_text(const rp_job *j)
{
    size_t len = 1;
    for (int i = 0; i < j->n; i++)
        len += (j->r[i].run.host ? strlen(j->r[i].run.host) : 1) + 2;
    char *t = ub_xcalloc(len, 1, "comparing");
    for (int i = 0; i < j->n; i++) {
        const char *h = j->r[i].run.host ? j->r[i].run.host : "?";
        bool seen = false;
        for (int k = 0; k < i; k++)
            seen |= same_text(j->r[k].run.host ? j->r[k].run.host : "?", h);
        if (!seen) {
            if (t[0])
                strcat(t, ", ");
            strcat(t, h);
        }
    }
    return t;
}

static void what_changed(rp_page *pg, const rp_job *a, const rp_job *b)
{
    const rp_report *ra = &a->r[0], *rb = &b->r[0];
    rp_out(pg, "<h2>What changed</h2>\n<table id=\"changes\"><thead><tr><th></th><th>A</th><th>B</th></tr></thead>"
               "<tbody>\n");
    char wa[32], wb[32];
    snprintf(wa, sizeof wa, "%d", a->world_size);
    snprintf(wb, sizeof wb, "%d", b->world_size);
    int changed = 0;
    changed += text_row(pg, "chg-ranks", "ranks", wa, wb);
    char *ha = hosts_text(a), *hb = hosts_text(b);
    changed += text_row(pg, "chg-hosts", "hosts", ha, hb);
    free(ha);
    free(hb);
    text_row4(pg, "chg-started", "started (UTC, rank 0)", ra->run.started, rb->run.started, false, false);
    changed += text_row(pg, "chg-command", "command (rank 0)", ra->run.command, rb->run.command);
    changed += text_row(pg, "chg-gpu", "GPU (rank 0)", ra->run.gpu, rb->run.gpu);
    char *va = versions_text(ra), *vb = versions_text(rb);
    changed += text_row(pg, "chg-versions", "versions", va, vb);
    free(va);
    free(vb);
    changed += text_row(pg, "chg-nccl-library", "NCCL library", ra->nccl_library, rb->nccl_library);
    /* Every USBYTE_ setting either run has. */
    const json_t *cfgs[2] = {ra->config, rb->config};
    for (int side = 0; side < 2; side++) {
        const char *key;
        json_t *val;
        json_object_foreach((json_t *)cfgs[side], key, val) {
            if (strncmp(key, "USBYTE_", 7) != 0 || incidental(key) ||
                (side == 1 && cfgs[0] && json_object_get(cfgs[0], key)))
                continue;
            char x[600], y[600], id[128];
            const char *sa = rp_setting(ra, key, x, sizeof x), *sb = rp_setting(rb, key, y, sizeof y);
            if (same_text(sa, sb))
                continue;
            snprintf(id, sizeof id, "chg-%s", key);
            changed += text_row(pg, id, key, sa, sb);
        }
    }
    rp_out(pg, "</tbody></table>\n<p id=\"changes-count\" data-changed=\"%d\">%s</p>\n", changed,
           changed ? "Rows in red differ; settings that are the same in both runs (and where the reports and logs "
                     "went) are not listed."
                   : "Nothing in the runs' details differs.");
}

static double pol(const rp_comm *c, const char *name)
{
    for (int i = 0; c && i < c->n_policies; i++)
        if (!strcmp(c->policies[i].name, name))
            return c->policies[i].iteration;
    return NAN;
}

static double total_bytes(const rp_comm *c)
{
    if (!c || !c->have_profile)
        return NAN;
    double t = 0;
    for (int k = 0; k < c->profile.n_calls; k++)
        t += (double)c->profile.calls[k].bytes;
    return t;
}

static const char *outcome_word(const rp_job *j, const rp_comm *c)
{
    if (!c)
        return NULL;
    int ref_i = 0;
    rp_job_reference(j, c->index, &ref_i);
    const char *why;
    int bad;
    rp_outcome o = rp_comm_outcome(&j->r[ref_i], c, &why, &bad);
    return o == RP_SCHEDULED ? "Scheduled" : o == RP_OBSERVED ? "Observed" : "Not scheduled";
}

static void comm_compare(rp_page *pg, const rp_job *a, const rp_job *b, int id)
{
    const rp_comm *ca = rp_job_reference(a, id, NULL), *cb = rp_job_reference(b, id, NULL);
    rp_out(pg, "<section class=\"comm\" id=\"cmp-comm-%d\"><h2>Communicator %d</h2>\n", id, id);
    if (!ca || !cb) {
        rp_out(pg, "<p class=\"diff\">Only run %s has communicator %d.</p></section>\n", ca ? "A" : "B", id);
        return;
    }
    rp_out(pg, "<table id=\"cmp-%d\"><thead><tr><th></th><th>A</th><th>B</th><th>B vs A</th></tr></thead><tbody>\n", id);
    char idt[64];
    snprintf(idt, sizeof idt, "cmp-%d-outcome", id);
    text_row4(pg, idt, "outcome", outcome_word(a, ca), outcome_word(b, cb), true, true);
    snprintf(idt, sizeof idt, "cmp-%d-state", id);
    text_row4(pg, idt, "state", ca->state, cb->state, true, true);
    num_row(pg, id, "calls", "allreduces per iteration", (double)ca->calls_per_iteration, (double)cb->calls_per_iteration,
            1, 0);
    num_row(pg, id, "measured", "measured iteration, no plan (ms)", ca->measured_iteration > 0 ? ca->measured_iteration : NAN,
            cb->measured_iteration > 0 ? cb->measured_iteration : NAN, 1e3, 3);
    num_row(pg, id, "measured-plan", "measured iteration, plan running (ms)",
            ca->schedule.present ? ca->schedule.measured_iteration : NAN,
            cb->schedule.present ? cb->schedule.measured_iteration : NAN, 1e3, 3);
    num_row(pg, id, "measured-speedup", "measured speedup", ca->schedule.present ? ca->schedule.measured_speedup : NAN,
            cb->schedule.present ? cb->schedule.measured_speedup : NAN, 1, 3);
    num_row(pg, id, "wfbp", "predicted iteration, wfbp (ms)", pol(ca, "wfbp"), pol(cb, "wfbp"), 1e3, 3);
    num_row(pg, id, "plan", "predicted iteration, chosen plan (ms)", ca->have_plan ? ca->plan_reported : NAN,
            cb->have_plan ? cb->plan_reported : NAN, 1e3, 3);
    num_row(pg, id, "predicted-speedup", "predicted speedup over wfbp",
            ca->have_plan ? pol(ca, "wfbp") / ca->plan_reported : NAN,
            cb->have_plan ? pol(cb, "wfbp") / cb->plan_reported : NAN, 1, 3);
    snprintf(idt, sizeof idt, "cmp-%d-policy", id);
    text_row4(pg, idt, "chosen policy", ca->have_plan ? ca->plan.policy : NULL, cb->have_plan ? cb->plan.policy : NULL,
              true, true);
    num_row(pg, id, "blocks", "blocks of the plan", ca->have_plan ? (double)ca->plan.n_blocks : NAN,
            cb->have_plan ? (double)cb->plan.n_blocks : NAN, 1, 0);
    num_row(pg, id, "bytes", "bytes per iteration (MiB)", total_bytes(ca), total_bytes(cb), 1.0 / MIB, 3);
    num_row(pg, id, "alpha", "fitted startup alpha (\xc2\xb5s)", ca->have_fit ? ca->alpha : NAN, cb->have_fit ? cb->alpha : NAN,
            1e6, 1);
    num_row(pg, id, "bandwidth", "fitted bandwidth (GB/s)", ca->have_fit && ca->beta > 0 ? 1 / ca->beta : NAN,
            cb->have_fit && cb->beta > 0 ? 1 / cb->beta : NAN, 1e-9, 3);
    num_row(pg, id, "compute", "compute alone (ms)", rp_compute_alone(ca), rp_compute_alone(cb), 1e3, 3);
    /* The plans themselves: the same blocks, or not. */
    json_t *pa = json_deep_copy(json_object_get(ca->json, "plan")), *pb = json_deep_copy(json_object_get(cb->json, "plan"));
    if (json_is_object(pa))
        json_object_del(pa, "plan_seconds");
    if (json_is_object(pb))
        json_object_del(pb, "plan_seconds");
    bool same_plan = (json_is_null(pa) || !pa) ? (json_is_null(pb) || !pb) : (pb && json_equal(pa, pb));
    json_decref(pa);
    json_decref(pb);
    rp_out(pg, "<tr id=\"cmp-%d-same-plan\"><th>plan</th><td colspan=\"3\"%s>%s</td></tr>\n", id,
           same_plan ? "" : " class=\"diff\"", same_plan ? "the same blocks in both runs" : "the plans differ");
    rp_out(pg, "</tbody></table></section>\n");
}

int rp_write_compare(const rp_job *a, const char *label_a, const rp_job *b, const char *label_b, const char *path,
                     char *err, size_t errlen)
{
    ub_memtext t;
    FILE *f = ub_memtext_open(&t, path, err, errlen);
    if (!f)
        return -1;
    rp_page pg = {f, a};
    rp_page_open(&pg, "usbyte: two runs compared");
    rp_out(&pg, "<header><h1>usbyte: two runs compared</h1>\n<p id=\"runs\">A: <code>");
    esc(f, label_a);
    rp_out(&pg, "</code> (%d of %d ranks) &middot; B: <code>", a->n, a->world_size);
    esc(f, label_b);
    rp_out(&pg, "</code> (%d of %d ranks)</p></header>\n<section>\n", b->n, b->world_size);
    for (int side = 0; side < 2; side++) {
        const rp_job *j = side ? b : a;
        if (j->n_problems)
            rp_out(&pg, "<div class=\"box bad\" id=\"problems-%c\">The ranks of run %c disagree (%d problem%s): its "
                        "own page says what differs.</div>\n",
                   side ? 'b' : 'a', side ? 'B' : 'A', j->n_problems, j->n_problems == 1 ? "" : "s");
    }
    what_changed(&pg, a, b);
    rp_out(&pg, "</section>\n");
    /* Communicators matched by creation order: every index either run has. */
    int *ids = ub_xcalloc((size_t)(a->n_comm_ids + b->n_comm_ids + 1), sizeof *ids, "comparing");
    int n = 0;
    for (int side = 0; side < 2; side++) {
        const rp_job *j = side ? b : a;
        for (int k = 0; k < j->n_comm_ids; k++) {
            bool seen = false;
            for (int i = 0; i < n; i++)
                seen |= ids[i] == j->comm_ids[k];
            if (!seen)
                ids[n++] = j->comm_ids[k];
        }
    }
    for (int i = 0; i < n; i++)
        comm_compare(&pg, a, b, ids[i]);
    free(ids);
    rp_out(&pg, "<footer><p>Written by usbyte-report from two runs; each run's own page (usbyte-report DIR) has the "
                "details.</p></footer>\n");
    rp_page_close(&pg);
    return ub_memtext_write(&t, path, ferror(f), err, errlen);
}
