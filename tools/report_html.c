/* The self-contained HTML page of a job's reports: no network, no external script, font or
 * style, so that it opens from a cluster's shared disk or an e-mail attachment.  The verdict of
 * every communicator comes first; then the link, the iteration times as a bar chart, the ranks
 * side by side, the chosen plan, the timelines (tools/sim_svg.c, as usbyte-sim --svg draws
 * them) and the profile.
 *
 * Every number copied from a report is written as an element with data-r (the rank), data-p (its
 * JSON place, "/"-separated from the document's root) and data-x (the factor applied for
 * display, e.g. 1000 for ms): a reader, or a test, can check what the page shows against the
 * file it came from. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "usbyte/atomic_write.h"
#include "usbyte/alloc.h"
#include "usbyte/model.h"

#define esc sim_xml_text

static const char STYLE[] =
    "body{font:14px/1.4 sans-serif;margin:0;color:#212121;background:#fafafa}"
    "header,section,footer{max-width:1240px;margin:0 auto;padding:8px 16px}"
    "header{background:#263238;color:#eceff1;max-width:none}header>*{max-width:1240px;margin:4px auto}"
    "h1{font-size:20px;margin:6px auto}h2{font-size:18px;margin:18px 0 6px;border-bottom:2px solid #90a4ae}"
    "h3{font-size:15px;margin:14px 0 4px}"
    ".ok{background:#e8f5e9;border-left:6px solid #2e7d32}.bad{background:#ffebee;border-left:6px solid #c62828}"
    ".warn{background:#fff8e1;border-left:6px solid #f9a825}"
    ".box{padding:6px 12px;margin:6px 0;color:#212121}.big{font-size:17px;font-weight:bold}"
    ".hint{color:#1b5e20;margin-left:12px}.hint code,code{background:#eceff1;padding:0 3px}"
    ".diff{color:#c62828;font-weight:bold}.same{color:#2e7d32}"
    ".row{display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start}.row>div{flex:1 1 480px}"
    "table{border-collapse:collapse;margin:4px 0;background:white}"
    "td,th{border:1px solid #cfd8dc;padding:2px 7px}th{background:#eceff1;text-align:left}"
    "th[title]{text-decoration:underline dotted}th.sort{cursor:pointer}th.sort:hover{background:#cfd8dc}"
    "td.n{text-align:right;font-variant-numeric:tabular-nums}"
    "tr.chosen td{background:#e3f2fd}svg{max-width:100%;height:auto}"
    "details{margin:6px 0}summary{cursor:pointer;font-weight:bold}";

/* Sorting a table by a clicked header: the only script, inline like the style. */
static const char SCRIPT[] =
    "document.querySelectorAll('table.sortable th').forEach(function(th){th.classList.add('sort');"
    "th.addEventListener('click',function(){"
    "var tb=th.closest('table').tBodies[0],i=th.cellIndex,d=th.dataset.dir==='1'?-1:1;th.dataset.dir=d===1?'1':'-1';"
    "var rows=Array.prototype.slice.call(tb.rows);"
    "rows.sort(function(a,b){var x=a.cells[i].textContent,y=b.cells[i].textContent,p=parseFloat(x),q=parseFloat(y);"
    "return (isNaN(p)||isNaN(q)?x.localeCompare(y):p-q)*d;});"
    "rows.forEach(function(r){tb.appendChild(r);});});});";

typedef struct page {
    FILE *f;
    const rp_job *job;
} page;

