/* Where an iteration begins (see usbyte/record.h, ub_iteration_phase).
 *
 * The iteration detector locks on the first place where the call sequence repeats, which is an
 * iteration boundary only when the job's first call comes first.  After a re-detection (a
 * refuted sub-period, a deviation) the lock can fall anywhere, and the profiled "iteration" then
 * runs from the middle of one backward pass into the next: half of its calls look ready an
 * iteration later, the forward pass sits between them, and every plan made on it merges what a
 * forward pass separates.  A true iteration has its largest silence between ready times where
 * the forward pass and the optimizer run: between its last call and the next iteration's first. */
#include "usbyte/record.h"

int ub_iteration_phase(const ub_profile *p, double iteration)
{
    if (!p || p->n_calls < 2 || !(iteration > 0))
        return 0;
    int best = 0;
    double widest = 0, latest = p->calls[0].ready;
    for (int k = 1; k < p->n_calls; k++) {
        double gap = p->calls[k].ready - latest;
        if (gap > widest) {
            widest = gap;
            best = k;
        }
        if (p->calls[k].ready > latest)
            latest = p->calls[k].ready;
    }
    /* From the latest ready to the next iteration's first call (which is ready at `iteration`). */
    double wrap = iteration - latest;
    if (best == 0 || widest < UB_PHASE_MIN_GAP || widest <= UB_PHASE_RATIO * (wrap > 0 ? wrap : 0))
        return 0;
    return best;
}
