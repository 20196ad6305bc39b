/* One communicator on the page (see report_html.c): the headline (Scheduled, Not scheduled or
 * Observed, with how much communication is exposed and how much of it the plan hides, each
 * reason and each fix once), the iteration times as a chart with its axis and legend, the
 * policies explained, the link, schedule mode's numbers, the ranks side by side (each one's own
 * iteration times and, per call, how far apart the ranks' ready times are), the chosen plan, the
 * timelines and the profile.  Numbers are in ms and µs, sizes in MiB and KiB, bandwidth in GB/s. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "report_html.h"
#include "usbyte/alloc.h"
#include "usbyte/model.h"

#define MIB (1024.0 * 1024.0)

static int comm_pos(const rp_report *r, const rp_comm *c)
{
    return (int)(c - r->comms);
}

static bool same_time(double a, double b)
{
    return isfinite(a) && isfinite(b) && fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b));
}

static double policy_iteration(const rp_comm *c, const char *name)
{
    for (int i = 0; i < c->n_policies; i++)
        if (!strcmp(c->policies[i].name, name))
            return c->policies[i].iteration;
    return NAN;
}

/* ---- the headline ---- */

typedef struct said {
    const char *hint[64];
    int n;
} said;

/* The fix for `reason`, unless an earlier one gave the same. */
static void fix_once(rp_page *pg, said *done, const char *reason)
{
    const char *h = rp_hint(reason);
    if (!h)
        return;
    for (int i = 0; i < done->n; i++)
        if (done->hint[i] == h)
            return;
    if (done->n < 64)
        done->hint[done->n++] = h;
    rp_out(pg, "<div class=\"hint\">Fix: ");
    esc(pg->f, h);
    rp_out(pg, "</div>");
}

/* How much communication the compute does not hide, and how much of it the plan hides. */
static void exposure(rp_page *pg, const rp_comm *c, rp_outcome o)
{
    double compute = rp_compute_alone(c), measured = c->measured_iteration;
    double wfbp = policy_iteration(c, "wfbp"), plan = c->have_plan ? c->plan_reported : NAN;
    double lb = c->have_plan && c->has_lower_bound ? c->plan.lower_bound : NAN;
    if (!isfinite(compute) || !(measured > 0))
        return;
    double exposed = fmax(0.0, measured - compute);
    rp_out(pg, "<p class=\"exposure\" id=\"exposure-%d\">Communication exposed: <b>", c->index);
    rp_derived(pg, "span", "class=\"exposed\"", 1e3, 3, exposed);
    rp_out(pg, " ms</b> of the ");
    rp_derived(pg, "span", NULL, 1e3, 3, measured);
    rp_out(pg, " ms iteration without a plan (the warm-up's; compute alone takes ");
    rp_derived(pg, "span", "class=\"compute\"", 1e3, 3, compute);
    rp_out(pg, " ms).");
    if (exposed < 0.01 * measured) {
        rp_out(pg, " The compute already hides the communication: there is nothing to gain.</p>\n");
        return;
    }
    const rp_schedule *s = &c->schedule;
    if (o == RP_SCHEDULED && isfinite(s->measured_iteration)) {
        rp_out(pg, " With the plan the iteration takes ");
        rp_derived(pg, "span", NULL, 1e3, 3, s->measured_iteration);
        if (s->measured_iteration <= measured) {
            rp_out(pg, " ms: schedule mode hid <b>");
            rp_derived(pg, "span", "class=\"hidden-measured\"", 100, 1, (measured - s->measured_iteration) / exposed);
            rp_out(pg, "%%</b> of it (measured).");
        } else {
            rp_out(pg, " ms: <b>");
            rp_derived(pg, "span", "class=\"slower-by\"", 1e3, 3, s->measured_iteration - measured);
            rp_out(pg, " ms slower</b> than without it (measured).");
        }
    }
    /* The model's view, on its own scale: what wfbp leaves exposed and what the plan hides. */
    double pexp = wfbp - compute;
    if (isfinite(plan) && pexp > 0) {
        rp_out(pg, " The model predicts ");
        rp_derived(pg, "span", NULL, 1e3, 3, pexp);
        rp_out(pg, " ms exposed with NCCL's own order (wfbp); the %s plan hides <b>", c->plan.policy);
        rp_derived(pg, "span", "class=\"hidden-predicted\"", 100, 1, (wfbp - plan) / pexp);
        rp_out(pg, "%%</b> of it");
        if (isfinite(lb)) {
            rp_out(pg, ", no plan more than ");
            rp_derived(pg, "span", "class=\"hidden-bound\"", 100, 1, (wfbp - lb) / pexp);
            rp_out(pg, "%% (the lower bound)");
        }
        rp_out(pg, ".");
        if ((wfbp - plan) < 0.01 * pexp)
            rp_out(pg, " <b>No gain</b>: %s",
                   isfinite(lb) && (wfbp - lb) < 0.01 * pexp
                       ? "what stays exposed is the communication of the last gradients, which the next forward "
                         "needs and no order or merge can move earlier."
                       : "the plan found is NCCL's own order.");
    }
    rp_out(pg, "</p>\n");
}