static void out(page *pg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out(page *pg, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(pg->f, fmt, ap);
    va_end(ap);
}

/* A number from rank `rank`'s report at JSON place `where` (printf-formatted), shown times
 * `scale` with `dec` decimals (dec < 0: %.4e), in element `tag` with extra attributes. */
static void num(page *pg, const char *tag, const char *attrs, int rank, double scale, int dec, double v,
                const char *where, ...) __attribute__((format(printf, 8, 9)));
static void num(page *pg, const char *tag, const char *attrs, int rank, double scale, int dec, double v,
                const char *where, ...)
{
    char p[256];
    va_list ap;
    va_start(ap, where);
    vsnprintf(p, sizeof p, where, ap);
    va_end(ap);
    if (!isfinite(v)) {
        out(pg, "<%s%s%s>&#8211;</%s>", tag, attrs ? " " : "", attrs ? attrs : "", tag);
        return;
    }
    out(pg, "<%s%s%s data-r=\"%d\" data-p=\"%s\" data-x=\"%g\">", tag, attrs ? " " : "", attrs ? attrs : "", rank, p,
        scale);
    if (dec < 0)
        out(pg, "%.4e", v * scale);
    else
        out(pg, "%.*f", dec, v * scale);
    out(pg, "</%s>", tag);
}

static int comm_pos(const rp_report *r, const rp_comm *c)
{
    return (int)(c - r->comms);
}

static const char *version_text(long v, char *buf, size_t len, int nccl)
{
    if (v < 0)
        snprintf(buf, len, "?");
    else if (nccl) /* NCCL_VERSION_CODE: major*10000 + minor*100 + patch */
        snprintf(buf, len, "%ld.%ld.%ld", v / 10000, v / 100 % 100, v % 100);
    else /* CUDA: major*1000 + minor*10 */
        snprintf(buf, len, "%ld.%ld", v / 1000, v % 1000 / 10);
    return buf;
}

/* The problems across ranks of the whole job, written as a list; returns how many. */
static int job_problems(page *pg, int write)
{
    const rp_job *job = pg->job;
    int n = 0;
    const rp_report *r0 = &job->r[0];
    for (int i = 1; i < job->n; i++) {
        const rp_report *r = &job->r[i];
        const char *a[] = {r0->mode, r0->policy}, *b[] = {r->mode, r->policy}, *names[] = {"USBYTE_MODE", "USBYTE_POLICY"};
        for (int k = 0; k < 2; k++)
            if (strcmp(a[k] ? a[k] : "", b[k] ? b[k] : "") != 0) {
                n++;
                if (write) {
                    out(pg, "<li class=\"diff\">rank %d runs %s=", r->rank, names[k]);
                    esc(pg->f, b[k] ? b[k] : "?");
                    out(pg, ", rank %d ", r0->rank);
                    esc(pg->f, a[k] ? a[k] : "?");
                    out(pg, ": the configuration must be the same on every rank</li>\n");
                }
            }
    }
    for (int k = 0; k < job->n_comm_ids; k++) {
        int id = job->comm_ids[k], ref_i;
        const rp_comm *ref = rp_job_reference(job, id, &ref_i);
        for (int i = 0; i < job->n; i++) {
            const rp_comm *c = rp_comm_find(&job->r[i], id);
            int bits = c ? rp_comm_diff(ref, c) : 0;
            if (c && !bits)
                continue;
            n++;
            if (!write)
                continue;
            if (!c) {
                out(pg, "<li class=\"diff\">rank %d has no communicator %d</li>\n", job->r[i].rank, id);
                continue;
            }
            char what[128];
            rp_diff_text(bits, what, sizeof what);
            out(pg, "<li class=\"diff\">communicator %d: rank %d's %s differ%s from rank %d's (they are agreed: "
                    "a difference is a bug)</li>\n",
                id, job->r[i].rank, what, strchr(what, ',') ? "" : "s", job->r[ref_i].rank);
        }
    }
    return n;
}

static void header(page *pg)
{
    const rp_job *job = pg->job;
    const rp_report *r0 = &job->r[0];
    char nccl[32], rt[32], drv[32];
    out(pg, "<header><h1>usbyte report</h1>\n<p id=\"job\">%d of %d rank%s (", job->n, job->world_size,
        job->world_size == 1 ? "" : "s");
    for (int i = 0; i < job->n; i++)
        out(pg, "%s%d", i ? ", " : "", job->r[i].rank);
    out(pg, ") &middot; usbyte ");
    esc(pg->f, r0->usbyte_version ? r0->usbyte_version : "?");
    out(pg, " &middot; NCCL %s &middot; CUDA runtime %s, driver %s &middot; mode ",
        version_text(r0->nccl, nccl, sizeof nccl, 1), version_text(r0->cuda_runtime, rt, sizeof rt, 0),
        version_text(r0->cuda_driver, drv, sizeof drv, 0));
    esc(pg->f, r0->mode ? r0->mode : "?");
    out(pg, " &middot; policy ");
    esc(pg->f, r0->policy ? r0->policy : "?");
    out(pg, "</p></header>\n<section>\n");
    int problems = job_problems(pg, 0);
    if (problems) {
        out(pg, "<div class=\"box bad\" id=\"consistency\" data-problems=\"%d\"><span class=\"big\">The ranks "
                "disagree</span><ul>\n", problems);
        job_problems(pg, 1);
        out(pg, "</ul></div>\n");
    } else if (job->n > 1) {
        out(pg, "<div class=\"box ok\" id=\"consistency\" data-problems=\"0\">All %d ranks hold the same profile, "
                "verdict and plan.</div>\n", job->n);
    } else {
        out(pg, "<div class=\"box warn\" id=\"consistency\" data-problems=\"0\">One rank's report: give every "
                "rank's to check that they agree.</div>\n");
    }
    if (job->n < job->world_size) {
        out(pg, "<div class=\"box warn\" id=\"missing\">No report of rank%s", job->world_size - job->n > 1 ? "s" : "");
        int first = 1;
        for (int r = 0; r < job->world_size; r++) {
            int have = 0;
            for (int i = 0; i < job->n; i++)
                have |= job->r[i].rank == r;
            if (!have) {
                out(pg, "%s%d", first ? " " : ", ", r);
                first = 0;
            }
        }
        out(pg, ".</div>\n");
    }
    if (!job->n_comm_ids)
        out(pg, "<div class=\"box bad\"><span class=\"big\">No communicator was seen</span>: the job made no NCCL "
                "call that usbyte intercepted (run usbyte-doctor on the framework's libraries)</div>\n");
    out(pg, "</section>\n");
}

static void verdict_box(page *pg, const rp_comm *c, int rank, int pos)
{
    const rp_schedule *s = &c->schedule;
    const char *cls = !strcmp(c->state, "planned") || !strcmp(c->state, "schedule") ? (c->schedulable ? "ok" : "bad")
                                                                                    : "warn";
    out(pg, "<div class=\"box %s verdict\" id=\"verdict-%d\"><span class=\"big\">", cls, c->index);
    if (s->present)
        out(pg, "Scheduled");
    else
        out(pg, "%s", c->schedulable ? "Schedulable" : "Not schedulable");
    out(pg, "</span> &middot; state <b>");
    esc(pg->f, c->state);
    out(pg, "</b>");
    if (c->state_reason) {
        out(pg, ": ");
        esc(pg->f, c->state_reason);
    }
    if (s->present) {
        out(pg, " &middot; measured speedup ");
        num(pg, "b", NULL, rank, 1, 3, s->measured_speedup, "comms/%d/schedule/measured_speedup", pos);
        out(pg, "x (predicted ");
        num(pg, "span", NULL, rank, 1, 3, s->predicted_speedup, "comms/%d/schedule/predicted_speedup", pos);
        out(pg, "x)");
    } else if (c->have_plan && c->n_policies) {
        double wfbp = NAN;
        for (int i = 0; i < c->n_policies; i++)
            if (!strcmp(c->policies[i].name, "wfbp"))
                wfbp = c->policies[i].iteration;
        out(pg, " &middot; plan ");
        esc(pg->f, c->plan.policy);
        out(pg, " predicts %.2fx over NCCL's own order (wfbp)", wfbp / c->plan.iteration);
    }
    const char *sr_hint = rp_hint(c->state_reason);
    if (c->n_reasons || sr_hint) {
        out(pg, "<ul class=\"reasons\">\n");
        if (sr_hint) {
            out(pg, "<li>");
            esc(pg->f, c->state_reason);
            out(pg, "<div class=\"hint\">Fix: ");
            esc(pg->f, sr_hint);
            out(pg, "</div></li>\n");
        }
        for (int i = 0; i < c->n_reasons; i++) {
            out(pg, "<li><span class=\"reason\">");
            esc(pg->f, c->reasons[i]);
            out(pg, "</span>");
            const char *h = rp_hint(c->reasons[i]);
            if (h) {
                out(pg, "<div class=\"hint\">Fix: ");
                esc(pg->f, h);
                out(pg, "</div>");
            }
            out(pg, "</li>\n");
        }
        out(pg, "</ul>");
    }
    out(pg, "</div>\n");
}

static void link_table(page *pg, const rp_comm *c, int rank, int pos)
{
    out(pg, "<div><h3>Fitted link</h3>");
    if (!c->have_fit) {
        out(pg, "<p>No fit: the warm-up was not agreed.</p></div>\n");
        return;
    }
    out(pg, "<table id=\"fit-%d\"><tr><th title=\"fixed cost of one allreduce\">alpha (us)</th>", c->index);
    num(pg, "td", "class=\"n\"", rank, 1e6, 1, c->alpha, "comms/%d/fit/alpha", pos);
    out(pg, "</tr>\n<tr><th title=\"cost per byte\">beta (s/B)</th>");
    num(pg, "td", "class=\"n\"", rank, 1, -1, c->beta, "comms/%d/fit/beta", pos);
    out(pg, "</tr>\n<tr><th>bandwidth 1/beta (GB/s)</th><td class=\"n\">");
    if (c->beta > 0)
        out(pg, "%.3f", 1e-9 / c->beta);
    else
        out(pg, "&#8734;");
    out(pg, "</td></tr>\n<tr><th title=\"root mean square of the fit's residuals over the durations\">fit residual "
            "(relative, %%)</th>");
    num(pg, "td", "class=\"n\"", rank, 100, 2, c->rel_rms, "comms/%d/fit/rel_rms", pos);
    out(pg, "</tr>\n<tr><th>fit residual rms (us)</th>");
    num(pg, "td", "class=\"n\"", rank, 1e6, 1, c->rms, "comms/%d/fit/rms", pos);
    out(pg, "</tr>\n<tr><th>largest residual (us)</th>");
    num(pg, "td", "class=\"n\"", rank, 1e6, 1, c->max_abs, "comms/%d/fit/max_abs", pos);
    out(pg, "</tr>\n<tr><th>samples / distinct sizes</th><td class=\"n\">%ld / %ld</td></tr>\n", c->samples,
        c->distinct_sizes);
    if (c->fit_flags && json_array_size(c->fit_flags)) {
        out(pg, "<tr><th>flags</th><td class=\"diff\">");
        for (size_t i = 0; i < json_array_size(c->fit_flags); i++) {
            out(pg, "%s", i ? ", " : "");
            esc(pg->f, json_string_value(json_array_get(c->fit_flags, i)));
        }
        out(pg, "</td></tr>\n");
    }
    out(pg, "</table></div>\n");
}

typedef struct bar {
    const char *label, *fill;
    double v;
    char where[96];
} bar;

/* Measured and predicted iteration times as horizontal bars on one scale. */
static void bar_chart(page *pg, const rp_comm *c, int rank, int pos, double lower_bound)
{
    bar bars[UB_POLICY_COUNT + 8];
    char labels[UB_POLICY_COUNT + 8][64];
    int n = 0;
    const rp_schedule *s = &c->schedule;
    bars[n] = (bar){s->present ? "measured in the warm-up" : "measured (pass-through)", "#616161",
                    c->measured_iteration, ""};
    snprintf(bars[n++].where, sizeof bars[0].where, "comms/%d/measured_iteration", pos);
    if (s->present) {
        bars[n] = (bar){"measured pass-through", "#616161", s->measured_pass_through, ""};
        snprintf(bars[n++].where, sizeof bars[0].where, "comms/%d/schedule/measured_pass_through", pos);
        bars[n] = (bar){"measured scheduled", "#00897b", s->measured_iteration, ""};
        snprintf(bars[n++].where, sizeof bars[0].where, "comms/%d/schedule/measured_iteration", pos);
    }
    for (int i = 0; i < c->n_policies && n < UB_POLICY_COUNT + 6; i++) {
        int chosen = c->have_plan && !strcmp(c->policies[i].name, c->plan.policy);
        snprintf(labels[n], sizeof labels[0], "%s%s", c->policies[i].name, chosen ? " (chosen)" : "");
        bars[n] = (bar){labels[n], chosen ? "#1565c0" : "#90caf9", c->policies[i].iteration, ""};
        snprintf(bars[n++].where, sizeof bars[0].where, "comms/%d/policies/%d/iteration", pos, i);
    }
    if (isfinite(lower_bound)) {
        bars[n] = (bar){"lower bound", "none", lower_bound, ""};
        if (c->has_lower_bound)
            snprintf(bars[n].where, sizeof bars[0].where, "comms/%d/plan/lower_bound", pos);
        n++;
    }
    double vmax = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(bars[i].v) && bars[i].v > vmax)
            vmax = bars[i].v;
    if (vmax <= 0)
        vmax = 1e-3;
    const double W = 600, L = 230, R = 80, H = 20;
    double height = 30 + n * (H + 4);
    out(pg, "<div><h3>Iteration time (ms): measured and predicted</h3>\n<svg class=\"bars\" id=\"bars-%d\" "
            "xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
            "font-family=\"sans-serif\" font-size=\"12\">\n",
        c->index, W, height, W, height);
    for (int i = 0; i < n; i++) {
        double y = 10 + i * (H + 4), w = isfinite(bars[i].v) ? (W - L - R) * bars[i].v / vmax : 0;
        out(pg, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">", L - 6, y + H * 0.7);
        esc(pg->f, bars[i].label);
        out(pg, "</text>");
        if (!strcmp(bars[i].fill, "none"))
            out(pg, "<rect x=\"%.0f\" y=\"%.1f\" width=\"%.2f\" height=\"%.0f\" fill=\"none\" stroke=\"#424242\" "
                    "stroke-dasharray=\"4 3\"/>",
                L, y, w, H);
        else
            out(pg, "<rect x=\"%.0f\" y=\"%.1f\" width=\"%.2f\" height=\"%.0f\" fill=\"%s\"/>", L, y, w, H,
                bars[i].fill);
        char attrs[64];
        snprintf(attrs, sizeof attrs, "x=\"%.1f\" y=\"%.1f\"", L + w + 4, y + H * 0.7);
        if (bars[i].where[0])
            num(pg, "text", attrs, rank, 1e3, 3, bars[i].v, "%s", bars[i].where);
        else
            out(pg, "<text %s>%.3f</text>", attrs, bars[i].v * 1e3);
        out(pg, "\n");
    }
    out(pg, "</svg></div>\n");
}

