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