static void headline(rp_page *pg, const rp_report *r, const rp_comm *c, int rank, int pos)
{
    const char *why;
    int bad;
    rp_outcome o = rp_comm_outcome(r, c, &why, &bad);
    const char *word = o == RP_SCHEDULED ? "Scheduled" : o == RP_OBSERVED ? "Observed" : "Not scheduled";
    const rp_schedule *s = &c->schedule;
    bool slower = o == RP_SCHEDULED && s->measured_speedup < 1.0; /* false when not measured (NAN) */
    const char *cls = o == RP_SCHEDULED ? (slower ? "warn" : "ok")
                      : bad                                                    ? "bad"
                      : o == RP_OBSERVED && c->schedulable && c->have_plan     ? "ok"
                                                                               : "warn";
    rp_out(pg, "<div class=\"box %s verdict\" id=\"verdict-%d\" data-outcome=\"%s\"><span class=\"big headline\">%s</span>",
           cls, c->index, word, word);
    if (o == RP_SCHEDULED) {
        rp_out(pg, " &middot; measured speedup ");
        rp_num(pg, "b", NULL, rank, 1, 2, s->measured_speedup, "comms/%d/schedule/measured_speedup", pos);
        rp_out(pg, "x over the warm-up without a plan (predicted ");
        rp_num(pg, "span", NULL, rank, 1, 2, s->predicted_speedup, "comms/%d/schedule/predicted_speedup", pos);
        rp_out(pg, "x over wfbp)");
        if (slower)
            rp_out(pg, " &middot; <b class=\"slower\">slower than without a plan</b>: the host cost of deferring "
                       "every call outweighs what the plan gains (set USBYTE_MIN_GAIN_PCT to leave such plans alone)");
    } else if (why) {
        rp_out(pg, ": <span class=\"why\">");
        esc(pg->f, why);
        rp_out(pg, "</span>");
    }
    if (o != RP_SCHEDULED && c->have_plan && c->n_policies) {
        double wfbp = policy_iteration(c, "wfbp");
        rp_out(pg, " &middot; the %s plan predicts ", c->plan.policy);
        rp_derived(pg, "b", NULL, 1, 2, wfbp / c->plan_reported);
        rp_out(pg, "x over NCCL's own order (wfbp)");
    }
    rp_out(pg, " &middot; state <b>");
    esc(pg->f, c->state);
    rp_out(pg, "</b>\n");
    exposure(pg, c, o);
    /* Each reason once, each fix once: the state's reason only when it adds to the verdict's. */
    said done = {{0}, 0};
    if (why == c->state_reason)
        fix_once(pg, &done, why);
    bool state_item = c->state_reason && why != c->state_reason && !strstr(c->state_reason, "the verdict says why");
    for (int i = 0; state_item && i < c->n_reasons; i++)
        state_item = !rp_repeats(c->state_reason, c->reasons[i]) && !rp_repeats(c->reasons[i], c->state_reason);
    if (state_item || c->n_reasons) {
        rp_out(pg, "<ul class=\"reasons\">\n");
        if (state_item) {
            rp_out(pg, "<li><span class=\"reason\">");
            esc(pg->f, c->state_reason);
            rp_out(pg, "</span>");
            fix_once(pg, &done, c->state_reason);
            rp_out(pg, "</li>\n");
        }
        for (int i = 0; i < c->n_reasons; i++) {
            if (why && !strcmp(why, c->reasons[i]))
                continue; /* the headline says it */
            rp_out(pg, "<li><span class=\"reason\">");
            esc(pg->f, c->reasons[i]);
            rp_out(pg, "</span>");
            fix_once(pg, &done, c->reasons[i]);
            rp_out(pg, "</li>\n");
        }
        rp_out(pg, "</ul>");
    }
    rp_out(pg, "</div>\n");
}

/* ---- the iteration times ---- */

typedef struct bar {
    const char *label, *fill, *kind;
    double v;
    char where[96];
    char same[64];  /* "= wfbp" when an earlier bar shows the same time */
} bar;

