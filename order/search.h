/* The working plan of the `best` search: blocks with their own segment arrays, the cached
 * per-block quantities of the model and the timeline arrays that let a move be judged in
 * O(size of the move) instead of O(plan).  Private to order/. */
#ifndef USBYTE_SEARCH_H
#define USBYTE_SEARCH_H

#include <stdbool.h>
#include <stdint.h>

#include "usbyte/plan.h"
#include "usbyte/profile.h"

typedef struct ub_wblock {
    ub_segment *seg;
    uint32_t n, cap;
    /* Cached from the segments by ub_wblock_attrs: */
    double r;     /* latest ready among its calls */
    double bytes;
    double cost;  /* ub_block_cost */
    double W;     /* latest forward suffix it gates: max over its calls of forward[need..] summed */
    bool staged, valid;
    int32_t call0; /* the call of the first segment (the block's dtype, op and merge group) */
} ub_wblock;

/* MODEL.md rules 1-5 rewritten per block: with e_b the end of block b,
 *   e_b = max(e_{b-1}, r_b) + cost_b,   T = max(B + g + sum(forward), max_b (e_b + W_b)),
 * because forward segment s starts no earlier than the completion of each of its calls and
 * the forward segments from s on follow it back to back. */
typedef struct ub_wplan {
    const ub_profile *prof;
    double *Fs;     /* per call: sum of forward[s] for s >= need */
    int *group;     /* per call: merge group (a block must not span two) */
    double BgF;     /* B + g + sum(forward) */
    ub_wblock *b;
    int nb, cap;
    /* Timeline (ub_wplan_timeline): */
    double *e, *slack, *cs, *suffix_slack;
    double T, thr;          /* iteration, and the value a move must beat (T minus a tolerance) */
    int first_crit, last_crit; /* blocks with e_b + W_b >= thr; -1 when none */
    int busy_start;            /* the block that opens the busy period of first_crit: a move
                                  that ends before it cannot change first_crit's end */
} ub_wplan;

int ub_wplan_init(ub_wplan *wp, const ub_profile *prof);
void ub_wplan_free(ub_wplan *wp);
void ub_wplan_load(ub_wplan *wp, const ub_plan *plan);
void ub_wplan_store(const ub_wplan *wp, ub_plan *plan);
void ub_wblock_attrs(const ub_wplan *wp, ub_wblock *w);
void ub_wblock_reserve(ub_wblock *w, uint32_t n);
void ub_wblock_push(ub_wblock *w, int32_t call, uint64_t offset, uint64_t length);
void ub_wplan_timeline(ub_wplan *wp);

/* Replaces blocks [i, i+n_old) by the n_new blocks of `fresh` (their segment arrays change
 * hands: `fresh` receives the old blocks, so the caller can undo with the same call). */
void ub_wplan_replace(ub_wplan *wp, int i, int n_old, ub_wblock *fresh, int n_new);

/* Moves block `from` to position `to`, shifting the blocks between by one. */
void ub_wplan_rotate(ub_wplan *wp, int from, int to);

/* Exchanges block `pos` with *w (segment arrays included). */
void ub_wplan_exchange(ub_wplan *wp, int pos, ub_wblock *w);

/* Would replacing [i, i+n_old) by the blocks fresh[0..n_new) (only their cached quantities
 * are read) make the iteration time drop below wp->thr?  O(n_new) plus a bounded walk; exact
 * up to rounding (the caller confirms on the timeline). */
bool ub_wplan_improves(const ub_wplan *wp, int i, int n_old, const ub_wblock *const *fresh, int n_new);

#endif
