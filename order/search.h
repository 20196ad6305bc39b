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

/* docs/model.md rules 1-5 rewritten per block: with e_b the end of block b,
 *   e_b = max(e_{b-1}, r_b) + cost_b,   T = max(B + g + sum(forward), max_b (e_b + W_b)),
 * because forward segment s starts no earlier than the completion of each of its calls and
 * the forward segments from s on follow it back to back. */
typedef struct ub_wplan {
    const ub_profile *prof;
    double *Fs;     /* per call: sum of forward[s] for s >= need */
    int *group;     /* per call: merge group (a block must not span two, and the groups' blocks
                       go in group order: docs/model.md) */
    bool ordered;   /* more than one merge group: moves must keep the blocks in group order */
    double BgF;     /* B + g + sum(forward) */
    ub_wblock *b;
    int nb, cap;
    /* Timeline (ub_wplan_timeline): */
    double *e, *slack, *suffix_slack;
    double T, thr;          /* iteration, and the value a move must beat (T minus a tolerance) */
    int first_crit, last_crit; /* blocks with e_b + W_b >= thr; -1 when none */
    int busy_start;            /* the block that opens the busy period of first_crit: a move
                                  that ends before it cannot change first_crit's end */
} ub_wplan;

void ub_wplan_init(ub_wplan *wp, const ub_profile *prof);
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

/* Would the blocks fresh[0..n_new) in place of [i, i+n_old) keep the merge groups in order
 * (each block's group no earlier than the one before it)?  Always true with one group. */
bool ub_wplan_in_order(const ub_wplan *wp, int i, int n_old, const ub_wblock *const *fresh, int n_new);

/* Would replacing [i, i+n_old) by the blocks fresh[0..n_new) (only their cached quantities
 * are read) make the iteration time drop below wp->thr?  False for a replacement that breaks
 * the order of the merge groups (ub_wplan_in_order).  O(n_new) plus a bounded walk; exact
 * up to rounding (the caller confirms on the timeline). */
bool ub_wplan_improves(const ub_wplan *wp, int i, int n_old, const ub_wblock *const *fresh, int n_new);

/* ---- the move neighbourhood of `best` (search_blocks.c, search_moves.c) ---- */
#define MAX_SHIFT 8  /* farthest relocation of one block */
#define MAX_PAIR 32  /* farthest block holding the neighbouring piece of the same call */
#define MAX_CUTS 16

/* Quantities of every prefix and suffix of one block's segments, so that the moves that take
 * a block apart are judged in O(1) each instead of O(segments). */
typedef struct ub_range_q {
    double r, W, bytes;
    bool staged;
    int32_t call0;
} ub_range_q;

typedef struct ub_range_cache {
    ub_range_q *pre, *suf; /* pre[k]: segments [0, k); suf[k]: [k, n) */
    uint32_t n, cap;
    const ub_segment *seg; /* the block it describes, as of generation gen */
    long gen;
} ub_range_cache;

typedef struct ub_search {
    ub_wplan wp;
    ub_range_cache ca, cb; /* block i and block i+1 while improve_at judges moves at i */
    ub_wblock s[4]; /* scratch blocks; their segment arrays are recycled */
    ub_wblock h[3]; /* hypothetical blocks: cached quantities only, judged before building */
    const ub_wblock *view[MAX_PAIR + MAX_SHIFT + 4];
    long evals, budget, moves;
    long regroup_cap; /* the most evaluations one exact regrouping may cost (best.c) */
    long gen; /* bumped whenever the plan changes, so range caches know they are stale */
} ub_search;

/* Scratch and hypothetical blocks (search_blocks.c).  Scratch blocks keep their cached
 * quantities up to date as segments are added or resized, so judging a move costs O(1) per
 * changed segment; hypothetical blocks carry the quantities only. */
void ub_blk_reset(ub_wblock *w);
void ub_blk_clone(ub_wblock *dst, const ub_wblock *src);
void ub_blk_add(const ub_wplan *wp, ub_wblock *w, int32_t call, uint64_t offset, uint64_t length);
void ub_blk_append(const ub_wplan *wp, ub_wblock *dst, const ub_wblock *src, uint32_t from, uint32_t to);
void ub_blk_trim(ub_wblock *w, uint32_t k, uint64_t cut, bool head);
bool ub_blk_finish(const ub_wplan *wp, ub_wblock *w);
/* Within the staging limit (a block of one call always is)? */
bool ub_wblock_fits(const ub_wplan *wp, const ub_wblock *w);
void ub_hyp_add_range(const ub_wplan *wp, ub_wblock *h, const ub_wblock *b, uint32_t from, uint32_t to);
void ub_hyp_add_block(const ub_wplan *wp, ub_wblock *h, const ub_wblock *b);
void ub_range_cache_build(const ub_wplan *wp, ub_range_cache *c, const ub_wblock *b);
void ub_hyp_set_range(const ub_wplan *wp, ub_wblock *h, const ub_range_cache *c, const ub_wblock *b, uint32_t from,
                      uint32_t to);
int ub_cut_points(const ub_profile *prof, int k, uint64_t lo, uint64_t hi, double target, uint64_t *out);

/* The search itself (search_moves.c).  s->wp is loaded by the caller; descend runs
 * first-improvement descent until a pass finds nothing, s->evals reaches s->budget, or the
 * plan meets lower_bound; kick applies one random change near the critical blocks. */
void ub_search_descend(ub_search *s, double lower_bound);
void ub_search_kick(ub_search *s, uint64_t *rng);
void ub_search_free(ub_search *s);

#endif