/* A round step for about `n` axis ticks. */
static double tick_step(double span, int n)
{
    double raw = span / n, p = pow(10.0, floor(log10(raw)));
    double m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

static const struct {
    const char *kind, *fill, *text;
} legend[] = {
    {"measured", "#616161", "measured, no plan"},
    {"measured-plan", "#00897b", "measured, plan running"},
    {"predicted", "#90caf9", "predicted"},
    {"chosen", "#1565c0", "predicted, chosen plan"},
    {"bound", "none", "lower bound"},
};

/* The chart's bars, top to bottom: the measured iteration, with the plan running if it ran, each
 * policy's prediction, the lower bound; labels holds the policies' labels.  Returns how many. */
static int collect_bars(const rp_comm *c, int pos, double lower_bound, bar *bars, char (*labels)[80])
{
    int n = 0;
    const rp_schedule *s = &c->schedule;
    bars[n] = (bar){"measured, no plan", "#616161", "measured", c->measured_iteration, "", ""};
    snprintf(bars[n++].where, sizeof bars[0].where, "comms/%d/measured_iteration", pos);
    if (s->present) {
        bars[n] = (bar){"measured, plan running", "#00897b", "measured-plan", s->measured_iteration, "", ""};
        snprintf(bars[n++].where, sizeof bars[0].where, "comms/%d/schedule/measured_iteration", pos);
    }
    int first_policy = n;
    for (int i = 0; i < c->n_policies; i++) {
        int chosen = c->have_plan && !strcmp(c->policies[i].name, c->plan.policy);
        snprintf(labels[n], sizeof labels[0], "%s%s", c->policies[i].name, chosen ? " (chosen)" : "");
        bars[n] = (bar){labels[n], chosen ? "#1565c0" : "#90caf9", chosen ? "chosen" : "predicted",
                        c->policies[i].iteration, "", ""};
        snprintf(bars[n].where, sizeof bars[0].where, "comms/%d/policies/%d/iteration", pos, i);
        for (int j = first_policy; j < n; j++)
            if (same_time(bars[j].v, bars[n].v)) {
                snprintf(bars[n].same, sizeof bars[0].same, "= %s", c->policies[j - first_policy].name);
                break;
            }
        n++;
    }
    if (isfinite(lower_bound)) {
        bars[n] = (bar){"lower bound", "none", "bound", lower_bound, "", ""};
        if (c->has_lower_bound)
            snprintf(bars[n].where, sizeof bars[0].where, "comms/%d/plan/lower_bound", pos);
        n++;
    }
    return n;
}

/* The chart's geometry (SVG units): width, left and right margins, bar height, top margin. */
static const double CHART_W = 640, CHART_L = 170, CHART_R = 130, CHART_H = 18, CHART_T = 34;

/* The legend: only the kinds drawn. */
static void chart_legend(rp_page *pg, const bar *bars, int n)
{
    double lx = 4;
    for (size_t k = 0; k < sizeof legend / sizeof legend[0]; k++) {
        bool used = false;
        for (int i = 0; i < n; i++)
            used |= !strcmp(bars[i].kind, legend[k].kind);
        if (!used)
            continue;
        if (!strcmp(legend[k].fill, "none"))
            rp_out(pg, "<rect class=\"legend\" x=\"%.0f\" y=\"6\" width=\"14\" height=\"12\" fill=\"none\" "
                       "stroke=\"#424242\" stroke-dasharray=\"3 2\"/>", lx);
        else
            rp_out(pg, "<rect class=\"legend\" x=\"%.0f\" y=\"6\" width=\"14\" height=\"12\" fill=\"%s\"/>", lx,
                   legend[k].fill);
        rp_out(pg, "<text x=\"%.0f\" y=\"16\" font-size=\"11\">%s</text>\n", lx + 18, legend[k].text);
        lx += 30 + 5.6 * (double)strlen(legend[k].text);
    }
}

/* The grid and the time axis, 0 to top seconds in ticks of step. */
static void chart_axis(rp_page *pg, double step, double top, double axis_y)
{
    const double L = CHART_L, T = CHART_T, span = CHART_W - CHART_L - CHART_R;
    for (double t = 0; t <= top + step / 2; t += step) {
        double x = L + span * t / top;
        rp_out(pg, "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#e0e0e0\"/>"
                   "<text class=\"tick\" x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%g</text>\n",
               x, T - 4, x, axis_y, x, axis_y + 14, t * 1e3);
    }
    rp_out(pg, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"#424242\"/>"
               "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">iteration time (ms)</text>\n",
           L, axis_y, L + span, axis_y, L + span / 2, axis_y + 29);
}

/* Bar i of the chart, its label and its number (top: the axis' end, seconds). */
static void chart_bar(rp_page *pg, const bar *b, int i, int rank, double top)
{
    const double L = CHART_L, H = CHART_H, span = CHART_W - CHART_L - CHART_R;
    double y = CHART_T + i * (H + 5);
    bool drawn = isfinite(b->v) && b->v > 0;
    double w = drawn ? span * b->v / top : 0;
    rp_out(pg, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">", L - 6, y + H * 0.72);
    esc(pg->f, b->label);
    rp_out(pg, "</text>");
    if (drawn && !strcmp(b->fill, "none"))
        rp_out(pg, "<rect class=\"bar\" data-kind=\"%s\" x=\"%.0f\" y=\"%.1f\" width=\"%.2f\" height=\"%.0f\" "
                   "fill=\"none\" stroke=\"#424242\" stroke-dasharray=\"4 3\"/>",
               b->kind, L, y, w, H);
    else if (drawn)
        rp_out(pg, "<rect class=\"bar\" data-kind=\"%s\" x=\"%.0f\" y=\"%.1f\" width=\"%.2f\" height=\"%.0f\" "
                   "fill=\"%s\"/>",
               b->kind, L, y, w, H, b->fill);
    char attrs[96];
    snprintf(attrs, sizeof attrs, "x=\"%.1f\" y=\"%.1f\"", L + w + 4, y + H * 0.72);
    if (!drawn)
        rp_out(pg, "<text %s class=\"note\" fill=\"#757575\">not measured</text>", attrs);
    else if (b->where[0])
        rp_num(pg, "text", attrs, rank, 1e3, 3, b->v, "%s", b->where);
    else
        rp_out(pg, "<text %s>%.3f</text>", attrs, b->v * 1e3);
    if (drawn && b->same[0]) {
        rp_out(pg, "<text class=\"same-as\" x=\"%.1f\" y=\"%.1f\" fill=\"#546e7a\">", L + w + 56, y + H * 0.72);
        esc(pg->f, b->same);
        rp_out(pg, "</text>");
    }
    rp_out(pg, "\n");
}

/* Measured and predicted iteration times as horizontal bars on one axis (ms). */
static void bar_chart(rp_page *pg, const rp_comm *c, int rank, int pos, double lower_bound)
{
    int cap = c->n_policies + 4;
    bar *bars = ub_xcalloc((size_t)cap, sizeof *bars, "drawing the chart");
    char (*labels)[80] = ub_xcalloc((size_t)cap, sizeof *labels, "drawing the chart");
    int n = collect_bars(c, pos, lower_bound, bars, labels);
    double vmax = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(bars[i].v) && bars[i].v > vmax)
            vmax = bars[i].v;
    if (vmax <= 0) {
        rp_out(pg, "<div><h3>Iteration time</h3><p id=\"bars-%d\" class=\"note\">No iteration time was agreed: the "
                   "agreement did not succeed (each rank's own warm-up iterations are under Ranks).</p></div>\n",
               c->index);
    } else {
        double step = tick_step(vmax * 1e3, 6) / 1e3, top = ceil(vmax / step - 1e-9) * step;
        double axis_y = CHART_T + n * (CHART_H + 5) + 4, height = axis_y + 34;
        rp_out(pg, "<div><h3>Iteration time: measured and predicted</h3>\n<svg class=\"bars\" id=\"bars-%d\" "
                   "xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
                   "font-family=\"sans-serif\" font-size=\"12\">\n",
               c->index, CHART_W, height, CHART_W, height);
        chart_legend(pg, bars, n);
        chart_axis(pg, step, top, axis_y);
        for (int i = 0; i < n; i++)
            chart_bar(pg, &bars[i], i, rank, top);
        rp_out(pg, "</svg></div>\n");
    }
    free(bars);
    free(labels);
}

/* The policies, one line each, with the same numbers as the chart. */
static void policies_table(rp_page *pg, const rp_comm *c, int rank, int pos)
{
    if (!c->n_policies)
        return;
    double wfbp = policy_iteration(c, "wfbp");
    rp_out(pg, "<h3>The policies</h3>\n<table class=\"sortable\" id=\"policies-%d\"><thead><tr><th>policy</th>"
               "<th>predicted iteration (ms)</th><th title=\"wfbp's predicted iteration / this one\">over wfbp</th>"
               "<th>what it does</th></tr></thead><tbody>\n", c->index);
    for (int i = 0; i < c->n_policies; i++) {
        const rp_policy *p = &c->policies[i];
        int chosen = c->have_plan && !strcmp(p->name, c->plan.policy);
        rp_out(pg, "<tr%s data-policy=\"", chosen ? " class=\"chosen\"" : "");
        esc(pg->f, p->name);
        rp_out(pg, "\"><td>");
        esc(pg->f, p->name);
        rp_out(pg, "%s</td>", chosen ? " (chosen)" : "");
        rp_num(pg, "td", "class=\"n\"", rank, 1e3, 3, p->iteration, "comms/%d/policies/%d/iteration", pos, i);
        rp_derived(pg, "td", "class=\"n\"", 1, 3, wfbp / p->iteration);
        rp_out(pg, "<td>");
        const char *about = rp_policy_about(p->name);
        esc(pg->f, about ? about : "(a policy this usbyte-report does not describe: see docs/planner.md)");
        rp_out(pg, ".");
        /* Equal predictions are said to be equal, with the reason where it is known. */
        for (int j = 0; j < i; j++)
            if (same_time(c->policies[j].iteration, p->iteration)) {
                rp_out(pg, " <span class=\"same-as\">Here it predicts the same as %s", c->policies[j].name);
                if (!strcmp(p->name, "usbyte") && !strcmp(c->policies[j].name, "wfbp"))
                    rp_out(pg, ": the published US-Byte algorithm orders and cuts calls but never merges them, and on "
                               "this profile ordering alone gains nothing");
                rp_out(pg, ".</span>");
                break;
            }
        rp_out(pg, "</td></tr>\n");
    }
    rp_out(pg, "</tbody></table>\n");
}

