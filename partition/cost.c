/* The cost function of docs/model.md ("The cost function"): what one allreduce of M bytes costs
 * the link, the line that touches it at a size (for the policies that reason with alpha and
 * beta), the lines below it (for the lower bound), and the checks of a curve; and what one block
 * costs and whether it fits the staging limit.  Below the policies of partition/ and order/ and
 * the evaluator, which all price blocks with it. */
#include <math.h>
#include <stdio.h>

#include "usbyte/model.h"

/* The segment that holds `bytes`: the last one whose `from` is at or below it (binary search). */
static int segment_at(const ub_net_curve *c, double bytes)
{
    int lo = 0, hi = c->n - 1;
    while (lo < hi) {
        int mid = lo + (hi - lo + 1) / 2;
        if (c->seg[mid].from <= bytes)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

double ub_link_cost(const ub_profile *prof, double bytes)
{
    const ub_net_curve *c = &prof->curve;
    if (c->n <= 0)
        return prof->alpha + prof->beta * bytes;
    const ub_net_segment *s = &c->seg[segment_at(c, bytes)];
    return s->alpha + s->beta * bytes;
}

void ub_link_add(ub_profile *prof, double seconds)
{
    prof->alpha += seconds;
    for (int i = 0; i < prof->curve.n; i++)
        prof->curve.seg[i].alpha += seconds;
}

void ub_link_local(const ub_profile *prof, double bytes, double *alpha, double *beta)
{
    const ub_net_curve *c = &prof->curve;
    if (c->n <= 0) {
        *alpha = prof->alpha;
        *beta = prof->beta;
        return;
    }
    const ub_net_segment *s = &c->seg[segment_at(c, bytes)];
    *alpha = s->alpha;
    *beta = s->beta;
}

void ub_link_cost_maxima(const ub_profile *prof, double *alpha, double *beta)
{
    const ub_net_curve *c = &prof->curve;
    *alpha = c->n <= 0 ? prof->alpha : 0.0;
    *beta = c->n <= 0 ? prof->beta : 0.0;
    for (int i = 0; i < c->n; i++) {
        *alpha = c->seg[i].alpha > *alpha ? c->seg[i].alpha : *alpha;
        *beta = c->seg[i].beta > *beta ? c->seg[i].beta : *beta;
    }
}

/* The corners of the curve's graph: each segment at its two ends (the last one at its start and
 * at twice that, which with its slope covers the ray).  Returns their number (<= 2n). */
static int corners(const ub_net_curve *c, double *x, double *y)
{
    int m = 0;
    for (int i = 0; i < c->n; i++) {
        const ub_net_segment *s = &c->seg[i];
        double lo = s->from, hi = i + 1 < c->n ? c->seg[i + 1].from : (s->from > 0 ? 2 * s->from : 1.0);
        x[m] = lo;
        y[m++] = s->alpha + s->beta * lo;
        x[m] = hi;
        y[m++] = s->alpha + s->beta * hi;
    }
    return m;
}

int ub_link_lower_lines(const ub_profile *prof, double *alpha, double *beta, int max)
{
    const ub_net_curve *c = &prof->curve;
    if (max <= 0)
        return 0;
    if (c->n <= 0) {
        alpha[0] = prof->alpha;
        beta[0] = prof->beta;
        return 1;
    }
    double x[2 * UB_NET_MAX_SEGMENTS], y[2 * UB_NET_MAX_SEGMENTS];
    int m = corners(c, x, y);
    double ray = c->seg[c->n - 1].beta;
    /* Candidate slopes: 0, the ray's, and the edges of the corners' lower convex hull (x is
     * non-decreasing); each line gets the highest intercept that keeps it under every corner. */
    double slope[2 * UB_NET_MAX_SEGMENTS + 2];
    int ns = 0, hull[2 * UB_NET_MAX_SEGMENTS], h = 0;
    slope[ns++] = 0.0;
    slope[ns++] = ray;
    for (int i = 0; i < m; i++) {
        while (h >= 2) {
            int a = hull[h - 2], b = hull[h - 1];
            /* drop b when it is not below the chord a-i */
            if ((y[b] - y[a]) * (x[i] - x[a]) >= (y[i] - y[a]) * (x[b] - x[a]))
                h--;
            else
                break;
        }
        hull[h++] = i;
    }
    for (int i = 0; i + 1 < h; i++) {
        double dx = x[hull[i + 1]] - x[hull[i]];
        if (dx > 0)
            slope[ns++] = (y[hull[i + 1]] - y[hull[i]]) / dx;
    }
    int out = 0;
    for (int k = 0; k < ns && out < max; k++) {
        double b = slope[k];
        if (!(b >= 0.0 && b <= ray) && k != 0)
            continue;
        if (b > ray)
            b = ray;
        double a = INFINITY;
        for (int i = 0; i < m; i++)
            if (y[i] - b * x[i] < a)
                a = y[i] - b * x[i];
        if (!(a >= 0.0))
            continue; /* a negative startup would reward splitting: not a bound the DP may use */
        bool dup = false;
        for (int j = 0; j < out; j++)
            if (alpha[j] == a && beta[j] == b)
                dup = true;
        if (!dup) {
            alpha[out] = a;
            beta[out] = b;
            out++;
        }
    }
    return out;
}

int ub_net_curve_check(const ub_net_curve *c, bool monotone, char *err, size_t errlen)
{
    if (c->n < 1 || c->n > UB_NET_MAX_SEGMENTS) {
        snprintf(err, errlen, "has %d segments (1 to %d)", c->n, UB_NET_MAX_SEGMENTS);
        return -1;
    }
    for (int i = 0; i < c->n; i++) {
        const ub_net_segment *s = &c->seg[i];
        if (!isfinite(s->from) || !isfinite(s->alpha) || !isfinite(s->beta)) {
            snprintf(err, errlen, "segments[%d]: not finite", i);
            return -1;
        }
        if (i == 0 && s->from != 0) {
            snprintf(err, errlen, "segments[0].from is %g (the first segment starts at 0 bytes)", s->from);
            return -1;
        }
        if (i > 0 && !(s->from > c->seg[i - 1].from)) {
            snprintf(err, errlen, "segments[%d].from %g is not above segments[%d].from %g", i, s->from, i - 1,
                     c->seg[i - 1].from);
            return -1;
        }
        if (s->beta < 0 || (monotone && s->alpha + s->beta * s->from < 0)) {
            snprintf(err, errlen, "segments[%d]: %s is negative", i, s->beta < 0 ? "beta" : "its cost at from");
            return -1;
        }
        if (s->alpha < 0 && s->alpha + s->beta * s->from < 0) {
            snprintf(err, errlen, "segments[%d]: a negative cost at %g bytes", i, s->from);
            return -1;
        }
        if (monotone && i > 0) {
            const ub_net_segment *p = &c->seg[i - 1];
            double before = p->alpha + p->beta * s->from, after = s->alpha + s->beta * s->from;
            if (after < before - 1e-12 * (before > 0 ? before : 0)) {
                snprintf(err, errlen,
                         "segments[%d] costs %g s at %g bytes, less than segments[%d]'s %g s there (the cost must "
                         "not fall with more bytes)",
                         i, after, s->from, i - 1, before);
                return -1;
            }
        }
    }
    return 0;
}

int ub_net_curve_from_points(const double *bytes, const double *seconds, int n, ub_net_tail tail,
                             ub_net_curve *out)
{
    out->n = 0;
    if (n < 1 || n + 1 > UB_NET_MAX_SEGMENTS)
        return -1;
    for (int i = 0; i < n; i++)
        if (!(bytes[i] > 0) || !(seconds[i] >= 0) || !isfinite(bytes[i]) || !isfinite(seconds[i]) ||
            (i > 0 && !(bytes[i] > bytes[i - 1])))
            return -1;
    int m = 0, first = 0;
    if (tail == UB_NET_TAIL_TABLE || n == 1) {
        out->seg[m++] = (ub_net_segment){0.0, seconds[0], 0.0}; /* below the first point: its time */
    } else {
        /* The first chord runs down to 0 bytes, unless it would start below 0 seconds: then the
         * first point's time holds below it. */
        double b = (seconds[1] - seconds[0]) / (bytes[1] - bytes[0]), a = seconds[0] - b * bytes[0];
        if (a >= 0) {
            out->seg[m++] = (ub_net_segment){0.0, a, b};
            first = 1;
        } else {
            out->seg[m++] = (ub_net_segment){0.0, seconds[0], 0.0};
        }
    }
    for (int i = first; i + 1 < n; i++) {
        double b = (seconds[i + 1] - seconds[i]) / (bytes[i + 1] - bytes[i]);
        out->seg[m++] = (ub_net_segment){bytes[i], seconds[i] - b * bytes[i], b};
    }
    /* Above the last point: the table's rule (time in proportion to bytes); a fitted curve's last
     * chord runs on. */
    if (tail == UB_NET_TAIL_TABLE || n == 1)
        out->seg[m++] = (ub_net_segment){bytes[n - 1], 0.0, seconds[n - 1] / bytes[n - 1]};
    out->n = m;
    return 0;
}

/* A block of `bytes`: the link's cost, and the staging copy's when it is staged (docs/model.md). */
double ub_block_cost(const ub_profile *prof, double bytes, int staged)
{
    return ub_link_cost(prof, bytes) + (staged ? prof->copy_beta * bytes : 0.0);
}

/* Whether a staged block of `bytes` fits the staging limit (0: none). */
bool ub_staging_fits(const ub_profile *prof, double bytes)
{
    return prof->staging_max == 0 || bytes <= (double)prof->staging_max;
}
