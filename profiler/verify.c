/* The verification window's layout, the ranks' vector and the verdict (see usbyte/verify.h).  The
 * statistics are robust ones (medians, the median absolute deviation): one iteration in which a
 * rank stalls makes one pair an outlier, which moves neither the verdict's gain nor its margin. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "usbyte/median.h"
#include "usbyte/verify.h"

int ub_verify_slot(int w)
{
    if (w < UB_VERIFY_SETTLE || w >= UB_VERIFY_RUNS_END || (w - UB_VERIFY_SETTLE) % UB_VERIFY_RUN != UB_VERIFY_RUN - 1)
        return -1;
    return (w - UB_VERIFY_SETTLE) / UB_VERIFY_RUN;
}

int ub_verify_slot_iteration(int j) { return UB_VERIFY_SETTLE + UB_VERIFY_RUN * j + UB_VERIFY_RUN - 1; }

ub_verify_side ub_verify_side_of(int w)
{
    if (w < UB_VERIFY_SETTLE)
        return UB_VERIFY_RUN_PLAN;
    if (w >= UB_VERIFY_RUNS_END)
        return UB_VERIFY_RUN_PASS;
    return ((w - UB_VERIFY_SETTLE) / UB_VERIFY_RUN) % 2 == 0 ? UB_VERIFY_RUN_PLAN : UB_VERIFY_RUN_PASS;
}

void ub_verify_encode(const double seconds[UB_VERIFY_SLOTS], double out[UB_VERIFY_LEN])
{
    out[0] = 1.0;
    for (int j = 0; j < UB_VERIFY_SLOTS; j++) {
        bool have = isfinite(seconds[j]) && seconds[j] > 0 && seconds[j] < 1e6;
        out[1 + j] = have ? nearbyint(seconds[j] * 1e9) : 0.0;
        out[1 + UB_VERIFY_SLOTS + j] = have ? 1.0 : 0.0;
    }
}

/* 1.4826 x MAD estimates a normal sample's standard deviation; where more than half the values
 * are equal (MAD 0) the sample standard deviation stands in, so a margin is never zero by
 * accident of rounding while the values differ. */
static ub_verify_stats stats_of(const double *x, int n)
{
    ub_verify_stats s = {.n = n, .median = NAN, .spread = NAN};
    if (n == 0)
        return s;
    double v[UB_VERIFY_MAX_PAIRS];
    memcpy(v, x, (size_t)n * sizeof *v);
    s.median = ub_median(v, n);
    double dev[UB_VERIFY_MAX_PAIRS], mean = 0, ss = 0;
    for (int i = 0; i < n; i++) {
        dev[i] = fabs(x[i] - s.median);
        mean += x[i];
    }
    mean /= n;
    s.spread = 1.4826 * ub_median(dev, n);
    if (s.spread == 0 && n > 1) {
        for (int i = 0; i < n; i++)
            ss += (x[i] - mean) * (x[i] - mean);
        s.spread = sqrt(ss / (n - 1));
    }
    return s;
}