static void schedule_table(page *pg, const rp_comm *c, int rank, int pos)
{
    const rp_schedule *s = &c->schedule;
    out(pg, "<h3>Schedule mode (rank %d)</h3>\n<table id=\"schedule-%d\">", rank, c->index);
    out(pg, "<tr><th>scheduled iterations</th><td class=\"n\" data-r=\"%d\" data-p=\"comms/%d/schedule/iterations\" "
            "data-x=\"1\">%ld</td></tr>\n", rank, pos, s->iterations);
    struct {
        const char *name, *key;
        double v, scale;
        int dec;
    } rows[] = {{"measured iteration, scheduled (ms)", "measured_iteration", s->measured_iteration, 1e3, 3},
                {"predicted iteration (ms)", "predicted_iteration", s->predicted_iteration, 1e3, 3},
                {"measured iteration, pass-through (ms)", "measured_pass_through", s->measured_pass_through, 1e3, 3},
                {"measured speedup", "measured_speedup", s->measured_speedup, 1, 3},
                {"predicted speedup", "predicted_speedup", s->predicted_speedup, 1, 3}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        out(pg, "<tr><th>%s</th>", rows[i].name);
        num(pg, "td", "class=\"n\"", rank, rows[i].scale, rows[i].dec, rows[i].v, "comms/%d/schedule/%s", pos,
            rows[i].key);
        out(pg, "</tr>\n");
    }
    out(pg, "<tr><th title=\"iterations whose calls did not follow the plan's sequence\">deviations</th>"
            "<td class=\"n\">%ld</td></tr>\n<tr><th>flushes</th><td class=\"n\">%ld</td></tr>\n"
            "<tr><th>staging buffer (bytes)</th><td class=\"n\">%ld</td></tr>\n<tr><th>completion</th><td>",
        s->deviations, s->flushes, s->staging_bytes);
    esc(pg->f, s->completion ? s->completion : "?");
    out(pg, "</td></tr></table>\n");
}

