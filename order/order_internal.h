/* Helpers shared by the order/ policies (not part of the public API). */
#ifndef USBYTE_ORDER_INTERNAL_H
#define USBYTE_ORDER_INTERNAL_H

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

/* `best` from start plans already computed and evaluated (ub_policy_run); invalid or empty
 * ones are skipped.  What ub_policy_best does after running the other policies. */
int ub_best_from_starts(const ub_profile *prof, const ub_plan *const *starts, int n_starts, ub_plan *out);

/* The smallest allowed piece of call k that is at least `want` bytes: `want` rounded up to
 * the call's cut quantum (usbyte/model.h), or the whole call when no such cut exists. */
uint64_t ub_piece_at_least(const ub_profile *prof, int k, uint64_t want);

#endif