static void link_table(rp_page *pg, const rp_comm *c, int rank, int pos)
{
    rp_out(pg, "<div><h3>Fitted link</h3>");
    if (!c->have_fit) {
        rp_out(pg, "<p>No fit: the warm-up was not agreed.</p></div>\n");
        return;
    }
    rp_out(pg, "<table id=\"fit-%d\"><tr><th title=\"fixed cost of one allreduce\">startup alpha (&micro;s)</th>",
           c->index);
    rp_num(pg, "td", "class=\"n\"", rank, 1e6, 1, c->alpha, "comms/%d/fit/alpha", pos);
    rp_out(pg, "</tr>\n<tr><th title=\"1/beta: bytes per second an allreduce moves once started\">bandwidth "
               "(GB/s)</th>");
    rp_derived(pg, "td", "class=\"n\"", 1e-9, 3, c->beta > 0 ? 1.0 / c->beta : NAN);
    rp_out(pg, "</tr>\n<tr><th title=\"cost per byte\">beta (s/B)</th>");
    rp_num(pg, "td", "class=\"n\"", rank, 1, -1, c->beta, "comms/%d/fit/beta", pos);
    rp_out(pg, "</tr>\n<tr><th title=\"root mean square of the fit's residuals over the durations\">fit residual "
               "(relative, %%)</th>");
    rp_num(pg, "td", "class=\"n\"", rank, 100, 2, c->rel_rms, "comms/%d/fit/rel_rms", pos);
    rp_out(pg, "</tr>\n<tr><th>fit residual rms (&micro;s)</th>");
    rp_num(pg, "td", "class=\"n\"", rank, 1e6, 1, c->rms, "comms/%d/fit/rms", pos);
    rp_out(pg, "</tr>\n<tr><th>largest residual (&micro;s)</th>");
    rp_num(pg, "td", "class=\"n\"", rank, 1e6, 1, c->max_abs, "comms/%d/fit/max_abs", pos);
    rp_out(pg, "</tr>\n<tr><th>samples / distinct sizes</th><td class=\"n\">%ld / %ld</td></tr>\n", c->samples,
           c->distinct_sizes);
    if (c->have_profile && c->profile.curve.n > 0) {
        /* The line above summarises; the plans and the bound use the curve (docs/model.md). */
        const ub_net_curve *cv = &c->profile.curve;
        rp_out(pg, "<tr><th title=\"the cost function the plans are made and judged with: the line misses a measured "
                   "size by more than 3%%\">cost curve</th><td class=\"n\">%d segments, %.1f &micro;s at %.0f B to %.1f "
                   "&micro;s at %.0f B</td></tr>\n",
               cv->n, 1e6 * (cv->seg[0].alpha + cv->seg[0].beta * cv->seg[1 < cv->n ? 1 : 0].from),
               cv->seg[1 < cv->n ? 1 : 0].from, 1e6 * (cv->seg[cv->n - 1].alpha + cv->seg[cv->n - 1].beta * cv->seg[cv->n - 1].from),
               cv->seg[cv->n - 1].from);
    }
    if (c->fit_flags && json_array_size(c->fit_flags)) {
        rp_out(pg, "<tr><th>flags</th><td class=\"diff\">");
        for (size_t i = 0; i < json_array_size(c->fit_flags); i++) {
            rp_out(pg, "%s", i ? ", " : "");
            esc(pg->f, json_string_value(json_array_get(c->fit_flags, i)));
        }
        rp_out(pg, "</td></tr>\n");
    }
    rp_out(pg, "</table></div>\n");
}

static void schedule_table(rp_page *pg, const rp_comm *c, int rank, int pos)
{
    const rp_schedule *s = &c->schedule;
    rp_out(pg, "<h3>Schedule mode (rank %d)</h3>\n<table id=\"schedule-%d\">", rank, c->index);
    rp_out(pg, "<tr><th>scheduled iterations</th><td class=\"n\" data-r=\"%d\" data-p=\"comms/%d/schedule/iterations\" "
               "data-x=\"1\">%ld</td></tr>\n", rank, pos, s->iterations);
    struct {
        const char *name, *key;
        double v, scale;
        int dec;
    } rows[] = {{"measured iteration, plan running (ms)", "measured_iteration", s->measured_iteration, 1e3, 3},
                {"predicted iteration (ms)", "predicted_iteration", s->predicted_iteration, 1e3, 3},
                {s->pass_through_side_by_side
                     ? "measured iteration, no plan (verification, side by side, ms)"
                     : "measured iteration, no plan (warm-up, ms)",
                 "measured_pass_through", s->measured_pass_through, 1e3, 3},
                {"measured speedup", "measured_speedup", s->measured_speedup, 1, 3},
                {"predicted speedup (over wfbp)", "predicted_speedup", s->predicted_speedup, 1, 3}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        rp_out(pg, "<tr><th>%s</th>", rows[i].name);
        rp_num(pg, "td", "class=\"n\"", rank, rows[i].scale, rows[i].dec, rows[i].v, "comms/%d/schedule/%s", pos,
               rows[i].key);
        rp_out(pg, "</tr>\n");
    }
    rp_out(pg, "<tr><th title=\"iterations whose calls did not follow the plan's sequence\">deviations</th>"
               "<td class=\"n\">%ld</td></tr>\n<tr><th>flushes</th><td class=\"n\">%ld</td></tr>\n"
               "<tr><th>staging buffer (MiB)</th>", s->deviations, s->flushes);
    rp_num(pg, "td", "class=\"n\"", rank, 1.0 / MIB, 3, (double)s->staging_bytes, "comms/%d/schedule/staging_bytes", pos);
    rp_out(pg, "</tr>\n<tr><th>completion</th><td>");
    esc(pg->f, s->completion ? s->completion : "?");
    rp_out(pg, "</td></tr></table>\n");
}