static void ranks_table(page *pg, int id)
{
    const rp_job *job = pg->job;
    int ref_i;
    const rp_comm *ref = rp_job_reference(job, id, &ref_i);
    out(pg, "<h3>Ranks</h3>\n<table class=\"sortable\" id=\"ranks-%d\"><thead><tr><th>rank</th><th>state</th>"
            "<th>measured iteration (ms)</th>%s<th>iterations observed</th>"
            "<th title=\"ready times from producer events / from the NCCL stream\">ready: events / fallback</th>"
            "<th>stream waits</th><th>host waits</th><th title=\"host waits from another thread\">other thread</th>"
            "<th>merge barriers</th><th>need segments</th><th>stream-ordered ops</th><th>agreed values</th>"
            "</tr></thead><tbody>\n",
        id, ref->schedule.present ? "<th>scheduled iteration (ms)</th>" : "");
    for (int i = 0; i < job->n; i++) {
        const rp_report *r = &job->r[i];
        const rp_comm *c = rp_comm_find(r, id);
        if (!c) {
            out(pg, "<tr><td class=\"n\">%d</td><td class=\"diff\" colspan=\"12\">no communicator %d in %s</td></tr>\n",
                r->rank, id, r->path);
            continue;
        }
        int pos = comm_pos(r, c);
        out(pg, "<tr data-rank=\"%d\"><td class=\"n\">%d</td><td>", r->rank, r->rank);
        esc(pg->f, c->state);
        out(pg, "</td>");
        num(pg, "td", "class=\"n\"", r->rank, 1e3, 3, c->measured_iteration, "comms/%d/measured_iteration", pos);
        if (ref->schedule.present) {
            if (c->schedule.present)
                num(pg, "td", "class=\"n\"", r->rank, 1e3, 3, c->schedule.measured_iteration,
                    "comms/%d/schedule/measured_iteration", pos);
            else
                out(pg, "<td class=\"diff\">none</td>");
        }
        out(pg, "<td class=\"n\">%ld</td>", c->iterations_observed);
        const json_t *pat = json_object_get(c->json, "pattern");
        const json_t *rd = json_object_get(pat, "ready"), *co = json_object_get(pat, "consumers"),
                     *so = json_object_get(pat, "stream_ordered_work");
#define PINT(obj, key) (json_is_number(json_object_get(obj, key)) ? json_number_value(json_object_get(obj, key)) : NAN)
        out(pg, "<td class=\"n\">%.0f / %.0f</td>", PINT(rd, "upstream_event_calls"), PINT(rd, "fallback_calls"));
        static const char *const ckeys[] = {"stream_waits", "host_waits", "host_waits_other_thread", "merge_barriers",
                                            "need_segments"};
        for (size_t k = 0; k < sizeof ckeys / sizeof ckeys[0]; k++)
            num(pg, "td", "class=\"n\"", r->rank, 1, 0, PINT(co, ckeys[k]), "comms/%d/pattern/consumers/%s", pos,
                ckeys[k]);
        num(pg, "td", "class=\"n\"", r->rank, 1, 0, PINT(so, "operations"), "comms/%d/pattern/stream_ordered_work/operations",
            pos);
#undef PINT
        int bits = rp_comm_diff(ref, c);
        if (bits) {
            char what[128];
            rp_diff_text(bits, what, sizeof what);
            out(pg, "<td class=\"diff\">differ from rank %d: %s</td>", job->r[ref_i].rank, what);
        } else {
            out(pg, "<td class=\"same\">%s</td>", i == ref_i ? "reference" : "same");
        }
        out(pg, "</tr>\n");
    }
    out(pg, "</tbody></table>\n");
}

