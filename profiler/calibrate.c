/* Calibration's pure pieces (see usbyte/calibrate.h). */
#include <math.h>

#include "usbyte/calibrate.h"
#include "usbyte/median.h"
#include "usbyte/fit.h"

double ub_calib_block_bytes(const ub_plan *plan, uint32_t b)
{
    const ub_block *blk = &plan->blocks[b];
    double bytes = 0;
    for (uint32_t i = 0; i < blk->n_segments; i++)
        bytes += (double)plan->segments[blk->first_segment + i].length;
    return bytes;
}

/* Some call of the profile is within a knot's pooling ratio of `bytes`. */
static bool shown_by_calls(const ub_profile *prof, double bytes)
{
    for (int k = 0; k < prof->n_calls; k++) {
        double b = (double)prof->calls[k].bytes;
        if (b <= bytes * UB_FIT_KNOT_RATIO && bytes <= b * UB_FIT_KNOT_RATIO)
            return true;
    }
    return false;
}

int ub_calib_probe_sizes(const ub_profile *prof, const ub_plan *plan, uint64_t *out)
{
    bool uncovered = false;
    for (uint32_t b = 0; b < plan->n_blocks && !uncovered; b++)
        uncovered = !shown_by_calls(prof, ub_calib_block_bytes(plan, b));
    if (!uncovered)
        return 0;
    uint64_t all[UB_CALIB_MAX_PROBES];
    int n = ub_calibration_sizes(prof, all, UB_CALIB_MAX_PROBES), m = 0;
    for (int i = 0; i < n; i++)
        if (prof->staging_max > 0 && all[i] <= prof->staging_max)
            out[m++] = all[i];
    return m;
}

void ub_calib_encode(const double *seconds, int n, int repeats, double out[UB_CALIB_LEN])
{
    bool missing = n < 0 || n > UB_CALIB_MAX_PROBES || repeats < 1 || repeats > UB_CALIB_REPEATS;
    for (int i = 0; i < UB_CALIB_MAX_PROBES; i++) {
        double t[UB_CALIB_REPEATS];
        int got = 0;
        for (int r = 0; i < n && r < repeats && !missing; r++) {
            t[got] = seconds[r * n + i];
            if (!(t[got] > 0) || !isfinite(t[got]))
                missing = true;
            got++;
        }
        out[i] = i < n && !missing ? -ub_median(t, got) : 0.0;
    }
    out[UB_CALIB_MAX_PROBES] = missing ? 1.0 : 0.0;
    if (missing)
        for (int i = 0; i < UB_CALIB_MAX_PROBES; i++)
            out[i] = 0.0;
}

bool ub_calib_decode(const double combined[UB_CALIB_LEN], int n, double *seconds)
{
    if (!(combined[UB_CALIB_MAX_PROBES] == 0.0) || n < 0 || n > UB_CALIB_MAX_PROBES)
        return false;
    for (int i = 0; i < n; i++) {
        seconds[i] = -combined[i];
        if (!(seconds[i] > 0) || !isfinite(seconds[i]))
            return false;
    }
    return true;
}
