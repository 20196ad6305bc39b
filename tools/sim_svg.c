/* A self-contained SVG timeline of one or more plans: the backward compute with a tick where
 * each call becomes ready, then per policy the link (its blocks in plan order) and the next
 * forward pass (its segments, gated by the calls they need), on one time axis in ms.
 * Hovering any shape shows its numbers (SVG <title>). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "usbyte/atomic_write.h"
#include "usbyte/alloc.h"
#include "usbyte/model.h"

#define WIDTH 1200.0
#define LEFT 170.0
#define RIGHT 90.0 /* room for the end label right of the latest end ("99999.999 ms" at 11 px) */
#define LANE 26.0
#define GAP 8.0

void sim_forward_starts(const ub_profile *prof, const double *call_completion, double *starts)
{
    int S = prof->n_forward;
    double *gate = ub_xrealloc(NULL, sizeof(double) * (size_t)S, "drawing the timeline");
    for (int s = 0; s < S; s++)
        gate[s] = -INFINITY;
    for (int k = 0; k < prof->n_calls; k++)
        if (call_completion[k] > gate[prof->calls[k].need])
            gate[prof->calls[k].need] = call_completion[k];
    double t = prof->backward_end + prof->gap;
    for (int s = 0; s < S; s++) {
        if (gate[s] > t)
            t = gate[s];
        starts[s] = t;
        t += prof->forward[s];
    }
    free(gate);
}

void sim_xml_text(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default:
            if ((unsigned char)*s >= 0x20)
                fputc(*s, f);
        }
    }
}

typedef struct {
    FILE *f;
    double tmax;  /* seconds at the right edge */
} canvas;

static double X(const canvas *c, double t) { return LEFT + (WIDTH - LEFT - RIGHT) * (t / c->tmax); }

static void rect(const canvas *c, const char *cls, double t0, double t1, double y, double h, const char *fill,
                 const char *stroke)
{
    double x0 = X(c, t0), w = X(c, t1) - x0;
    if (w < 0.6)
        w = 0.6; /* a block shorter than a pixel must still be visible */
    fprintf(c->f, "<rect class=\"%s\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"%s%s%s>", cls,
            x0, y, w, h, fill, stroke ? " stroke=\"" : "", stroke ? stroke : "", stroke ? "\" stroke-width=\"0.4\"" : "");
}

static void label(FILE *f, double y, const char *text, const char *weight)
{
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" font-weight=\"%s\">", LEFT - 8, y + LANE * 0.65, weight);
    sim_xml_text(f, text);
    fputs("</text>\n", f);
}

/* A round step for about 10 axis ticks. */
static double tick_step(double span_ms)
{
    double raw = span_ms / 10.0, p = pow(10.0, floor(log10(raw)));
    double m = raw / p;
    return p * (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10);
}

/* One plan's link lane: its blocks in plan order, coloured by what they hold. */
static void link_lane(const canvas *c, const ub_profile *prof, const ub_plan *p, double y)
{
    FILE *f = c->f;
    for (uint32_t b = 0; b < p->n_blocks; b++) {
        const ub_block *blk = &p->blocks[b];
        const ub_segment *seg = &p->segments[blk->first_segment];
        int staged = 0, partial = 0;
        uint64_t bytes = 0;
        for (uint32_t s = 0; s < blk->n_segments; s++) {
            staged |= seg[s].call != seg[0].call;
            partial |= seg[s].length != prof->calls[seg[s].call].bytes;
            bytes += seg[s].length;
        }
        const char *fill = staged ? (b % 2 ? "#ef6c00" : "#ffa726") : partial ? (b % 2 ? "#6a1b9a" : "#ab47bc")
                                                                              : (b % 2 ? "#1565c0" : "#42a5f5");
        rect(c, "ub-block", blk->start, blk->end, y + 3, LANE - 6, fill, "white");
        fputs("<title>", f);
        sim_xml_text(f, p->policy);
        fprintf(f, " block %u: %.3f .. %.3f ms, %llu bytes, %u segment%s, calls %d..", b, blk->start * 1e3,
                blk->end * 1e3, (unsigned long long)bytes, blk->n_segments, blk->n_segments == 1 ? "" : "s",
                (int)seg[0].call);
        fprintf(f, "%d</title></rect>\n", (int)seg[blk->n_segments - 1].call);
    }
}