static void plan_table(page *pg, const rp_comm *c, int rank, int pos)
{
    const ub_plan *p = &c->plan;
    const rp_schedule *s = &c->schedule;
    out(pg, "<h3>Chosen plan: ");
    esc(pg->f, p->policy);
    out(pg, "</h3>\n<p id=\"plan-%d\">predicted iteration ", c->index);
    num(pg, "b", NULL, rank, 1e3, 3, c->plan_reported, "comms/%d/plan/iteration", pos);
    out(pg, " ms");
    if (isfinite(p->lower_bound) && p->lower_bound > 0) {
        out(pg, " &middot; lower bound ");
        num(pg, "span", NULL, rank, 1e3, 3, p->lower_bound, "comms/%d/plan/lower_bound", pos);
        out(pg, " ms (%.1f%% above it)", 100.0 * (p->iteration / p->lower_bound - 1.0));
    }
    if (c->optimal >= 0)
        out(pg, " &middot; <b class=\"%s\" id=\"optimal-%d\">%s</b>", c->optimal ? "same" : "", c->index,
            c->optimal ? "optimal (proved)" : "not proved optimal");
    out(pg, " &middot; %u blocks", p->n_blocks);
    if (p->params[0]) {
        out(pg, " &middot; <code>");
        esc(pg->f, p->params);
        out(pg, "</code>");
    }
    if (fabs(p->iteration - c->plan_reported) > 1e-9 * fmax(1.0, c->plan_reported))
        out(pg, " &middot; <span class=\"diff\">the model gives %.3f ms for this plan</span>", p->iteration * 1e3);
    out(pg, "</p>\n<table class=\"sortable\" id=\"plan-blocks-%d\"><thead><tr><th>block</th><th>start (ms)</th>"
            "<th>end (ms)</th><th>bytes</th><th>segments [call, offset, length]</th>%s</tr></thead><tbody>\n",
        c->index, s->n_blocks ? "<th>measured start (ms)</th><th>measured end (ms)</th>" : "");
    for (uint32_t b = 0; b < p->n_blocks; b++) {
        const ub_block *blk = &p->blocks[b];
        uint64_t bytes = 0;
        for (uint32_t k = 0; k < blk->n_segments; k++)
            bytes += p->segments[blk->first_segment + k].length;
        out(pg, "<tr><td class=\"n\">%u</td>", b);
        num(pg, "td", "class=\"n\"", rank, 1e3, 3, blk->start, "comms/%d/plan/blocks/%u/start", pos, b);
        num(pg, "td", "class=\"n\"", rank, 1e3, 3, blk->end, "comms/%d/plan/blocks/%u/end", pos, b);
        out(pg, "<td class=\"n\">%llu</td><td>", (unsigned long long)bytes);
        for (uint32_t k = 0; k < blk->n_segments; k++) {
            const ub_segment *sg = &p->segments[blk->first_segment + k];
            out(pg, "%s[%d, %llu, %llu]", k ? " " : "", sg->call, (unsigned long long)sg->offset,
                (unsigned long long)sg->length);
        }
        out(pg, "</td>");
        if (s->n_blocks) {
            if ((int)b < s->n_blocks) {
                num(pg, "td", "class=\"n\"", rank, 1e3, 3, s->blocks[b].start, "comms/%d/schedule/blocks/%u/start", pos, b);
                num(pg, "td", "class=\"n\"", rank, 1e3, 3, s->blocks[b].end, "comms/%d/schedule/blocks/%u/end", pos, b);
            } else {
                out(pg, "<td class=\"diff\" colspan=\"2\">not measured</td>");
            }
        }
        out(pg, "</tr>\n");
    }
    out(pg, "</tbody></table>\n");
    /* The runtime measures the blocks it issued; a different count means it did not follow the plan. */
    if (s->n_blocks && s->n_blocks != (int)p->n_blocks)
        out(pg, "<p class=\"diff\">%d blocks measured, the plan has %u</p>\n", s->n_blocks, p->n_blocks);
    else if (s->present && !s->n_blocks)
        out(pg, "<p>The report holds no measured blocks.</p>\n");
}

