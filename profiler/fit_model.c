/* The profile's cost model from measured samples (usbyte/fit.h, ub_fit_cost_model): the line, and
 * the curve through the knots where the line does not follow them. */
#include <math.h>
#include <stdlib.h>

#include "usbyte/fit.h"
#include "usbyte/model.h"

int ub_fit_cost_model(const ub_fit_sample *s, size_t n, ub_profile *prof, ub_fit_result *line)
{
    ub_fit_result local;
    if (!line)
        line = &local;
    int rc = ub_fit_linear(s, n, UB_FIT_PLAIN, line);
    prof->alpha = line->alpha;
    prof->beta = line->beta;
    prof->curve.n = 0;
    if (rc != 0)
        return rc;
    ub_fit_knot knot[UB_NET_MAX_SEGMENTS - 1];
    int k = 0;
    if (ub_fit_knots(s, n, UB_NET_MAX_SEGMENTS - 1, knot, &k) != 0 || k < 2)
        return 0;
    bool follows = true;
    for (int i = 0; i < k && follows; i++) {
        double on_line = line->alpha + line->beta * knot[i].bytes;
        follows = fabs(on_line - knot[i].seconds) <= UB_FIT_LINE_TOLERANCE * knot[i].seconds;
    }
    if (follows)
        return 0;
    double bytes[UB_NET_MAX_SEGMENTS - 1], seconds[UB_NET_MAX_SEGMENTS - 1];
    for (int i = 0; i < k; i++) {
        bytes[i] = knot[i].bytes;
        seconds[i] = knot[i].seconds;
    }
    if (ub_net_curve_from_points(bytes, seconds, k, UB_NET_TAIL_CHORDS, &prof->curve) != 0)
        prof->curve.n = 0;
    return 0;
}

/* The probe sizes of one step (powers of step from UB_CALIBRATION_MIN up to hi), skipping those
 * the calls show; writes them into out when it is not NULL.  Returns how many. */
static int probe_series(const ub_profile *prof, double lo, double hi, double step, uint64_t *out)
{
    int n = 0;
    for (double size = (double)UB_CALIBRATION_MIN; size <= hi * UB_FIT_KNOT_RATIO; size *= step) {
        if (size < lo / UB_FIT_KNOT_RATIO)
            continue;
        bool covered = false; /* a size the calls already show, within a knot's pooling ratio */
        for (int k = 0; k < prof->n_calls && !covered; k++) {
            double b = (double)prof->calls[k].bytes;
            covered = b <= size * UB_FIT_KNOT_RATIO && size <= b * UB_FIT_KNOT_RATIO;
        }
        if (covered)
            continue;
        if (out)
            out[n] = (uint64_t)size;
        n++;
    }
    return n;
}

int ub_calibration_sizes(const ub_profile *prof, uint64_t *out, int max)
{
    if (prof->n_calls <= 0 || max <= 0)
        return 0;
    double lo = (double)prof->calls[0].bytes, hi = 0, total = 0;
    for (int k = 0; k < prof->n_calls; k++) {
        double b = (double)prof->calls[k].bytes;
        lo = b < lo ? b : lo;
        hi = b > hi ? b : hi;
        total += b;
    }
    /* Blocks range from the pieces the policies cut (UB_CALIBRATION_MIN and up) to a staged
     * block of everything (at most staging_max). */
    if (lo > UB_CALIBRATION_MIN)
        lo = UB_CALIBRATION_MIN;
    double top = prof->staging_max && (double)prof->staging_max < total ? (double)prof->staging_max : total;
    if (top > hi)
        hi = top;
    double step = UB_CALIBRATION_STEP;
    while (probe_series(prof, lo, hi, step, NULL) > max)
        step *= step;
    return probe_series(prof, lo, hi, step, out);
}

int ub_refit_with_blocks(const ub_fit_sample *base, size_t n, const ub_profile *prof, const ub_plan *plan,
                         const double *block_seconds, ub_profile *out)
{
    ub_fit_sample *s = malloc(sizeof *s * (n + plan->n_blocks + 1));
    if (!s)
        return -1;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        s[m++] = base[i];
    for (uint32_t b = 0; b < plan->n_blocks; b++) {
        const ub_block *blk = &plan->blocks[b];
        double bytes = 0;
        for (uint32_t i = 0; i < blk->n_segments; i++)
            bytes += (double)plan->segments[blk->first_segment + i].length;
        s[m++] = (ub_fit_sample){bytes, block_seconds[b]};
    }
    *out = *prof;
    int rc = ub_fit_cost_model(s, m, out, NULL);
    free(s);
    return rc;
}