/* What verification tried, measured, kept and why: its numbers are agreed, the same on every rank. */
static void verification_table(rp_page *pg, const rp_comm *c, int rank, int pos)
{
    const rp_verification *v = &c->verification;
    rp_out(pg, "<h3>Verification against pass-through</h3>\n<p class=\"note\">The candidate plans and the "
               "application's own order ran in alternating iterations; the numbers are agreed by every rank.</p>\n"
               "<table id=\"verification-%d\"><tr><th>runs</th><th>predicted (ms)</th><th>measured (ms)</th>"
               "<th>re-fitted prediction (ms)</th><th>spread (ms)</th><th>iterations</th></tr>\n", c->index);
    for (int i = 0; i < v->n_candidates; i++) {
        const rp_candidate *k = &v->candidates[i];
        rp_out(pg, "<tr><th>");
        esc(pg->f, k->policy);
        if (k->refit)
            rp_out(pg, "<br><span class=\"note\">planned on the model re-fitted with the measured blocks of a plan "
                       "judged before it in its check</span>");
        rp_out(pg, "</th>");
        rp_num(pg, "td", "class=\"n\"", rank, 1e3, 3, k->predicted_iteration,
               "comms/%d/verification/candidates/%d/predicted_iteration", pos, i);
        rp_num(pg, "td", "class=\"n\"", rank, 1e3, 3, k->measured_iteration,
               "comms/%d/verification/candidates/%d/measured_iteration", pos, i);
        rp_num(pg, "td", "class=\"n\"", rank, 1e3, 3, k->refit_predicted_iteration,
               "comms/%d/verification/candidates/%d/refit_predicted_iteration", pos, i);
        rp_num(pg, "td", "class=\"n\"", rank, 1e3, 3, k->spread, "comms/%d/verification/candidates/%d/spread", pos, i);
        rp_out(pg, "<td class=\"n\">%ld</td></tr>\n", k->iterations);
    }
    rp_out(pg, "<tr><th>pass-through</th><td class=\"n\">&ndash;</td>");
    rp_num(pg, "td", "class=\"n\"", rank, 1e3, 3, v->pass_through_iteration,
           "comms/%d/verification/pass_through_iteration", pos);
    rp_out(pg, "<td class=\"n\">&ndash;</td>");
    rp_num(pg, "td", "class=\"n\"", rank, 1e3, 3, v->pass_through_spread, "comms/%d/verification/pass_through_spread",
           pos);
    rp_out(pg, "<td class=\"n\">%ld</td></tr></table>\n<p>kept: <b>", v->pass_through_iterations);
    esc(pg->f, v->kept ? v->kept : "not decided yet");
    rp_out(pg, "</b>");
    if (v->at_call >= 0)
        rp_out(pg, " at call %ld", v->at_call);
    rp_out(pg, " (%ld checks; %s)</p>\n<p class=\"note\">", v->checks,
           v->every > 0 ? "checked again periodically" : "checked once");
    esc(pg->f, v->reason ? v->reason : "");
    rp_out(pg, "</p>\n");
}

/* ---- the ranks ---- */

static void spread_cells(rp_page *pg, int rank, const rp_spread *sp, const char *where, int pos)
{
    if (sp->n <= 0) {
        rp_out(pg, "<td class=\"note\" colspan=\"3\">not in the report</td>");
        return;
    }
    rp_num(pg, "td", "class=\"n\"", rank, 1e3, 3, sp->mean, "comms/%d/%s/mean", pos, where);
    rp_num(pg, "td", "class=\"n\"", rank, 1e6, 0, sp->stdev, "comms/%d/%s/stdev", pos, where);
    rp_out(pg, "<td class=\"n\">");
    rp_num(pg, "span", NULL, rank, 1e3, 3, sp->min, "comms/%d/%s/min", pos, where);
    rp_out(pg, " &ndash; ");
    rp_num(pg, "span", NULL, rank, 1e3, 3, sp->max, "comms/%d/%s/max", pos, where);
    rp_out(pg, " (%ld)</td>", sp->n);
}

/* Each rank's own iteration times: a straggler shows as the rank whose backward is slower (its
 * ready times, below) while every rank's iteration is the same (they wait for each other). */

/* The settings every rank must share in which report r differs from ref ("" when none). */
static void differing_settings(const rp_report *r, const rp_report *ref, char *out, size_t len)
{
    size_t used = 0;
    out[0] = '\0';
    for (int k = 0; k < rp_n_agreed_settings && used < len; k++) {
        char a[600], b[600];
        const char *x = rp_setting(r, rp_agreed_settings[k], a, sizeof a);
        const char *y = rp_setting(ref, rp_agreed_settings[k], b, sizeof b);
        if ((x == NULL) != (y == NULL) || (x && strcmp(x, y) != 0)) {
            int n = snprintf(out + used, len - used, "%s%s=%s", used ? ", " : "", rp_agreed_settings[k], x ? x : "?");
            used += n > 0 ? (size_t)n : 0;
        }
    }
}

static void ranks_table(rp_page *pg, int id)
{
    const rp_job *job = pg->job;
    int ref_i;
    const rp_comm *ref = rp_job_reference(job, id, &ref_i);
    bool sched = ref->schedule.present;
    rp_out(pg, "<h3>Ranks</h3>\n<table class=\"sortable\" id=\"ranks-%d\"><thead><tr><th>rank</th><th>host</th>"
               "<th>state</th><th title=\"this rank's own warm-up iterations, before the agreement\">own iteration, "
               "warm-up (ms)</th><th>&plusmn; (&micro;s)</th><th>min &ndash; max (ms) (iterations)</th>%s"
               "<th>iterations observed</th><th>agreed values</th></tr></thead><tbody>\n",
           id, sched ? "<th title=\"this rank's steady iterations with the plan running\">own iteration, plan running "
                       "(ms)</th><th>&plusmn; (&micro;s)</th><th>min &ndash; max (ms) (iterations)</th>" : "");
    for (int i = 0; i < job->n; i++) {
        const rp_report *r = &job->r[i];
        const rp_comm *c = rp_comm_find(r, id);
        if (!c) {
            rp_out(pg, "<tr><td class=\"n\">%d</td><td class=\"diff\" colspan=\"%d\">no communicator %d in ", r->rank,
                   sched ? 10 : 7, id);
            esc(pg->f, r->path);
            rp_out(pg, "</td></tr>\n");
            continue;
        }
        int pos = comm_pos(r, c);
        rp_out(pg, "<tr data-rank=\"%d\"><td class=\"n\">%d</td><td>", r->rank, r->rank);
        esc(pg->f, r->run.host ? r->run.host : "?");
        rp_out(pg, "</td><td>");
        esc(pg->f, c->state);
        rp_out(pg, "</td>");
        spread_cells(pg, r->rank, &c->local.iteration, "local/iteration", pos);
        if (sched) {
            if (c->schedule.present && c->schedule.spread.n > 0)
                spread_cells(pg, r->rank, &c->schedule.spread, "schedule/iteration_spread", pos);
            else if (c->schedule.present) {
                rp_num(pg, "td", "class=\"n\"", r->rank, 1e3, 3, c->schedule.measured_iteration,
                       "comms/%d/schedule/measured_iteration", pos);
                rp_out(pg, "<td></td><td></td>");
            } else
                rp_out(pg, "<td class=\"diff\" colspan=\"3\">none</td>");
        }
        rp_out(pg, "<td class=\"n\">%ld</td>", c->iterations_observed);
        int bits = rp_comm_diff(ref, c);
        char settings[400];
        differing_settings(r, &job->r[ref_i], settings, sizeof settings);
        if (bits) {
            char what[128];
            rp_diff_text(bits, what, sizeof what);
            rp_out(pg, "<td class=\"diff\">differ from rank %d: %s</td>", job->r[ref_i].rank, what);
        } else if (settings[0]) {
            /* The same agreed values (every rank in pass-through) because this rank's settings differ. */
            rp_out(pg, "<td class=\"diff\">settings differ from rank %d's: ", job->r[ref_i].rank);
            esc(pg->f, settings);
            rp_out(pg, "</td>");
        } else {
            rp_out(pg, "<td class=\"same\">%s</td>", i == ref_i ? "reference" : "same");
        }
        rp_out(pg, "</tr>\n");
    }
    rp_out(pg, "</tbody></table>\n");
}

