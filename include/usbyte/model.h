/* The docs/model.md timing model: validity, the timeline evaluator and the lower bound. */
#ifndef USBYTE_MODEL_H
#define USBYTE_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "usbyte/plan.h"
#include "usbyte/profile.h"

/* The granularity of cuts inside call k: its element size, or the least common multiple of
 * that and prof->align when the call is larger than align.  UINT64_MAX when that multiple
 * does not fit (no cut is possible then).  A segment's offset and end must be multiples of
 * it, except an end at the call's last byte. */
uint64_t ub_cut_quantum(const ub_profile *prof, int k);

/* The largest allowed cut of call k at or below `offset` (0 when there is none). */
uint64_t ub_cut_floor(const ub_profile *prof, int k, uint64_t offset);

/* May a block of `bytes` total that holds segments of more than one call go through the
 * staging buffer (bytes <= staging_max, or no limit)?  (partition/cost.c) */
bool ub_staging_fits(const ub_profile *prof, double bytes);

/* 0 when the plan is valid for the profile; otherwise -1 and one line in err naming the
 * block/segment and what is wrong. */
int ub_plan_validate(const ub_profile *prof, const ub_plan *plan, char *err, size_t errlen);

/* Evaluates a valid plan: fills every block's start/end, plan->iteration, plan->lower_bound and
 * plan->optimal, and returns the iteration time. call_completion (n_calls doubles) may be NULL. */
double ub_evaluate(const ub_profile *prof, ub_plan *plan, double *call_completion);

/* ub_evaluate with the profile's lower bound already computed (ub_lower_bound), so that
 * planning several policies computes it once. */
double ub_evaluate_with_bound(const ub_profile *prof, ub_plan *plan, double lower_bound, double *call_completion);

/* Does an iteration time meet the lower bound, to 1e-9 relative?  Then the plan is optimal
 * (docs/model.md rule 6) and searching further cannot gain anything that matters. */
bool ub_meets_bound(double iteration, double lower_bound);

/* The same timeline, without touching the plan (for searches that evaluate candidates). */
double ub_evaluate_const(const ub_profile *prof, const ub_plan *plan, double *call_completion);

/* Rule 4's gates: gate[s] (n_forward of them) the latest completion done[k] of the calls whose
 * need is s, -DBL_MAX where none needs it. */
void ub_forward_gates(const ub_profile *prof, const double *done, double *gate);

/* The most interference a profile may carry (rule 7): compute at half its own speed beside the
 * link. */
#define UB_INTERFERENCE_MAX 1.0
/* 0 when f is an interference a profile may carry (0..UB_INTERFERENCE_MAX); -1 with why ("must
 * be ..., got ...", for the caller to prefix with where f came from) otherwise. */
int ub_interference_check(double f, char *why, size_t len);

/* Takes rule 7's stretch out of a profile measured under the application's own calls (each
 * issued when ready and the link free: the wfbp plan, as the warm-up runs them): its ready
 * times, backward_end, gap and forward become the compute's own seconds, slowed by (1 + f)
 * wherever that plan's timeline has the link busy, and prof->interference = f.  Then the wfbp
 * plan evaluates to the same timeline as before, and a plan that overlaps less runs its compute
 * faster (order/interference.c).  0, or -1 when f is outside [0, UB_INTERFERENCE_MAX] or the
 * profile carries interference already. */
int ub_profile_unstretch(ub_profile *prof, double f);

/* Rule 6 of docs/model.md: max(B + g + sum(forward), max over s of E_s + sum(forward[s:])), E_s the
 * earliest the link alone can finish the calls with need <= s (a DP over their ready order).
 * O(n log n + sum over the distinct needs s of |{need <= s}|), usually far less (pruned). */
double ub_lower_bound(const ub_profile *prof);

/* Do the profile's costs keep every iteration time a policy can produce finite (with room:
 * many blocks, every byte staged)?  False when e.g. alpha is near DBL_MAX: the planner then
 * cannot compare plans, and callers should refuse the profile. */
bool ub_profile_times_finite(const ub_profile *prof);

/* Duration of one block of `bytes` bytes (partition/cost.c); staged when it holds segments of several calls:
 * ub_link_cost + copy_beta * bytes when staged. */
double ub_block_cost(const ub_profile *prof, double bytes, int staged);

/* The cost function (partition/cost.c; docs/model.md "The cost function"): the link's seconds for
 * one allreduce of `bytes`: the profile's curve when it has one, else alpha + beta * bytes. */
double ub_link_cost(const ub_profile *prof, double bytes);

/* Adds `seconds` to the cost of every allreduce (the line's startup and every segment's): a cost
 * per block that does not depend on its size, such as the executor's wait before a block that
 * verification measures (ub_verify_executor_wait; the re-fit in interpose/decide.c plans with it). */
void ub_link_add(ub_profile *prof, double seconds);

/* The line that gives the cost at `bytes` (the segment holding it): what the policies that reason
 * with one startup alpha and one per-byte beta use at the size in question. */
void ub_link_local(const ub_profile *prof, double bytes, double *alpha, double *beta);

/* The largest startup and the largest per-byte cost of any segment (the line's when no curve):
 * alpha + beta * M bounds the cost from above, for overflow checks. */
void ub_link_cost_maxima(const ub_profile *prof, double *alpha, double *beta);

/* Lines alpha_i + beta_i * M, alpha_i >= 0, beta_i >= 0, at or below the cost for every M >= 0
 * (the profile's line itself when it has no curve): what the lower bound is computed with.
 * Fills at most max of them and returns how many (>= 1 when max >= 1). */
int ub_link_lower_lines(const ub_profile *prof, double *alpha, double *beta, int max);

/* 0 when the curve is well formed: 1..UB_NET_MAX_SEGMENTS segments, the first from 0, `from`
 * rising, finite, beta >= 0, no negative cost, and with `monotone` no fall at a boundary;
 * otherwise -1 and one line in err naming the segment. */
int ub_net_curve_check(const ub_net_curve *c, bool monotone, char *err, size_t errlen);

/* A curve through n points (bytes rising, > 0; seconds >= 0), linear between them.  Outside them,
 * UB_NET_TAIL_TABLE is a measured table's rule (below the first point its time, above the last
 * its time times the ratio of bytes); UB_NET_TAIL_CHORDS runs the first and last chords on (the
 * first one flat instead when it would fall below 0 s at 0 bytes).  -1 when the points are
 * not as said or more than UB_NET_MAX_SEGMENTS - 1. */
typedef enum { UB_NET_TAIL_TABLE, UB_NET_TAIL_CHORDS } ub_net_tail;
int ub_net_curve_from_points(const double *bytes, const double *seconds, int n, ub_net_tail tail,
                             ub_net_curve *out);

#endif