void ub_verify_judge(const double agreed[UB_VERIFY_LEN], const char *policy, const ub_verify_verdict *earlier,
                     ub_verify_verdict *out)
{
    memset(out, 0, sizeof *out);
    int first = 0;
    if (earlier && earlier->windows > 0 && earlier->windows < UB_VERIFY_MAX_WINDOWS) {
        out->windows = earlier->windows;
        first = earlier->windows * UB_VERIFY_PER_SIDE;
        memcpy(out->plan_slots, earlier->plan_slots, sizeof out->plan_slots);
        memcpy(out->pass_slots, earlier->pass_slots, sizeof out->pass_slots);
    }
    out->windows++;
    for (int j = 0; j < UB_VERIFY_SLOTS; j++) {
        double n = agreed[1 + UB_VERIFY_SLOTS + j];
        out->slots[j] = n >= 0.5 ? agreed[1 + j] / n * 1e-9 : NAN;
    }
    for (int i = 0; i < UB_VERIFY_PER_SIDE; i++) {
        out->plan_slots[first + i] = out->slots[2 * i];
        out->pass_slots[first + i] = out->slots[2 * i + 1];
    }
    double plan[UB_VERIFY_MAX_PAIRS] = {0}, pass[UB_VERIFY_MAX_PAIRS] = {0}, diff[UB_VERIFY_MAX_PAIRS] = {0};
    int np = 0, nq = 0, nd = 0;
    for (int i = 0; i < out->windows * UB_VERIFY_PER_SIDE; i++) {
        double p = out->plan_slots[i], q = out->pass_slots[i];
        if (isfinite(p))
            plan[np++] = p;
        if (isfinite(q))
            pass[nq++] = q;
        if (isfinite(p) && isfinite(q))
            diff[nd++] = q - p;
    }
    out->plan = stats_of(plan, np);
    out->pass = stats_of(pass, nq);
    out->pairs = nd;
    ub_verify_stats d = stats_of(diff, nd);
    out->gain = d.median;
    /* The median's standard error is about 1.2533 sigma / sqrt(n) for a normal sample. */
    out->margin = nd > 1 ? UB_VERIFY_Z * 1.2533 * d.spread / sqrt((double)nd) : NAN;
    out->keep = nd >= 3 && out->gain > out->margin;
    /* Inconclusive: too few pairs, or the plan side faster but within the noise.  A plan measured
     * slower (or equal) is dropped at once. */
    out->again = !out->keep && out->windows < UB_VERIFY_MAX_WINDOWS && (nd < 3 || out->gain > 0);
    char windows[64] = "";
    if (out->windows > 1)
        snprintf(windows, sizeof windows, " over %d windows", out->windows);
    char outcome[64];
    if (out->again)
        snprintf(outcome, sizeof outcome, "measured again (window %d of at most %d)", out->windows + 1,
                 UB_VERIFY_MAX_WINDOWS);
    else
        snprintf(outcome, sizeof outcome, "%s", out->keep ? "kept" : "dropped");
    if (nd < 3) {
        snprintf(out->reason, sizeof out->reason,
                 "%s: only %d pairs of iterations measured on every side%s (timing events not complete, or "
                 "deviations from the plan): not shown faster than pass-through, %s", policy, nd, windows, outcome);
        return;
    }
    snprintf(out->reason, sizeof out->reason,
             "%s: %.3f ms against pass-through's %.3f ms (medians of %d and %d iterations, alternating%s); "
             "%s by %.3f ms per iteration (median of %d pairs), %s the noise margin of %.3f ms "
             "(%.0f standard errors of that median, from the pairs' spread): %s",
             policy, 1e3 * out->plan.median, 1e3 * out->pass.median, np, nq, windows,
             out->gain >= 0 ? "faster" : "slower", 1e3 * fabs(out->gain), nd,
             out->keep ? "beyond" : out->gain >= 0 ? "not beyond" : "against", 1e3 * out->margin, UB_VERIFY_Z,
             outcome);
}

double ub_verify_executor_wait(const double *ready, int n_blocks, int stride, const double *t0, const double *start,
                               const double *end, int n_slots)
{
    if (n_blocks <= 0 || n_slots <= 0)
        return NAN;
    double *w = malloc(sizeof *w * (size_t)n_blocks * (size_t)n_slots);
    if (!w)
        return NAN;
    int n = 0;
    for (int slot = 0; slot < n_slots; slot++)
        for (int b = 0; b < n_blocks; b++) {
            double at = start[slot * stride + b];
            if (!isfinite(t0[slot]) || !isfinite(ready[b]) || !isfinite(at))
                continue;
            double from = t0[slot] + ready[b], before = b > 0 ? end[slot * stride + b - 1] : NAN;
            if (isfinite(before) && before > from)
                from = before;
            w[n++] = at > from ? at - from : 0.0;
        }
    double m = n > 0 ? ub_median(w, n) : NAN;
    free(w);
    return m;
}

void ub_verify_report_init(ub_verify_report *r)
{
    memset(r, 0, sizeof *r);
    r->pass_through_iteration = r->pass_through_spread = NAN;
    r->at_call = -1;
    for (int j = 0; j < 2 * UB_VERIFY_MAX_PAIRS; j++)
        r->slots[j] = NAN;
}