static void timeline(page *pg, const rp_comm *c, int rank)
{
    ub_plan plans[UB_POLICY_COUNT];
    rp_plans(c, plans);
    const ub_plan *list[UB_POLICY_COUNT];
    int n = 0, chosen = -1;
    for (int id = 0; id < UB_POLICY_COUNT; id++) {
        if (!plans[id].n_blocks)
            continue;
        if (c->have_plan && !strcmp(plans[id].policy, c->plan.policy))
            chosen = n;
        list[n++] = &plans[id];
    }
    char sub[256], msub[360];
    snprintf(sub, sizeof sub, "alpha %.1f us, beta %.3g s/B, %d ranks", c->profile.alpha * 1e6, c->profile.beta,
             c->nranks);
    out(pg, "<h3>Timelines: %s every policy's plan under the model</h3>\n<div class=\"timeline\" "
            "id=\"timeline-%d\">\n",
        c->schedule.n_blocks ? "the chosen plan with the blocks measured in schedule mode, then" : "", c->index);
    if (c->schedule.n_blocks && chosen >= 0) {
        /* Its own drawing first, so that the measurement sits right under the plan it ran. */
        snprintf(msub, sizeof msub, "%s; measured blocks: rank %d, one steady iteration", sub, rank);
        sim_svg_opts mo = {.title = "chosen plan and measured", .subtitle = msub, .measured = c->schedule.blocks,
                           .n_measured = c->schedule.n_blocks, .measured_plan = 0};
        sim_svg_emit(pg->f, &c->profile, &list[chosen], 1, &mo);
    }
    sim_svg_opts o = {.title = "timeline", .subtitle = sub};
    if (n)
        sim_svg_emit(pg->f, &c->profile, list, n, &o);
    else
        out(pg, "<p>No plan could be computed from this profile.</p>");
    out(pg, "</div>\n");
    for (int id = 0; id < UB_POLICY_COUNT; id++)
        for (int i = 0; i < c->n_policies; i++)
            if (!strcmp(c->policies[i].name, plans[id].policy) && plans[id].n_blocks &&
                fabs(plans[id].iteration - c->policies[i].iteration) > 1e-9 * fmax(1.0, c->policies[i].iteration))
                out(pg, "<p class=\"warn box\">%s: this usbyte-report's planner predicts %.3f ms, the run %.3f ms "
                        "(another usbyte version?)</p>\n",
                    plans[id].policy, plans[id].iteration * 1e3, c->policies[i].iteration * 1e3);
    rp_plans_free(plans);
}