/* What each rank saw of the framework's pattern. */
static void pattern_table(rp_page *pg, int id)
{
    const rp_job *job = pg->job;
    rp_out(pg, "<details><summary>What each rank saw</summary>\n<table class=\"sortable\" id=\"pattern-%d\"><thead>"
               "<tr><th>rank</th><th title=\"ready times from producer events / from the NCCL stream\">ready: events / "
               "fallback</th><th>stream waits</th><th>host waits</th><th title=\"host waits from another thread\">"
               "other thread</th><th>merge barriers</th><th>need segments</th><th>stream-ordered ops</th></tr></thead>"
               "<tbody>\n", id);
    for (int i = 0; i < job->n; i++) {
        const rp_report *r = &job->r[i];
        const rp_comm *c = rp_comm_find(r, id);
        if (!c)
            continue;
        int pos = comm_pos(r, c);
        const json_t *pat = json_object_get(c->json, "pattern");
        const json_t *rd = json_object_get(pat, "ready"), *co = json_object_get(pat, "consumers"),
                     *so = json_object_get(pat, "stream_ordered_work");
#define PINT(obj, key) (json_is_number(json_object_get(obj, key)) ? json_number_value(json_object_get(obj, key)) : NAN)
        rp_out(pg, "<tr><td class=\"n\">%d</td><td class=\"n\">%.0f / %.0f</td>", r->rank, PINT(rd, "upstream_event_calls"),
               PINT(rd, "fallback_calls"));
        static const char *const ckeys[] = {"stream_waits", "host_waits", "host_waits_other_thread", "merge_barriers",
                                            "need_segments"};
        for (size_t k = 0; k < sizeof ckeys / sizeof ckeys[0]; k++)
            rp_num(pg, "td", "class=\"n\"", r->rank, 1, 0, PINT(co, ckeys[k]), "comms/%d/pattern/consumers/%s", pos,
                   ckeys[k]);
        rp_num(pg, "td", "class=\"n\"", r->rank, 1, 0, PINT(so, "operations"),
               "comms/%d/pattern/stream_ordered_work/operations", pos);
#undef PINT
        rp_out(pg, "</tr>\n");
    }
    rp_out(pg, "</tbody></table></details>\n");
}

/* Per call, how far apart the ranks' own ready times are (each rank's mean over its warm-up,
 * from its iteration's first ready): the agreed profile keeps the latest. */
static void ready_spread(rp_page *pg, int id, const rp_comm *ref)
{
    const rp_job *job = pg->job;
    if (!ref->have_profile)
        return;
    int n = ref->profile.n_calls, ranks = 0;
    for (int i = 0; i < job->n; i++) {
        const rp_comm *c = rp_comm_find(&job->r[i], id);
        ranks += c && c->local.n_ready == n;
    }
    if (ranks < 2 || n < 2)
        return;
    int *late_count = ub_xcalloc((size_t)job->n, sizeof *late_count, "writing the page");
    double *late_sum = ub_xcalloc((size_t)job->n, sizeof *late_sum, "writing the page");
    double widest = -1;
    int widest_call = -1;
    rp_out(pg, "<details id=\"ready-spread-%d\"%s><summary>Ready times across ranks (%d ranks, %d calls)</summary>\n"
               "<table class=\"sortable\"><thead><tr><th>call</th><th>earliest rank</th><th>earliest (ms)</th>"
               "<th>latest rank</th><th>latest (ms)</th><th title=\"latest minus earliest\">spread (&micro;s)</th>"
               "</tr></thead><tbody>\n",
           id, n <= 12 ? " open" : "", ranks, n);
    for (int k = 0; k < n; k++) {
        int lo = -1, hi = -1;
        double vlo = NAN, vhi = NAN;
        for (int i = 0; i < job->n; i++) {
            const rp_comm *c = rp_comm_find(&job->r[i], id);
            if (!c || c->local.n_ready != n || !isfinite(c->local.ready[k]))
                continue;
            double v = c->local.ready[k];
            if (lo < 0 || v < vlo)
                lo = i, vlo = v;
            if (hi < 0 || v > vhi)
                hi = i, vhi = v;
        }
        if (lo < 0)
            continue;
        late_count[hi]++;
        late_sum[hi] += vhi - vlo;
        if (vhi - vlo > widest)
            widest = vhi - vlo, widest_call = k;
        const rp_comm *cl = rp_comm_find(&job->r[lo], id), *ch = rp_comm_find(&job->r[hi], id);
        rp_out(pg, "<tr data-call=\"%d\"><td class=\"n\">%d</td><td class=\"n\">%d</td>", k, k, job->r[lo].rank);
        rp_num(pg, "td", "class=\"n\"", job->r[lo].rank, 1e3, 3, vlo, "comms/%d/local/ready/%d", comm_pos(&job->r[lo], cl), k);
        rp_out(pg, "<td class=\"n\">%d</td>", job->r[hi].rank);
        rp_num(pg, "td", "class=\"n\"", job->r[hi].rank, 1e3, 3, vhi, "comms/%d/local/ready/%d", comm_pos(&job->r[hi], ch), k);
        rp_derived(pg, "td", "class=\"n spread\"", 1e6, 1, vhi - vlo);
        rp_out(pg, "</tr>\n");
    }
    rp_out(pg, "</tbody></table></details>\n");
    int most = 0;
    for (int i = 1; i < job->n; i++)
        if (late_count[i] > late_count[most])
            most = i;
    if (widest_call >= 0) {
        rp_out(pg, "<p id=\"straggler-%d\">Ready times: the ranks are at most ", id);
        rp_derived(pg, "span", NULL, 1e6, 1, widest);
        rp_out(pg, " &micro;s apart (call %d). Rank <b>%d</b> is the latest in %d of %d calls, by ", widest_call,
               job->r[most].rank, late_count[most], n);
        rp_derived(pg, "span", NULL, 1e6, 1, late_count[most] ? late_sum[most] / late_count[most] : NAN);
        rp_out(pg, " &micro;s on average over the earliest rank%s</p>\n",
               late_count[most] * 2 > n ? ": the others wait for it (a straggler: its backward is slower)" : "");
    }
    free(late_count);
    free(late_sum);
}

