/* The cost model fit: duration = alpha + beta * bytes, by least squares over measured collective
 * durations (docs/design.md section 5; docs/model.md's `net.alpha` / `net.beta`).
 *
 * Method.  The data are centred on their (weighted) means before the normal equations are formed,
 * so sizes of 1e9 bytes and durations of 1e-5 s lose no precision.  The answer is the least-
 * squares solution CONSTRAINED to alpha >= 0 and beta >= 0 (a negative startup cost or bandwidth
 * term means noise, and the planner needs a valid model): when the unconstrained solution is
 * infeasible, every face of the constraint set is solved (alpha = 0: a line through the origin;
 * beta = 0: alpha = mean; both 0) and the feasible one with the smallest weighted squared error is
 * kept, which is the exact constrained optimum of this convex problem.  The flags say which
 * constraint is active.
 * Weights: UB_FIT_PLAIN gives every sample weight 1 (right for absolute timer/scheduling jitter,
 * the emulator's case); UB_FIT_RELATIVE weights each sample by 1/seconds^2, i.e. minimises relative
 * residuals, so that small calls (which decide alpha) are not drowned by large ones when sizes span
 * orders of magnitude (slightly biased towards shorter durations under large noise).
 * One distinct size: beta and alpha cannot be separated.  The fit then puts the whole cost on the
 * bandwidth term (alpha = 0, beta = mean/bytes), which reproduces the observed size exactly, and sets
 * UB_FIT_ONE_SIZE; if that one size is 0 bytes, alpha = mean and beta = 0.  Callers that know a
 * better alpha (configuration, NCCL's own estimate) should use it when the flag is set.
 * Invalid samples (non-finite, negative bytes, negative or non-finite seconds, non-positive
 * seconds under UB_FIT_RELATIVE) are skipped and counted in `ignored`. */
#ifndef USBYTE_FIT_H
#define USBYTE_FIT_H

#include <stddef.h>
#include <stdint.h>

#include "usbyte/plan.h"
#include "usbyte/profile.h"

typedef struct ub_fit_sample {
    double bytes;
    double seconds;
} ub_fit_sample;

typedef enum { UB_FIT_PLAIN, UB_FIT_RELATIVE } ub_fit_weighting;

enum {
    UB_FIT_EMPTY = 1u << 0,         /* no valid sample: alpha = beta = 0 */
    UB_FIT_ONE_SIZE = 1u << 1,      /* one distinct size: see above */
    UB_FIT_ALPHA_CLAMPED = 1u << 2, /* the unconstrained alpha was negative: alpha = 0 */
    UB_FIT_BETA_CLAMPED = 1u << 3,  /* the unconstrained beta was negative: beta = 0 */
};

typedef struct ub_fit_result {
    double alpha;          /* seconds, >= 0 */
    double beta;           /* seconds per byte, >= 0 */
    double rms;            /* unweighted RMS of (seconds - alpha - beta*bytes) over valid samples */
    double rel_rms;        /* rms / mean seconds (0 when the mean is 0) */
    double max_abs;        /* largest |residual| */
    size_t samples;        /* valid samples used */
    size_t ignored;        /* invalid samples skipped */
    size_t distinct_sizes; /* distinct byte counts among the valid samples */
    unsigned flags;        /* UB_FIT_* */
} ub_fit_result;

/* Fits n samples.  Returns 0, or -1 with UB_FIT_EMPTY set when no sample is valid (or when out of
 * memory for counting distinct sizes, with `samples` 0).  Never reads beyond n; s may be NULL when
 * n is 0. */
int ub_fit_linear(const ub_fit_sample *s, size_t n, ub_fit_weighting w, ub_fit_result *out);

/* The knots of the cost curve (docs/model.md, "Fitting the curve"): a monotone piecewise-linear
 * cost through them follows a network that is not one line.  From the valid samples (bytes and
 * seconds > 0), each distinct size keeps the median of its times (robust to a slow repetition, as
 * the runtime's median over iterations is); sizes within UB_FIT_KNOT_RATIO of the smallest
 * of their bin pool into one knot at the means of their bytes and times (exact on a line, and
 * no chord between two near sizes that noise would tilt); the ratio squares until at most
 * max_knots remain; the knots' times are then made non-decreasing by least squares (pool-
 * adjacent-violators, weighted by the sizes a knot holds).  Fills out (bytes rising) and
 * *n_out; returns 0, or -1 (with *n_out 0) when no sample is valid or out of memory.  Pure:
 * the same samples give the same knots on every rank. */
#define UB_FIT_KNOT_RATIO 1.5
typedef struct ub_fit_knot {
    double bytes;
    double seconds;
} ub_fit_knot;
int ub_fit_knots(const ub_fit_sample *s, size_t n, int max_knots, ub_fit_knot *out, int *n_out);

/* A profile's cost model from measured samples (docs/model.md, "Fitting the curve"): the line
 * (ub_fit_linear, plain weights) into prof->alpha and prof->beta (and *line when not NULL), and,
 * when some knot of ub_fit_knots lies more than UB_FIT_LINE_TOLERANCE (relative) off that line,
 * the curve through the knots (ub_net_curve_from_points, chords run on outside them) into
 * prof->curve; otherwise prof->curve.n = 0.  Returns ub_fit_linear's status. */
#define UB_FIT_LINE_TOLERANCE 0.03
int ub_fit_cost_model(const ub_fit_sample *s, size_t n, ub_profile *prof, ub_fit_result *line);

/* The sizes to probe where the calls do not show the sizes a plan would issue (docs/model.md,
 * "Calibration"): powers of UB_CALIBRATION_STEP from UB_CALIBRATION_MIN bytes up to the
 * largest block a plan can issue (everything, or staging_max), skipping those within
 * UB_FIT_KNOT_RATIO of a call's size; the step squares until at most max remain.  A pure
 * function of the profile's call sizes and staging_max (agreed data): every rank gets the same
 * sizes.  Fills out (rising) and returns how many. */
#define UB_CALIBRATION_MIN 65536
#define UB_CALIBRATION_STEP 4.0
int ub_calibration_sizes(const ub_profile *prof, uint64_t *out, int max);

/* The re-fit once a plan runs (docs/model.md, "Fitting the curve"): the base samples (what the
 * model was fitted on) plus one sample per block of the plan, its bytes and block_seconds[b] (the
 * measured duration of its allreduce, agreed over the ranks like the calls'), fitted by
 * ub_fit_cost_model into *out, a shallow copy of *prof (it shares the calls and the forward
 * segments; only the net differs).  Returns 0, -1 when out of memory or no sample is valid. */
int ub_refit_with_blocks(const ub_fit_sample *base, size_t n, const ub_profile *prof, const ub_plan *plan,
                         const double *block_seconds, ub_profile *out);

/* docs/model.md's ring allreduce of M bytes over p ranks costs 2(p-1)*a0 + 2(p-1)/p * M * b0.
 * ub_fit_to_ring turns a fitted per-call (alpha, beta) into the per-hop (a0, b0);
 * ub_ring_to_fit is its inverse.  Both return -1 (outputs untouched) unless ranks >= 2. */
int ub_fit_to_ring(double alpha, double beta, int ranks, double *a0, double *b0);
int ub_ring_to_fit(double a0, double b0, int ranks, double *alpha, double *beta);

#endif