static void profile_table(page *pg, const rp_comm *c, int rank, int pos)
{
    const ub_profile *p = &c->profile;
    out(pg, "<details open><summary>Profile: %d calls, %d forward segment%s</summary>\n<p id=\"profile-%d\">backward "
            "end ",
        p->n_calls, p->n_forward, p->n_forward == 1 ? "" : "s", c->index);
    num(pg, "span", NULL, rank, 1e3, 3, p->backward_end, "comms/%d/profile/backward_end", pos);
    out(pg, " ms &middot; gap ");
    num(pg, "span", NULL, rank, 1e3, 3, p->gap, "comms/%d/profile/gap", pos);
    out(pg, " ms &middot; forward segments (ms):");
    for (int s = 0; s < p->n_forward; s++) {
        out(pg, " ");
        num(pg, "span", NULL, rank, 1e3, 3, p->forward[s], "comms/%d/profile/forward/%d", pos, s);
    }
    out(pg, "</p>\n<table class=\"sortable\" id=\"profile-calls-%d\"><thead><tr><th>call</th><th>name</th>"
            "<th>bytes</th><th>dtype</th><th>op</th><th>ready (ms)</th><th>need</th><th title=\"false: something "
            "waits for this call before the next one arrives\">merge</th><th>measured comm (ms)</th></tr></thead>"
            "<tbody>\n", c->index);
    const json_t *calls = json_object_get(json_object_get(c->json, "profile"), "calls");
    for (int k = 0; k < p->n_calls; k++) {
        const ub_call *call = &p->calls[k];
        const json_t *cj = json_array_get(calls, (size_t)k);
        out(pg, "<tr><td class=\"n\">%d</td><td>", k);
        esc(pg->f, call->name ? call->name : "");
        out(pg, "</td>");
        num(pg, "td", "class=\"n\"", rank, 1, 0, (double)call->bytes, "comms/%d/profile/calls/%d/bytes", pos, k);
        out(pg, "<td>");
        esc(pg->f, json_string_value(json_object_get(cj, "dtype")) ? json_string_value(json_object_get(cj, "dtype"))
                                                                   : "float32");
        out(pg, "</td><td>");
        esc(pg->f, json_string_value(json_object_get(cj, "op")) ? json_string_value(json_object_get(cj, "op")) : "sum");
        out(pg, "</td>");
        num(pg, "td", "class=\"n\"", rank, 1e3, 3, call->ready, "comms/%d/profile/calls/%d/ready", pos, k);
        num(pg, "td", "class=\"n\"", rank, 1, 0, call->need, "comms/%d/profile/calls/%d/need", pos, k);
        out(pg, "<td>%s</td>", call->merge ? "yes" : "<b>no</b>");
        if (call->measured_comm >= 0)
            num(pg, "td", "class=\"n\"", rank, 1e3, 3, call->measured_comm, "comms/%d/profile/calls/%d/measured_comm",
                pos, k);
        else
            out(pg, "<td></td>");
        out(pg, "</tr>\n");
    }
    out(pg, "</tbody></table></details>\n");
}