/* ---- the plan ---- */

/* A plan's blocks (JSON place comms/POS/WHERE), with schedule mode's measured blocks beside
 * them when `measured` is given. */
static void blocks_table(rp_page *pg, const rp_comm *c, const ub_plan *p, const rp_schedule *measured, int rank,
                         int pos, const char *id, const char *where)
{
    int nm = measured ? measured->n_blocks : 0;
    rp_out(pg, "<table class=\"sortable\" id=\"%s-%d\"><thead><tr><th>block</th><th>start (ms)</th>"
               "<th>end (ms)</th><th>size (MiB)</th><th>segments [call, offset, length]</th>%s</tr></thead><tbody>\n",
           id, c->index, nm ? "<th>measured start (ms)</th><th>measured end (ms)</th>" : "");
    for (uint32_t b = 0; b < p->n_blocks; b++) {
        const ub_block *blk = &p->blocks[b];
        uint64_t bytes = 0;
        for (uint32_t k = 0; k < blk->n_segments; k++)
            bytes += p->segments[blk->first_segment + k].length;
        rp_out(pg, "<tr><td class=\"n\">%u</td>", b);
        rp_num(pg, "td", "class=\"n\"", rank, 1e3, 3, blk->start, "comms/%d/%s/blocks/%u/start", pos, where, b);
        rp_num(pg, "td", "class=\"n\"", rank, 1e3, 3, blk->end, "comms/%d/%s/blocks/%u/end", pos, where, b);
        rp_derived(pg, "td", "class=\"n\"", 1.0 / MIB, 3, (double)bytes);
        rp_out(pg, "<td>");
        for (uint32_t k = 0; k < blk->n_segments; k++) {
            const ub_segment *sg = &p->segments[blk->first_segment + k];
            rp_out(pg, "%s[%d, %llu, %llu]", k ? " " : "", sg->call, (unsigned long long)sg->offset,
                   (unsigned long long)sg->length);
        }
        rp_out(pg, "</td>");
        if (nm) {
            if ((int)b < nm) {
                rp_num(pg, "td", "class=\"n\"", rank, 1e3, 3, measured->blocks[b].start,
                       "comms/%d/schedule/blocks/%u/start", pos, b);
                rp_num(pg, "td", "class=\"n\"", rank, 1e3, 3, measured->blocks[b].end,
                       "comms/%d/schedule/blocks/%u/end", pos, b);
            } else {
                rp_out(pg, "<td class=\"diff\" colspan=\"2\">not measured</td>");
            }
        }
        rp_out(pg, "</tr>\n");
    }
    rp_out(pg, "</tbody></table>\n");
    /* The runtime measures the blocks it issued; a different count means it did not follow the plan. */
    if (nm && nm != (int)p->n_blocks)
        rp_out(pg, "<p class=\"diff\">%d blocks measured, the plan has %u</p>\n", nm, p->n_blocks);
}

static void plan_table(rp_page *pg, const rp_comm *c, int rank, int pos)
{
    const ub_plan *p = &c->plan;
    const rp_schedule *s = &c->schedule;
    rp_out(pg, "<h3>Chosen plan: ");
    esc(pg->f, p->policy);
    rp_out(pg, "</h3>\n<p id=\"plan-%d\">predicted iteration ", c->index);
    rp_num(pg, "b", NULL, rank, 1e3, 3, c->plan_reported, "comms/%d/plan/iteration", pos);
    rp_out(pg, " ms");
    if (isfinite(p->lower_bound) && p->lower_bound > 0) {
        rp_out(pg, " &middot; lower bound ");
        rp_num(pg, "span", NULL, rank, 1e3, 3, p->lower_bound, "comms/%d/plan/lower_bound", pos);
        rp_out(pg, " ms (%.1f%% above it)", 100.0 * (p->iteration / p->lower_bound - 1.0));
    }
    rp_out(pg, " &middot; %u blocks", p->n_blocks);
    if (fabs(p->iteration - c->plan_reported) > 1e-9 * fmax(1.0, c->plan_reported))
        rp_out(pg, " &middot; <span class=\"diff\">the model gives %.3f ms for this plan</span>", p->iteration * 1e3);
    rp_out(pg, "</p>\n");
    /* How the plan was found: for those who tune the planner. */
    rp_out(pg, "<details class=\"search\"><summary>How the plan was found</summary><p>");
    if (c->optimal >= 0)
        rp_out(pg, "<b class=\"%s\" id=\"optimal-%d\">%s</b> &middot; ", c->optimal ? "same" : "", c->index,
               c->optimal ? "optimal (it meets the lower bound)" : "not proved optimal");
    rp_out(pg, "planning took ");
    rp_derived(pg, "span", NULL, 1e3, 3, p->plan_seconds);
    rp_out(pg, " ms on rank %d", rank);
    if (p->params[0]) {
        rp_out(pg, " &middot; parameters <code>");
        esc(pg->f, p->params);
        rp_out(pg, "</code>");
    }
    rp_out(pg, "</p></details>\n");
    /* The measured blocks are those of the plan the schedule held: this one unless verification
     * loaded another (then drawn below with its own). */
    blocks_table(pg, c, p, s->has_plan ? NULL : s, rank, pos, "plan-blocks", "plan");
    if (s->has_plan) {
        rp_out(pg, "<h3>Plan schedule mode ran last: ");
        esc(pg->f, s->plan.policy);
        rp_out(pg, "</h3>\n<p>verification's candidate (see Verification) &middot; %u blocks &middot; predicted "
                   "iteration %.3f ms on the model it was planned on</p>\n",
               s->plan.n_blocks, 1e3 * s->plan.iteration);
        blocks_table(pg, c, &s->plan, s, rank, pos, "schedule-plan-blocks", "schedule/plan");
    } else if (s->present && !s->n_blocks) {
        rp_out(pg, "<p>The report holds no measured blocks.</p>\n");
    }
}

