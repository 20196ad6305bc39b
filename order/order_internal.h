/* Helpers shared by the order/ policies (not part of the public API). */
#ifndef USBYTE_ORDER_INTERNAL_H
#define USBYTE_ORDER_INTERNAL_H

#include <stdbool.h>

#include "usbyte/plan.h"
#include "usbyte/profile.h"

/* Calls by forward priority: lower need first; among equal needs the later-arriving call
 * first (it belongs to the layer nearer the input, which the forward runs earlier).  This is
 * ByteScheduler's layer-index priority translated to calls.  order[i] is the i-th call,
 * rank[call] its position; either may be NULL. */
void ub_forward_priority(const ub_profile *prof, int *order, int *rank);

/* Calls by ready time, ties by arrival index (a stable order of events). */
void ub_ready_order(const ub_profile *prof, int *order);

/* A binary min-heap of call indices keyed by an integer rank (unique per call). */
typedef struct ub_rank_heap {
    int *items;
    int n;
    const int *rank;
} ub_rank_heap;

void ub_rank_heap_push(ub_rank_heap *h, int call);
int ub_rank_heap_pop(ub_rank_heap *h); /* -1 when empty */

/* Merge regions: region[k] is the number of calls marked "merge": false before call k, so a
 * merge:false call is the last of its region and regions are runs of arrival order.  A valid
 * plan holds each block inside one region and puts the regions' blocks in region order
 * (docs/model.md).  Fills region (may be NULL) and returns the number of regions. */
int ub_merge_regions(const ub_profile *prof, int *region);

/* Stable reorder of the calls ord[0..m) by region (counting sort): within a region they keep
 * their order.  region from ub_merge_regions, n_regions its result. */
void ub_order_by_region(const int *region, int n_regions, int *ord, int m);

/* Release of calls region by region, for the policies that simulate a dynamic scheduler
 * (bytescheduler, usbyte): a call that becomes ready while an earlier region still has bytes
 * to send waits, and enters the scheduler's heap once every call of the earlier regions has
 * been sent whole.  With one region every call enters at once. */
typedef struct ub_region_gate {
    int *region;   /* per call */
    int *first;    /* per region: its first call; first[n_regions] = n_calls */
    int *left;     /* per region: calls not yet sent whole */
    bool *waiting; /* per call: ready, not yet released */
    int open, n_regions;
} ub_region_gate;

void ub_region_gate_init(ub_region_gate *g, const ub_profile *prof);
void ub_region_gate_reset(ub_region_gate *g);
void ub_region_gate_free(ub_region_gate *g);
/* Call c is ready: true when it may enter the heap now; otherwise it waits for its region. */
bool ub_region_gate_arrive(ub_region_gate *g, int c);
/* Call c has been sent whole: when that completes the open region, the next regions open and
 * their waiting calls are pushed into heap. */
void ub_region_gate_sent(ub_region_gate *g, int c, ub_rank_heap *heap);

/* ub_policy_run with the profile's lower bound already computed (ub_lower_bound). */
int ub_policy_run_bounded(int id, const ub_profile *prof, ub_plan *out, double lower_bound);

/* `best` with the lower bound given: runs the other policies, then ub_best_from_starts. */
int ub_best_plan_bounded(const ub_profile *prof, double lower_bound, double budget_scale, ub_plan *out);

/* The reference policies (`ddp`, `horovod`: what users run today) are not search starts of
 * `best`: what a framework does is not an idea for the search, and more starts would share the
 * search's budget differently.  `best` is floored by them instead: ub_best_floor replaces *out
 * (evaluated) by the reference plan `ref` (evaluated, valid) when that one is strictly faster. */
bool ub_policy_is_reference(int id);
void ub_best_floor(const ub_plan *ref, ub_plan *out);

/* `best` from start plans already computed and evaluated (ub_policy_run); invalid or empty
 * ones are skipped, the extra starts below are added.  budget_scale multiplies the search
 * budget (1 for the policy).  What ub_policy_best does after running the other policies. */
int ub_best_from_starts(const ub_profile *prof, const ub_plan *const *starts, int n_starts, double lower_bound,
                        double budget_scale, ub_plan *out);

/* Up to max_plans start plans for layer-wise profiles (best_starts.c): whole calls in ready
 * order up to a cut, the rest by need, grouped by an exact DP for that order; evaluated,
 * best first, into plans[] (initialised by the caller), within `cap` DP steps in all; an order
 * whose best grouping is not below `limit` (the best plan known) gives none.
 * Returns how many (0 for barrier profiles). */
int ub_ready_need_starts(const ub_profile *prof, double lower_bound, double limit, long cap, int max_plans,
                         ub_plan *plans);

/* The segments of `in`, in their order, regrouped into consecutive blocks by the exact DP of
 * best_starts.c (the least iteration any grouping of that sequence reaches, to 1e-9); written
 * to out.  Returns the DP's inner-loop steps, or -(steps + 1) with out untouched when more
 * than `cap` steps would have been needed. */
long ub_regroup_exact(const ub_profile *prof, double lower_bound, long cap, const ub_plan *in, ub_plan *out);

/* The smallest allowed piece of call k that is at least `want` bytes: `want` rounded up to
 * the call's cut quantum (usbyte/model.h), or the whole call when no such cut exists. */
uint64_t ub_piece_at_least(const ub_profile *prof, int k, uint64_t want);

#endif
