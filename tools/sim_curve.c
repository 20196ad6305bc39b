/* usbyte-sim on a measured curve (--net-table): the planner's model as the runtime would fit it
 * from the table, and how far a model is from the table. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "usbyte/fit.h"
#include "usbyte/model.h"

void sim_table_profile(const ub_profile *prof, const sim_net_table *t, ub_profile *on_curve)
{
    *on_curve = *prof;
    sim_net_table_curve(t, &on_curve->curve);
    on_curve->has_net = true;
}

/* prof's cost: the line fitted on n samples. */
static void set_line(ub_profile *prof, const ub_fit_sample *s, int n, ub_fit_weighting w)
{
    ub_fit_result line;
    ub_fit_linear(s, (size_t)n, w, &line);
    prof->alpha = line.alpha;
    prof->beta = line.beta;
    prof->curve.n = 0;
    prof->has_net = true;
}

int sim_model_from_table(ub_profile *prof, const sim_net_table *t, sim_model_kind kind, int *n_probes)
{
    ub_profile truth;
    sim_table_profile(prof, t, &truth);
    uint64_t probe[UB_NET_MAX_SEGMENTS];
    int np = kind == SIM_MODEL_FIT ? ub_calibration_sizes(prof, probe, UB_NET_MAX_SEGMENTS) : 0;
    ub_fit_sample *s = malloc(sizeof *s * ((size_t)prof->n_calls + (size_t)np));
    if (!s)
        return -1;
    int n = 0;
    for (int k = 0; k < prof->n_calls; k++, n++)
        s[n] = (ub_fit_sample){(double)prof->calls[k].bytes, ub_link_cost(&truth, (double)prof->calls[k].bytes)};
    for (int i = 0; i < np; i++, n++)
        s[n] = (ub_fit_sample){(double)probe[i], ub_link_cost(&truth, (double)probe[i])};
    if (kind == SIM_MODEL_FIT)
        ub_fit_cost_model(s, (size_t)n, prof, NULL);
    else
        set_line(prof, s, n, UB_FIT_PLAIN);
    prof->has_net = true;
    free(s);
    if (n_probes)
        *n_probes = np;
    return 0;
}

void sim_line_on_rows(const sim_net_table *t, double lo, double hi, ub_profile *prof)
{
    ub_fit_sample s[SIM_NET_TABLE_MAX];
    int n = 0;
    for (int i = 0; i < t->n; i++)
        if (t->bytes[i] >= lo && t->bytes[i] <= hi)
            s[n++] = (ub_fit_sample){t->bytes[i], t->has_inplace ? t->in_s[i] : t->out_s[i]};
    set_line(prof, s, n, UB_FIT_RELATIVE);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Is `bytes` one of the sizes the model was fitted on (the calls' or the calibration's)? */
static bool sampled(const ub_profile *prof, double bytes)
{
    for (int k = 0; k < prof->n_calls; k++)
        if ((double)prof->calls[k].bytes == bytes)
            return true;
    uint64_t probe[UB_NET_MAX_SEGMENTS];
    int np = ub_calibration_sizes(prof, probe, UB_NET_MAX_SEGMENTS);
    for (int i = 0; i < np; i++)
        if ((double)probe[i] == bytes)
            return true;
    return false;
}

void sim_model_error(const ub_profile *model, const sim_net_table *t, double lo, double hi, bool held_out,
                     sim_error *out)
{
    double e[SIM_NET_TABLE_MAX];
    int n = 0;
    for (int i = 0; i < t->n; i++) {
        if (t->bytes[i] < lo || t->bytes[i] > hi || (held_out && sampled(model, t->bytes[i])))
            continue;
        double truth = t->has_inplace ? t->in_s[i] : t->out_s[i];
        e[n++] = truth > 0 ? fabs(ub_link_cost(model, t->bytes[i]) - truth) / truth : 0.0;
    }
    qsort(e, (size_t)n, sizeof *e, cmp_double);
    out->rows = n;
    out->median = n == 0 ? NAN : n % 2 ? e[n / 2] : 0.5 * (e[n / 2 - 1] + e[n / 2]);
    out->max = n == 0 ? NAN : e[n - 1];
}
