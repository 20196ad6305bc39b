/* Where an iteration begins (see usbyte/record.h, ub_iteration_phase and ub_phase_majority).
 *
 * The iteration detector locks on the first place where the call sequence repeats, which is an
 * iteration boundary only when the job's first call comes first.  After a re-detection (a
 * refuted sub-period, a deviation) the lock can fall anywhere, and the profiled "iteration" then
 * runs from the middle of one backward pass into the next: half of its calls look ready an
 * iteration later, the forward pass sits between them, and every plan made on it merges what a
 * forward pass separates.  A true iteration has its largest silence between ready times where
 * the forward pass and the optimizer run: between its last call and the next iteration's first.
 *
 * Each profiled iteration of each rank is judged on its own ready times and its own wrap (its
 * last ready to the next iteration's first), and the iteration moves only where most of them
 * say so.  Judging the agreed profile instead would compare numbers of different ranks and
 * iterations (the agreed ready times are the latest over ranks of each rank's mean): one stall
 * of one rank inside one iteration, or a job whose iterations follow each other without a
 * forward pass, then looks like a silence wider than the wrap, and the iteration is moved to
 * where it does not begin. */
#include <math.h>

#include "usbyte/record.h"

int ub_iteration_phase(const double *ready, int n, double iteration)
{
    if (!ready || n < 2 || !(iteration > 0) || !isfinite(ready[0]))
        return 0;
    int best = 0;
    double widest = 0, latest = ready[0];
    for (int k = 1; k < n; k++) {
        if (!isfinite(ready[k]))
            continue;  /* never measured: no silence is known on either side of it */
        double gap = ready[k] - latest;
        if (gap > widest) {
            widest = gap;
            best = k;
        }
        if (ready[k] > latest)
            latest = ready[k];
    }
    /* From the latest ready to the next iteration's first call (which is ready at `iteration`). */
    double wrap = ready[0] + iteration - latest;
    if (best == 0 || widest < UB_PHASE_MIN_GAP || widest <= UB_PHASE_RATIO * (wrap > 0 ? wrap : 0))
        return 0;
    return best;
}

int ub_phase_majority(const double *votes, int n, double voters)
{
    if (!votes || !(voters > 0))
        return 0;
    for (int k = 1; k < n; k++)
        if (2 * votes[k] > voters)
            return k;
    return 0;
}