/* The measured blocks of one steady iteration, each next to the block the plan predicted. */
static void measured_lane(const canvas *c, const ub_plan *p, const sim_svg_opts *o, double y)
{
    for (int b = 0; b < o->n_measured; b++) {
        const sim_span *m = &o->measured[b];
        rect(c, "ub-measured", m->start, m->end, y + 3, LANE - 6, b % 2 ? "#00695c" : "#26a69a", "white");
        fprintf(c->f, "<title>measured block %d: %.3f .. %.3f ms", b, m->start * 1e3, m->end * 1e3);
        if ((uint32_t)b < p->n_blocks)
            fprintf(c->f, " (predicted %.3f .. %.3f ms)", p->blocks[b].start * 1e3, p->blocks[b].end * 1e3);
        fputs("</title></rect>\n", c->f);
    }
}

/* The title, the subtitle and the hint. */
static void svg_title(FILE *f, const ub_profile *prof, const sim_svg_opts *o)
{
    fputs("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n", f);
    fputs("<text x=\"12\" y=\"22\" font-size=\"16\" font-weight=\"bold\">", f);
    sim_xml_text(f, o->title ? o->title : "usbyte-sim timeline");
    fputs(": ", f);
    sim_xml_text(f, prof->name ? prof->name : "profile");
    fprintf(f, " (%d calls)</text>\n<text x=\"12\" y=\"42\" fill=\"#555\">", prof->n_calls);
    if (o->subtitle && *o->subtitle) {
        sim_xml_text(f, o->subtitle);
        fputs(" | ", f);
    }
    fputs("hover a shape for its numbers</text>\n", f);
}

/* Backward compute, with a tick per call's ready time. */
static void backward_lane(const canvas *c, const ub_profile *prof, double y)
{
    FILE *f = c->f;
    label(f, y, "backward compute", "bold");
    rect(c, "ub-backward", 0, prof->backward_end, y + 10, LANE - 12, "#9e9e9e", NULL);
    fprintf(f, "<title>backward: 0 .. %.3f ms</title></rect>\n", prof->backward_end * 1e3);
    for (int k = 0; k < prof->n_calls; k++) {
        double x = X(c, prof->calls[k].ready);
        fprintf(f, "<line class=\"ub-ready\" x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"#d32f2f\" "
                   "stroke-width=\"1\"><title>call %d ",
                x, y, x, y + 9, k);
        sim_xml_text(f, prof->calls[k].name ? prof->calls[k].name : "");
        fprintf(f, ": ready %.3f ms, %llu bytes, need %d</title></line>\n", prof->calls[k].ready * 1e3,
                (unsigned long long)prof->calls[k].bytes, prof->calls[k].need);
    }
}

/* One policy's lanes from y: its link, the measured blocks (measured: when they are this plan's),
 * its forward segments and its end; returns the y below them.  done, fstart: room for n_calls
 * and n_forward. */
static double policy_lanes(const canvas *c, const ub_profile *prof, const ub_plan *p, bool measured,
                           const sim_svg_opts *o, double *done, double *fstart, double y)
{
    FILE *f = c->f;
    ub_evaluate_const(prof, p, done);
    sim_forward_starts(prof, done, fstart);
    double lane_top = y;
    fputs("<g class=\"ub-policy\" data-policy=\"", f);
    sim_xml_text(f, p->policy);
    fputs("\">\n", f);
    char name[96];
    snprintf(name, sizeof(name), "%s: link", p->policy);
    label(f, y, name, "bold");
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", LEFT, y + LANE,
            WIDTH - RIGHT, y + LANE);
    link_lane(c, prof, p, y);
    y += LANE + GAP;
    if (measured) {
        label(f, y, "measured: link", "bold");
        measured_lane(c, p, o, y);
        y += LANE + GAP;
    }
    snprintf(name, sizeof(name), "%s: forward", p->policy);
    label(f, y, name, "normal");
    for (int s = 0; s < prof->n_forward; s++) {
        rect(c, "ub-forward", fstart[s], fstart[s] + prof->forward[s], y + 5, LANE - 10,
             s % 2 ? "#2e7d32" : "#66bb6a", NULL);
        fprintf(f, "<title>forward segment %d: %.3f .. %.3f ms</title></rect>\n", s, fstart[s] * 1e3,
                (fstart[s] + prof->forward[s]) * 1e3);
    }
    double xe = X(c, p->iteration);
    fprintf(f, "<line class=\"ub-end\" x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"black\" "
               "stroke-width=\"1.5\"/>\n",
            xe, lane_top, xe, y + LANE);
    /* Right of the end line, where no bar of the lane reaches. */
    fprintf(f, "<text class=\"ub-end-label\" x=\"%.2f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"start\">%.3f ms</text>\n</g>\n",
            xe + 4, y + LANE - 2, p->iteration * 1e3);
    return y + LANE + GAP;
}

