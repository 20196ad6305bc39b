/* A measured profile's compute with the stretch that its own communication put on it taken out
 * (docs/model.md rule 7): what the timeline needs to predict a plan that overlaps differently. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "usbyte/alloc.h"
#include "usbyte/model.h"
#include "usbyte/policy.h"

/* Seconds the link was busy in [0, t): the blocks' intervals, sorted and disjoint. */
static double busy_before(const ub_plan *p, double t)
{
    double busy = 0.0;
    for (uint32_t b = 0; b < p->n_blocks && p->blocks[b].start < t; b++)
        busy += fmin(p->blocks[b].end, t) - p->blocks[b].start;
    return busy;
}

int ub_interference_check(double f, char *why, size_t len)
{
    if (f >= 0.0 && f <= UB_INTERFERENCE_MAX)
        return 0;
    snprintf(why, len, "must be from 0 to %g (compute at half speed beside the link), got %g", UB_INTERFERENCE_MAX, f);
    return -1;
}

int ub_profile_unstretch(ub_profile *prof, double f)
{
    char why[120];
    if (ub_interference_check(f, why, sizeof why) != 0 || prof->interference != 0.0 || prof->n_calls <= 0)
        return -1;
    if (f == 0.0)
        return 0;
    /* The times were measured under the application's own calls, each issued when it was ready
     * and the link free: the wfbp plan's timeline at the measured (wall) times. */
    ub_plan own;
    ub_plan_init(&own, "wfbp");
    double *done = ub_xrealloc(NULL, sizeof(double) * (size_t)prof->n_calls, "taking the interference out");
    if (ub_policy_wfbp(prof, &own) != 0) {
        ub_plan_free(&own);
        free(done);
        return -1;
    }
    ub_evaluate(prof, &own, done);
    /* Inside a busy interval a wall second held 1 / (1 + f) of the compute's own. */
    double a = f / (1.0 + f);
    double *gate = ub_xrealloc(NULL, sizeof(double) * (size_t)prof->n_forward, "taking the interference out");
    ub_forward_gates(prof, done, gate);
    /* Rule 4 at the measured times, each forward segment's wall time held against the link. */
    double t = prof->backward_end + prof->gap;
    for (int s = 0; s < prof->n_forward; s++) {
        if (gate[s] > t)
            t = gate[s];
        double wall = prof->forward[s];
        prof->forward[s] = wall - a * (busy_before(&own, t + wall) - busy_before(&own, t));
        t += wall;
    }
    double backward = prof->backward_end - a * busy_before(&own, prof->backward_end);
    double until_forward = prof->backward_end + prof->gap;
    prof->gap = until_forward - a * busy_before(&own, until_forward) - backward;
    prof->backward_end = backward;
    for (int k = 0; k < prof->n_calls; k++)
        prof->calls[k].ready -= a * busy_before(&own, prof->calls[k].ready);
    prof->interference = f;
    free(gate);
    free(done);
    ub_plan_free(&own);
    return 0;
}