static void timeline(rp_page *pg, const rp_comm *c, int rank)
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
    snprintf(sub, sizeof sub, "alpha %.1f \xc2\xb5s, %.3f GB/s%s, %d ranks", c->profile.alpha * 1e6,
             c->profile.beta > 0 ? 1e-9 / c->profile.beta : INFINITY,
             c->profile.curve.n > 0 ? " (the line; the plans use the fitted cost curve)" : "", c->nranks);
    rp_out(pg, "<h3>Timelines: %s every policy's plan under the model</h3>\n<div class=\"timeline\" "
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
        rp_out(pg, "<p>No plan could be computed from this profile.</p>");
    rp_out(pg, "</div>\n");
    for (int id = 0; id < UB_POLICY_COUNT; id++)
        for (int i = 0; i < c->n_policies; i++)
            if (!strcmp(c->policies[i].name, plans[id].policy) && plans[id].n_blocks &&
                fabs(plans[id].iteration - c->policies[i].iteration) > 1e-9 * fmax(1.0, c->policies[i].iteration))
                rp_out(pg, "<p class=\"warn box\">%s: this usbyte-report's planner predicts %.3f ms, the run %.3f ms "
                           "(another usbyte version?)</p>\n",
                       plans[id].policy, plans[id].iteration * 1e3, c->policies[i].iteration * 1e3);
    rp_plans_free(plans);
}

static void profile_table(rp_page *pg, const rp_comm *c, int rank, int pos)
{
    const ub_profile *p = &c->profile;
    rp_out(pg, "<details%s><summary>Profile: %d calls, %d forward segment%s</summary>\n<p id=\"profile-%d\">backward "
               "end ",
           p->n_calls <= 40 ? " open" : "", p->n_calls, p->n_forward, p->n_forward == 1 ? "" : "s", c->index);
    rp_num(pg, "span", NULL, rank, 1e3, 3, p->backward_end, "comms/%d/profile/backward_end", pos);
    rp_out(pg, " ms &middot; gap ");
    rp_num(pg, "span", NULL, rank, 1e3, 3, p->gap, "comms/%d/profile/gap", pos);
    rp_out(pg, " ms &middot; forward segments (ms):");
    for (int s = 0; s < p->n_forward; s++) {
        rp_out(pg, " ");
        rp_num(pg, "span", NULL, rank, 1e3, 3, p->forward[s], "comms/%d/profile/forward/%d", pos, s);
    }
    rp_out(pg, "</p>\n<table class=\"sortable\" id=\"profile-calls-%d\"><thead><tr><th>call</th><th>name</th>"
               "<th>size (KiB)</th><th>dtype</th><th>op</th><th>ready (ms)</th><th>need</th><th title=\"false: "
               "something waits for this call before the next one arrives\">merge</th><th>measured comm (ms)</th>"
               "</tr></thead><tbody>\n", c->index);
    const json_t *calls = json_object_get(json_object_get(c->json, "profile"), "calls");
    for (int k = 0; k < p->n_calls; k++) {
        const ub_call *call = &p->calls[k];
        const json_t *cj = json_array_get(calls, (size_t)k);
        rp_out(pg, "<tr><td class=\"n\">%d</td><td>", k);
        esc(pg->f, call->name ? call->name : "");
        rp_out(pg, "</td>");
        rp_num(pg, "td", "class=\"n\"", rank, 1.0 / 1024, 3, (double)call->bytes, "comms/%d/profile/calls/%d/bytes", pos, k);
        rp_out(pg, "<td>");
        esc(pg->f, json_string_value(json_object_get(cj, "dtype")) ? json_string_value(json_object_get(cj, "dtype"))
                                                                   : "float32");
        rp_out(pg, "</td><td>");
        esc(pg->f, json_string_value(json_object_get(cj, "op")) ? json_string_value(json_object_get(cj, "op")) : "sum");
        rp_out(pg, "</td>");
        rp_num(pg, "td", "class=\"n\"", rank, 1e3, 3, call->ready, "comms/%d/profile/calls/%d/ready", pos, k);
        rp_num(pg, "td", "class=\"n\"", rank, 1, 0, call->need, "comms/%d/profile/calls/%d/need", pos, k);
        rp_out(pg, "<td>%s</td>", call->merge ? "yes" : "<b>no</b>");
        if (call->measured_comm >= 0)
            rp_num(pg, "td", "class=\"n\"", rank, 1e3, 3, call->measured_comm, "comms/%d/profile/calls/%d/measured_comm",
                   pos, k);
        else
            rp_out(pg, "<td></td>");
        rp_out(pg, "</tr>\n");
    }
    rp_out(pg, "</tbody></table></details>\n");
}

void rp_html_comm(rp_page *pg, int id)
{
    int ref_i;
    const rp_comm *c = rp_job_reference(pg->job, id, &ref_i);
    const rp_report *r = &pg->job->r[ref_i];
    int rank = r->rank, pos = comm_pos(r, c);
    rp_out(pg, "<section class=\"comm\" id=\"comm-%d\" data-comm=\"%d\">\n<h2>Communicator %d</h2>\n<p>%d ranks ",
           id, id, id, c->nranks);
    /* No count before a warm-up was profiled (pass-through from the start): none is claimed. */
    if (c->calls_per_iteration > 0)
        rp_out(pg, "&middot; %ld allreduces per iteration (%ld NCCL calls) &middot; %ld iterations observed, %ld profiled",
               c->calls_per_iteration, c->nccl_calls_per_iteration, c->iterations_observed, c->warmup);
    else
        rp_out(pg, "&middot; no iteration profiled &middot; %ld iterations observed", c->iterations_observed);
    if (c->id) {
        rp_out(pg, " &middot; identity <code>");
        esc(pg->f, c->id);
        rp_out(pg, "</code>");
    }
    rp_out(pg, " &middot; numbers from rank %d's report, ", rank);
    esc(pg->f, r->path);
    rp_out(pg, "</p>\n");
    headline(pg, r, c, rank, pos);
    rp_out(pg, "<div class=\"row\">\n");
    double lb = c->have_plan ? c->plan.lower_bound : c->have_profile && c->profile.has_net ? ub_lower_bound(&c->profile)
                                                                                          : NAN;
    bar_chart(pg, c, rank, pos, lb);
    link_table(pg, c, rank, pos);
    rp_out(pg, "</div>\n");
    policies_table(pg, c, rank, pos);
    rp_html_ddp(pg, c);
    if (c->schedule.present)
        schedule_table(pg, c, rank, pos);
    if (c->verification.present)
        verification_table(pg, c, rank, pos);
    ranks_table(pg, id);
    ready_spread(pg, id, c);
    pattern_table(pg, id);
    if (c->have_plan)
        plan_table(pg, c, rank, pos);
    if (c->have_profile && c->profile.has_net)
        timeline(pg, c, rank);
    if (c->have_profile)
        profile_table(pg, c, rank, pos);
    rp_out(pg, "</section>\n");
}