/* The time axis in ms at axis_y, and the legend below it (the measured block's entry only when
 * drawn). */
static void axis_and_legend(const canvas *c, double axis_y, bool measured)
{
    FILE *f = c->f;
    double span_ms = c->tmax * 1e3, step = tick_step(span_ms);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n", LEFT, axis_y,
            WIDTH - RIGHT, axis_y);
    for (double t = 0; t <= span_ms + 1e-9; t += step) {
        double x = X(c, t / 1e3);
        fprintf(f, "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"black\"/>", x, axis_y, x, axis_y + 5);
        fprintf(f, "<text x=\"%.2f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"11\">%g</text>\n", x, axis_y + 18, t);
    }
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">time (ms)</text>\n", LEFT - 8, axis_y + 18);
    static const struct {
        const char *color, *text;
    } legend[] = {{"#9e9e9e", "backward compute"}, {"#d32f2f", "call ready"},
                  {"#42a5f5", "block: one whole call"}, {"#ab47bc", "block: part of a call"},
                  {"#ffa726", "block: several calls (staged)"}, {"#66bb6a", "forward segment"},
                  {"#26a69a", "measured block"}};
    size_t n_legend = sizeof(legend) / sizeof(legend[0]) - (measured ? 0 : 1);
    double lx = LEFT, ly = axis_y + 34;
    for (size_t i = 0; i < n_legend; i++) {
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"12\" fill=\"%s\"/>", lx, ly - 10, legend[i].color);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n", lx + 18, ly, legend[i].text);
        lx += 18 + 6.2 * (double)strlen(legend[i].text) + 12; /* about 6.2 px per character at 12 px */
    }
}

int sim_svg_emit(FILE *f, const ub_profile *prof, const ub_plan *const *plans, int n, const sim_svg_opts *opts)
{
    static const sim_svg_opts none = {0};
    const sim_svg_opts *o = opts ? opts : &none;
    int mplan = o->n_measured > 0 && o->measured_plan >= 0 && o->measured_plan < n ? o->measured_plan : -1;
    double *done = ub_xrealloc(NULL, sizeof(double) * (size_t)prof->n_calls, "drawing the timeline");
    double *fstart = ub_xrealloc(NULL, sizeof(double) * (size_t)prof->n_forward, "drawing the timeline");
    canvas c = {f, prof->backward_end};
    for (int i = 0; i < n; i++)
        if (plans[i]->iteration > c.tmax)
            c.tmax = plans[i]->iteration;
    for (int b = 0; mplan >= 0 && b < o->n_measured; b++)
        if (o->measured[b].end > c.tmax)
            c.tmax = o->measured[b].end;
    if (c.tmax <= 0)
        c.tmax = 1e-3;
    c.tmax *= 1.02;

    double top = 64, lanes_h = LANE + GAP + n * (2 * LANE + 2 * GAP) + (mplan >= 0 ? LANE + GAP : 0);
    double axis_y = top + lanes_h + 4, height = axis_y + 40 + 40;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
               "font-family=\"sans-serif\" font-size=\"12\">\n",
            WIDTH, height, WIDTH, height);
    svg_title(f, prof, o);
    backward_lane(&c, prof, top);
    double y = top + LANE + GAP;
    for (int i = 0; i < n; i++)
        y = policy_lanes(&c, prof, plans[i], i == mplan, o, done, fstart, y);
    axis_and_legend(&c, axis_y, mplan >= 0);
    fputs("</svg>\n", f);
    free(done);
    free(fstart);
    return ferror(f) ? -1 : 0;
}

int sim_svg_write(const char *path, const ub_profile *prof, const ub_plan *const *plans, int n, const char *subtitle,
                  char *err, size_t errlen)
{
    /* Built in memory, then written as the report is (ub_write_file_atomic). */
    ub_memtext t;
    FILE *f = ub_memtext_open(&t, path, err, errlen);
    if (!f)
        return -1;
    sim_svg_opts o = {.subtitle = subtitle};
    int bad = sim_svg_emit(f, prof, plans, n, &o);
    return ub_memtext_write(&t, path, bad, err, errlen);
}