static void comm_section(page *pg, int id)
{
    int ref_i;
    const rp_comm *c = rp_job_reference(pg->job, id, &ref_i);
    const rp_report *r = &pg->job->r[ref_i];
    int rank = r->rank, pos = comm_pos(r, c);
    out(pg, "<section class=\"comm\" id=\"comm-%d\" data-comm=\"%d\">\n<h2>Communicator %d</h2>\n<p>%d ranks "
            "&middot; %ld allreduces per iteration (%ld NCCL calls) &middot; %ld iterations observed, %ld profiled "
            "&middot; numbers from rank %d's report, ",
        id, id, id, c->nranks, c->calls_per_iteration, c->nccl_calls_per_iteration, c->iterations_observed, c->warmup,
        rank);
    esc(pg->f, r->path);
    out(pg, "</p>\n");
    verdict_box(pg, c, rank, pos);
    out(pg, "<div class=\"row\">\n");
    link_table(pg, c, rank, pos);
    double lb = c->have_plan ? c->plan.lower_bound : c->have_profile && c->profile.has_net ? ub_lower_bound(&c->profile)
                                                                                          : NAN;
    bar_chart(pg, c, rank, pos, lb);
    out(pg, "</div>\n");
    if (c->schedule.present)
        schedule_table(pg, c, rank, pos);
    ranks_table(pg, id);
    if (c->have_plan)
        plan_table(pg, c, rank, pos);
    if (c->have_profile && c->profile.has_net)
        timeline(pg, c, rank);
    if (c->have_profile)
        profile_table(pg, c, rank, pos);
    out(pg, "</section>\n");
}

int rp_write_html(const rp_job *job, const char *path, char *err, size_t errlen)
{
    /* Built in memory, then written as the report is (ub_write_file_atomic). */
    ub_memtext t;
    FILE *f = ub_memtext_open(&t, path, err, errlen);
    if (!f)
        return -1;
    page pg = {f, job};
    out(&pg, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>usbyte report: %d rank%s</title>\n"
             "<style>%s</style></head>\n<body>\n",
        job->world_size, job->world_size == 1 ? "" : "s", STYLE);
    header(&pg);
    for (int k = 0; k < job->n_comm_ids; k++)
        comm_section(&pg, job->comm_ids[k]);
    out(&pg, "<footer><p>Written by usbyte-report from");
    for (int i = 0; i < job->n; i++) {
        out(&pg, "%s <code>", i ? "," : "");
        esc(f, job->r[i].path);
        out(&pg, "</code> (rank %d)", job->r[i].rank);
    }
    out(&pg, ". Click a table's header to sort it; hover a timeline's shape for its numbers.</p></footer>\n"
             "<script>%s</script>\n</body></html>\n", SCRIPT);
    return ub_memtext_write(&t, path, ferror(f), err, errlen);
}
