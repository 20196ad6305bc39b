/* The move neighbourhood of `best` (docs/policies-advanced.md): every move at a block and the
 * boundary after it, judged incrementally (ub_wplan_improves), applied, confirmed on the full
 * timeline or undone; first-improvement descent; the random kicks of the iterated search. */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"
#include "usbyte/model.h"
#include "usbyte/synthetic.h"

/* Confirms a move on the full timeline; false (and the caller undoes it) when rounding fooled
 * the incremental test. */
static bool confirm(ub_search *s, double thr)
{
    s->gen++; /* the plan changed (and changes again if the move is undone) */
#ifdef UB_SEARCH_CHECK
    for (int b = 0; b < s->wp.nb; b++) {
        ub_wblock w = s->wp.b[b];
        ub_wblock_attrs(&s->wp, &w);
        if (w.r != s->wp.b[b].r || w.W != s->wp.b[b].W || w.staged != s->wp.b[b].staged ||
            w.valid != s->wp.b[b].valid || w.call0 != s->wp.b[b].call0 ||
            w.bytes != s->wp.b[b].bytes || w.cost != s->wp.b[b].cost) {
            fprintf(stderr, "stale block %d\n", b);
            abort();
        }
    }
#endif
    ub_wplan_timeline(&s->wp);
    s->evals += s->wp.nb / 32; /* the full timeline is part of the work */
    if (s->wp.T < thr) {
        s->moves++;
        return true;
    }
    return false;
}

/* The move staged in s->s[0..n_new) replacing blocks [i, i+n_old). */
static bool try_replace(ub_search *s, int i, int n_old, int n_new)
{
    ub_wplan *wp = &s->wp;
    s->evals++;
    for (int k = 0; k < n_new; k++) {
        if (!ub_blk_finish(wp, &s->s[k]))
            return false;
        s->view[k] = &s->s[k];
    }
    if (!ub_wplan_improves(wp, i, n_old, s->view, n_new))
        return false;
    double thr = wp->thr;
    ub_wplan_replace(wp, i, n_old, s->s, n_new);
    if (confirm(s, thr))
        return true;
    ub_wplan_replace(wp, i, n_new, s->s, n_old);
    ub_wplan_timeline(wp);
    return false;
}

/* Would the hypothetical blocks s->h[0..n_new) over [i, i+n_old) win?  Nothing is built. */
static bool hyp_improves(ub_search *s, int i, int n_old, int n_new)
{
    s->evals++;
    const ub_wblock *view[3];
    for (int k = 0; k < n_new; k++) {
        if (!ub_blk_finish(&s->wp, &s->h[k]))
            return false;
        view[k] = &s->h[k];
    }
    return ub_wplan_improves(&s->wp, i, n_old, view, n_new);
}

/* Block `from` moved to position `to`. */
static bool try_rotate(ub_search *s, int from, int to)
{
    ub_wplan *wp = &s->wp;
    s->evals++;
    int lo = from < to ? from : to, hi = from < to ? to : from, m = 0;
    if (from < to) {
        for (int b = from + 1; b <= to; b++)
            s->view[m++] = &wp->b[b];
        s->view[m++] = &wp->b[from];
    } else {
        s->view[m++] = &wp->b[from];
        for (int b = to; b < from; b++)
            s->view[m++] = &wp->b[b];
    }
    if (!ub_wplan_improves(wp, lo, hi - lo + 1, s->view, m))
        return false;
    double thr = wp->thr;
    ub_wplan_rotate(wp, from, to);
    if (confirm(s, thr))
        return true;
    ub_wplan_rotate(wp, to, from);
    ub_wplan_timeline(wp);
    return false;
}

/* s->s[0] replaces block i and s->s[1] block d > i. */
static bool try_pair(ub_search *s, int i, int d)
{
    ub_wplan *wp = &s->wp;
    s->evals++;
    for (int k = 0; k < 2; k++)
        if (!ub_blk_finish(wp, &s->s[k]))
            return false;
    int m = 0;
    s->view[m++] = &s->s[0];
    for (int b = i + 1; b < d; b++)
        s->view[m++] = &wp->b[b];
    s->view[m++] = &s->s[1];
    if (!ub_wplan_improves(wp, i, d - i + 1, s->view, m))
        return false;
    double thr = wp->thr;
    ub_wplan_exchange(wp, i, &s->s[0]);
    ub_wplan_exchange(wp, d, &s->s[1]);
    if (confirm(s, thr))
        return true;
    ub_wplan_exchange(wp, i, &s->s[0]);
    ub_wplan_exchange(wp, d, &s->s[1]);
    ub_wplan_timeline(wp);
    return false;
}

/* The start of block i's transfer under the current timeline. */
static double start_of(const ub_wplan *wp, int i)
{
    double link = i > 0 ? wp->e[i - 1] : 0.0;
    return wp->b[i].r > link ? wp->b[i].r : link;
}

/* The seconds a byte more or less costs block b at its size (the cost function's local slope,
 * plus the staging copies when staged): what the cut moves aim with. */
static double block_beta(const ub_profile *prof, const ub_wblock *b)
{
    double a, beta;
    ub_link_local(prof, b->bytes, &a, &beta);
    return beta + (b->staged ? prof->copy_beta : 0.0);
}

/* Shifts the boundary between block i's segment g and the neighbouring piece of the same call
 * in a later block (within MAX_PAIR): the cut of a call between two blocks moves. */
static bool shift_same_call(ub_search *s, int i, uint32_t gi)
{
    ub_wplan *wp = &s->wp;
    const ub_profile *prof = wp->prof;
    const ub_segment g = wp->b[i].seg[gi];
    if (g.offset == 0 && g.length == prof->calls[g.call].bytes)
        return false; /* the call is whole here: no other piece */
    for (int d = i + 1; d < wp->nb && d <= i + MAX_PAIR; d++) {
        const ub_wblock *D = &wp->b[d];
        for (uint32_t hi = 0; hi < D->n; hi++) {
            const ub_segment h = D->seg[hi];
            if (h.call != g.call)
                continue;
            bool after = h.offset == g.offset + g.length; /* D holds the bytes right after g */
            if (!after && h.offset + h.length != g.offset)
                continue;
            uint64_t lo = after ? g.offset : h.offset, top = after ? h.offset + h.length : g.offset + g.length;
            /* Target: block i ends when block i+1's data is ready. */
            double per_byte = block_beta(prof, &wp->b[i]);
            double grow = per_byte > 0 ? (wp->b[i + 1].r - (start_of(wp, i) + wp->b[i].cost)) / per_byte : 0.0;
            double target = after ? (double)(g.offset + g.length) + grow : (double)g.offset - grow;
            uint64_t cuts[MAX_CUTS];
            int nc = ub_cut_points(prof, g.call, lo, top, target, cuts);
            for (int c = 0; c < nc; c++) {
                uint64_t o = cuts[c];
                if (o == (after ? g.offset + g.length : g.offset))
                    continue; /* the current cut */
                ub_blk_clone(&s->s[0], &wp->b[i]);
                ub_blk_clone(&s->s[1], &wp->b[d]);
                if (after) {
                    s->s[0].seg[gi].length = o - g.offset;
                    s->s[1].seg[hi].offset = o;
                    s->s[1].seg[hi].length = top - o;
                } else {
                    s->s[0].seg[gi].offset = o;
                    s->s[0].seg[gi].length = top - o;
                    s->s[1].seg[hi].length = o - lo;
                }
                /* bytes move between the two blocks; nothing else about them changes */
                double moved = (double)s->s[0].seg[gi].length - (double)g.length;
                s->s[0].bytes += moved;
                s->s[1].bytes -= moved;
                if (try_pair(s, i, d))
                    return true;
            }
            return false; /* only the nearest neighbouring piece */
        }
    }
    return false;
}

/* The windows place_piece tries, one per call: moving `piece` (cut from block i, leaving
 * `rest`) 1, 2, 4 or 8 blocks earlier or later rewrites blocks [*lo, *hi]; s->view receives
 * them after the move.  *q counts the distances tried (start at 0).  Returns the length of
 * the view, 0 when no distance is left.  Windows that start after the first critical block
 * are skipped (no move there lowers T). */
static int next_piece_window(ub_search *s, const ub_wblock *piece, const ub_wblock *rest, int i, bool earlier,
                             int *q, int *lo, int *hi)
{
    static const int dist[] = {1, 2, 4, 8};
    const int n_dist = (int)(sizeof(dist) / sizeof(dist[0]));
    const ub_wplan *wp = &s->wp;
    while (*q < n_dist) {
        int k = dist[(*q)++];
        *lo = earlier ? i - k : i;
        *hi = earlier ? i : i + k;
        if (*lo < 0 || *hi >= wp->nb) {
            *q = n_dist; /* farther distances leave the plan too */
            return 0;
        }
        if (*lo > wp->first_crit && wp->first_crit >= 0)
            continue;
        s->evals++;
        int m = 0;
        if (earlier) {
            s->view[m++] = piece;
            for (int b = *lo; b < i; b++)
                s->view[m++] = &wp->b[b];
            s->view[m++] = rest;
        } else {
            s->view[m++] = rest;
            for (int b = i + 1; b <= *hi; b++)
                s->view[m++] = &wp->b[b];
            s->view[m++] = piece;
        }
        return m;
    }
    return 0;
}

/* place_piece's test on the hypothetical piece s->h[0] and rest s->h[1], building nothing. */
static bool piece_may_win(ub_search *s, int i, bool earlier)
{
    ub_wplan *wp = &s->wp;
    if (!ub_blk_finish(wp, &s->h[0]) || !ub_blk_finish(wp, &s->h[1]))
        return false;
    int q = 0, lo, hi, m;
    while ((m = next_piece_window(s, &s->h[0], &s->h[1], i, earlier, &q, &lo, &hi)) > 0)
        if (ub_wplan_improves(wp, lo, hi - lo + 1, s->view, m))
            return true;
    return false;
}

/* With s->s[0] a piece of block i and s->s[1] the rest of it: tries the piece alone k blocks
 * earlier (before block i-k) or later (after block i+k), k = 1, 2, 4, 8.  On failure the
 * scratch blocks hold the same piece and rest again. */
static bool place_piece(ub_search *s, int i, bool earlier)
{
    ub_wplan *wp = &s->wp;
    if (!ub_blk_finish(wp, &s->s[0]) || !ub_blk_finish(wp, &s->s[1]))
        return false;
    int q = 0, lo, hi, m;
    while ((m = next_piece_window(s, &s->s[0], &s->s[1], i, earlier, &q, &lo, &hi)) > 0) {
        if (!ub_wplan_improves(wp, lo, hi - lo + 1, s->view, m))
            continue;
        double thr = wp->thr;
        /* Apply: block i becomes (piece, rest), then the piece rotates into place. */
        ub_wplan_replace(wp, i, 1, s->s, 2);
        int from = i, to = earlier ? lo : hi + 1;
        if (!earlier) {
            ub_wplan_rotate(wp, i, i + 1); /* (rest, piece) */
            from = i + 1;
        }
        ub_wplan_rotate(wp, from, to);
        if (confirm(s, thr))
            return true;
        ub_wplan_rotate(wp, to, from);
        if (!earlier)
            ub_wplan_rotate(wp, i + 1, i);
        ub_wplan_replace(wp, i, 2, s->s, 1); /* s[0] = piece, s[1] = rest again */
        ub_wplan_timeline(wp);
        ub_wblock_attrs(wp, &s->s[0]);
        ub_wblock_attrs(wp, &s->s[1]);
    }
    return false;
}

/* j/4 of `length` (j < 4), rounded down, without overflowing for huge calls. */
static uint64_t quarters(uint64_t length, uint64_t j)
{
    return length <= UINT64_MAX / 4 ? length * j / 4 : length / 4 * j;
}

/* Pieces of block i that may travel alone: the head or tail of its last segment cut at 1/4,
 * 1/2 or 3/4, and, in a block of several segments, its first or last segment whole. */
static bool relocate_pieces(ub_search *s, int i, bool earlier)
{
    ub_wplan *wp = &s->wp;
    const ub_profile *prof = wp->prof;
    const ub_segment g = wp->b[i].seg[wp->b[i].n - 1];
    uint64_t prev = 0;
    for (int j = 1; j < 4; j++) {
        uint64_t c = ub_cut_floor(prof, g.call, g.offset + quarters(g.length, (uint64_t)j));
        if (c <= g.offset || c >= g.offset + g.length || c == prev)
            continue;
        prev = c;
        ub_blk_reset(&s->s[0]);
        ub_blk_clone(&s->s[1], &wp->b[i]);
        if (earlier) { /* the head leaves first */
            ub_blk_add(wp, &s->s[0], g.call, g.offset, c - g.offset);
            ub_blk_trim(&s->s[1], s->s[1].n - 1, c - g.offset, true);
        } else {
            ub_blk_add(wp, &s->s[0], g.call, c, g.offset + g.length - c);
            ub_blk_trim(&s->s[1], s->s[1].n - 1, g.offset + g.length - c, false);
        }
        if (place_piece(s, i, earlier))
            return true;
    }
    uint32_t n = wp->b[i].n;
    if (n > 1) {
        uint32_t which[2] = {0, n - 1};
        for (int w = 0; w < 2; w++) {
            const ub_wblock *A = &wp->b[i];
            /* Judge the cheap way first: is there a distance at which the move wins? */
            ub_blk_reset(&s->h[0]);
            ub_hyp_add_range(wp, &s->h[0], A, which[w], which[w] + 1);
            ub_blk_reset(&s->h[1]);
            if (which[w] == 0)
                ub_hyp_set_range(wp, &s->h[1], &s->ca, A, 1, n);
            else
                ub_hyp_set_range(wp, &s->h[1], &s->ca, A, 0, n - 1);
            if (!piece_may_win(s, i, earlier))
                continue;
            ub_blk_reset(&s->s[0]);
            ub_blk_append(wp, &s->s[0], A, which[w], which[w] + 1);
            ub_blk_reset(&s->s[1]);
            ub_blk_append(wp, &s->s[1], A, 0, which[w]);
            ub_blk_append(wp, &s->s[1], A, which[w] + 1, n);
            if (place_piece(s, i, earlier))
                return true;
        }
    }
    return false;
}

/* Does c hold the ranges of block b of the current plan? */
static bool cache_describes(const ub_search *s, const ub_range_cache *c, int b)
{
    return c->gen == s->gen && c->seg == s->wp.b[b].seg && c->n == s->wp.b[b].n;
}

/* c becomes the range cache of block b.  A block of one segment gets none (n = UINT32_MAX
 * matches no block): ub_hyp_set_range then adds its segment directly. */
static void cache_block(ub_search *s, ub_range_cache *c, int b)
{
    const ub_wblock *w = &s->wp.b[b];
    c->n = UINT32_MAX;
    if (w->n > 1) {
        ub_range_cache_build(&s->wp, c, w);
        s->evals += w->n / 32; /* part of the work the budget bounds */
        c->seg = w->seg;
        c->gen = s->gen;
    }
}

/* The moves at block i and the boundary after it (improve_at tries them in this order); each is
 * true when it applied one. */

/* Merge blocks i and i+1 into one. */
static bool try_merge(ub_search *s, int i)
{
    ub_wplan *wp = &s->wp;
    ub_blk_reset(&s->h[0]);
    ub_hyp_add_block(wp, &s->h[0], &wp->b[i]);
    ub_hyp_add_block(wp, &s->h[0], &wp->b[i + 1]);
    if (!hyp_improves(s, i, 2, 1))
        return false;
    ub_blk_reset(&s->s[0]);
    ub_blk_clone(&s->s[0], &wp->b[i]);
    ub_blk_append(wp, &s->s[0], &wp->b[i + 1], 0, wp->b[i + 1].n);
    return try_replace(s, i, 2, 1);
}

/* Swap, and relocations of one block over up to MAX_SHIFT others. */
static bool try_rotations(ub_search *s, int i)
{
    ub_wplan *wp = &s->wp;
    for (int k = 1; k <= MAX_SHIFT && i + k < wp->nb; k++) {
        if (i + k < wp->busy_start)
            continue;
        if (try_rotate(s, i, i + k))
            return true;
        if (k > 1 && try_rotate(s, i + k, i))
            return true;
    }
    return false;
}

/* A whole segment across the boundary between blocks i and i+1: A's last one into B, or B's
 * first one into A. */
static bool try_segment_across(ub_search *s, int i)
{
    ub_wplan *wp = &s->wp;
    const ub_wblock *A = &wp->b[i], *B = &wp->b[i + 1];
    if (A->n > 1) {
        ub_blk_reset(&s->h[0]);
        ub_hyp_set_range(wp, &s->h[0], &s->ca, A, 0, A->n - 1);
        ub_blk_reset(&s->h[1]);
        ub_hyp_add_block(wp, &s->h[1], B);
        ub_hyp_add_range(wp, &s->h[1], A, A->n - 1, A->n);
        if (hyp_improves(s, i, 2, 2)) {
            ub_blk_reset(&s->s[0]);
            ub_blk_append(wp, &s->s[0], A, 0, A->n - 1);
            ub_blk_clone(&s->s[1], B);
            ub_blk_append(wp, &s->s[1], A, A->n - 1, A->n);
            if (try_replace(s, i, 2, 2))
                return true;
        }
    }
    A = &wp->b[i];
    B = &wp->b[i + 1];
    if (B->n > 1) {
        ub_blk_reset(&s->h[0]);
        ub_hyp_add_block(wp, &s->h[0], A);
        ub_hyp_add_range(wp, &s->h[0], B, 0, 1);
        ub_blk_reset(&s->h[1]);
        ub_hyp_set_range(wp, &s->h[1], &s->cb, B, 1, B->n);
        if (hyp_improves(s, i, 2, 2)) {
            ub_blk_clone(&s->s[0], A);
            ub_blk_append(wp, &s->s[0], B, 0, 1);
            ub_blk_reset(&s->s[1]);
            ub_blk_append(wp, &s->s[1], B, 1, B->n);
            if (try_replace(s, i, 2, 2))
                return true;
        }
    }
    return false;
}

/* Cuts of block i's last segment; the tail goes after the next block, into it, or alone.  The
 * targeted cut makes the block end when the next block's data is ready. */
static bool try_tail_cuts(ub_search *s, int i, bool has_next)
{
    ub_wplan *wp = &s->wp;
    const ub_profile *prof = wp->prof;
    const ub_segment last = wp->b[i].seg[wp->b[i].n - 1];
    double target = -1.0;
    if (has_next) {
        double per_byte = block_beta(prof, &wp->b[i]);
        if (per_byte > 0)
            target = (double)(last.offset + last.length) -
                     (start_of(wp, i) + wp->b[i].cost - wp->b[i + 1].r) / per_byte;
    }
    uint64_t cuts[MAX_CUTS];
    int nc = ub_cut_points(prof, last.call, last.offset, last.offset + last.length, target, cuts);
    for (int c = 0; c < nc; c++) {
        uint64_t x = last.offset + last.length - cuts[c]; /* tail bytes */
        if (has_next) {
            ub_blk_clone(&s->s[0], &wp->b[i]);
            ub_blk_trim(&s->s[0], s->s[0].n - 1, x, false);
            ub_blk_clone(&s->s[1], &wp->b[i + 1]);
            ub_blk_reset(&s->s[2]);
            ub_blk_add(wp, &s->s[2], last.call, cuts[c], x);
            if (try_replace(s, i, 2, 3))
                return true;
            ub_blk_clone(&s->s[0], &wp->b[i]);
            ub_blk_trim(&s->s[0], s->s[0].n - 1, x, false);
            ub_blk_clone(&s->s[1], &wp->b[i + 1]);
            ub_blk_add(wp, &s->s[1], last.call, cuts[c], x);
            if (try_replace(s, i, 2, 2))
                return true;
        }
        ub_blk_clone(&s->s[0], &wp->b[i]);
        ub_blk_trim(&s->s[0], s->s[0].n - 1, x, false);
        ub_blk_reset(&s->s[1]);
        ub_blk_add(wp, &s->s[1], last.call, cuts[c], x);
        if (try_replace(s, i, 1, 2))
            return true;
    }
    return false;
}

/* The head of block i+1's first segment moves back into block i. */
static bool try_head_back(ub_search *s, int i)
{
    ub_wplan *wp = &s->wp;
    const ub_segment first = wp->b[i + 1].seg[0];
    uint64_t cuts[MAX_CUTS];
    int nc = ub_cut_points(wp->prof, first.call, first.offset, first.offset + first.length, -1.0, cuts);
    for (int c = 0; c < nc; c++) {
        uint64_t x = cuts[c] - first.offset;
        ub_blk_clone(&s->s[0], &wp->b[i]);
        ub_blk_add(wp, &s->s[0], first.call, first.offset, x);
        ub_blk_clone(&s->s[1], &wp->b[i + 1]);
        ub_blk_trim(&s->s[1], 0, x, true);
        if (try_replace(s, i, 2, 2))
            return true;
    }
    return false;
}

/* Splits of block i (several segments) at up to 8 boundaries, alone or around block i+1. */
static bool try_splits(ub_search *s, int i)
{
    ub_wplan *wp = &s->wp;
    uint32_t n = wp->b[i].n, steps = n - 1 < 8 ? n - 1 : 8;
    for (uint32_t q = 1; q <= steps; q++) {
        uint32_t k = (uint32_t)((uint64_t)q * n / (steps + 1));
        if (k == 0 || k >= n)
            continue;
        const ub_wblock *A = &wp->b[i];
        ub_blk_reset(&s->h[0]);
        ub_hyp_set_range(wp, &s->h[0], &s->ca, A, 0, k);
        ub_blk_reset(&s->h[1]);
        ub_hyp_set_range(wp, &s->h[1], &s->ca, A, k, n);
        if (hyp_improves(s, i, 1, 2)) {
            ub_blk_reset(&s->s[0]);
            ub_blk_append(wp, &s->s[0], A, 0, k);
            ub_blk_reset(&s->s[1]);
            ub_blk_append(wp, &s->s[1], A, k, n);
            if (try_replace(s, i, 1, 2))
                return true;
        }
        if (i + 1 < wp->nb) {
            A = &wp->b[i];
            ub_wblock tail = s->h[1];
            ub_blk_reset(&s->h[1]);
            ub_hyp_add_block(wp, &s->h[1], &wp->b[i + 1]);
            s->h[2] = tail;
            if (hyp_improves(s, i, 2, 3)) {
                ub_blk_reset(&s->s[0]);
                ub_blk_append(wp, &s->s[0], A, 0, k);
                ub_blk_clone(&s->s[1], &wp->b[i + 1]);
                ub_blk_reset(&s->s[2]);
                ub_blk_append(wp, &s->s[2], A, k, n);
                if (try_replace(s, i, 2, 3))
                    return true;
            }
        }
    }
    return false;
}

/* Every move at block i and the boundary after it; true when one was applied (the first that
 * improves).  Moves on the pair [i, i+1] are tried only where such a window can reach the busy
 * period of the first critical block. */
static bool improve_at(ub_search *s, int i)
{
    ub_wplan *wp = &s->wp;
    bool has_next = i + 1 < wp->nb;
    /* Range caches of blocks i and i+1; the one built for i+1 at the previous position serves
     * as block i's when the plan has not changed since. */
    if (cache_describes(s, &s->cb, i)) {
        ub_range_cache t = s->ca;
        s->ca = s->cb;
        s->cb = t;
    } else if (!cache_describes(s, &s->ca, i)) {
        cache_block(s, &s->ca, i);
    }
    if (has_next)
        cache_block(s, &s->cb, i + 1);
    else
        s->cb.n = UINT32_MAX;

    /* Windows must reach the busy period of the first critical block and start no later
     * than that block (search_state.c, ub_wplan_improves). */
    if (i >= wp->busy_start && relocate_pieces(s, i, true))
        return true;
    if (wp->first_crit >= 0 && i > wp->first_crit)
        return false; /* every other move starts at block i */
    if (i + MAX_PAIR < wp->busy_start)
        return false; /* no window from here reaches it */

    bool near = i + 1 >= wp->busy_start; /* windows [i, i+1] can matter */
    if (has_next && near && try_merge(s, i))
        return true;
    if (has_next && try_rotations(s, i))
        return true;
    if (has_next && near && try_segment_across(s, i))
        return true;
    if (near && try_tail_cuts(s, i, has_next))
        return true;
    if (has_next && near && try_head_back(s, i))
        return true;
    /* The cut between a call's pieces in two blocks moves (first and last segment of A). */
    if (has_next) {
        if (shift_same_call(s, i, wp->b[i].n - 1))
            return true;
        if (wp->b[i].n > 1 && shift_same_call(s, i, 0))
            return true;
        if (relocate_pieces(s, i, false))
            return true;
    }
    return wp->b[i].n > 1 && near && try_splits(s, i);
}

/* First-improvement descent: sweep the boundaries up to the first critical block (a move
 * later cannot lower T), step back one after each applied move. */
void ub_search_descend(ub_search *s, double lower_bound)
{
    ub_wplan *wp = &s->wp;
    bool improved = true;
    if (wp->BgF >= wp->thr || ub_meets_bound(wp->T, lower_bound))
        return; /* already at the lower bound: nothing to gain */
    while (improved && s->evals < s->budget) {
        improved = false;
        int i = wp->busy_start - MAX_PAIR - 1;
        if (i < 0)
            i = 0;
        while (i < wp->nb && s->evals < s->budget) {
            if (wp->first_crit >= 0 && i > wp->first_crit + MAX_SHIFT)
                break; /* moves start at most MAX_SHIFT blocks before the block they touch */
            if (improve_at(s, i)) {
                improved = true;
                if (ub_meets_bound(wp->T, lower_bound))
                    return; /* optimal: the plan meets the bound */
                i = i > 0 ? i - 1 : 0;
                if (i < wp->busy_start - MAX_PAIR - 1)
                    i = wp->busy_start - MAX_PAIR - 1;
            } else {
                i++;
            }
        }
    }
}

/* One random change near the critical blocks, applied whether or not it helps: the kick of
 * an iterated local search.  The PRNG is seeded from the profile's size only, so the plan stays
 * a pure function of the profile. */
void ub_search_kick(ub_search *s, uint64_t *rng)
{
    s->gen++;
    ub_wplan *wp = &s->wp;
    const ub_profile *prof = wp->prof;
    int hi = wp->first_crit >= 0 ? wp->first_crit + 2 : wp->nb - 1;
    int lo = wp->busy_start - 2;
    if (hi > wp->nb - 1)
        hi = wp->nb - 1;
    if (lo < 0)
        lo = 0;
    if (lo > hi)
        lo = hi;
    int i = lo + (int)(ub_splitmix64(rng) % (uint64_t)(hi - lo + 1));
    switch (ub_splitmix64(rng) % 3) {
    case 0: {
        int j = i + (int)(ub_splitmix64(rng) % 17) - 8;
        if (j < 0)
            j = 0;
        if (j > wp->nb - 1)
            j = wp->nb - 1;
        if (j != i) {
            ub_wplan_rotate(wp, i, j);
            /* the others keep their order: only the moved block's neighbours can break the
             * order of the merge groups */
            const ub_wblock *moved = &wp->b[j];
            if (!ub_wplan_in_order(wp, j, 1, &moved, 1))
                ub_wplan_rotate(wp, j, i);
        }
        break;
    }
    case 1:
        if (i + 1 < wp->nb) {
            ub_blk_reset(&s->s[0]);
            ub_blk_clone(&s->s[0], &wp->b[i]);
            ub_blk_append(wp, &s->s[0], &wp->b[i + 1], 0, wp->b[i + 1].n);
            ub_wblock_attrs(wp, &s->s[0]);
            if (s->s[0].valid && ub_wblock_fits(wp, &s->s[0]))
                ub_wplan_replace(wp, i, 2, s->s, 1);
        }
        break;
    default: {
        const ub_wblock *A = &wp->b[i];
        if (A->n > 1) {
            uint32_t k = 1 + (uint32_t)(ub_splitmix64(rng) % (A->n - 1));
            ub_blk_reset(&s->s[0]);
            ub_blk_append(wp, &s->s[0], A, 0, k);
            ub_blk_reset(&s->s[1]);
            ub_blk_append(wp, &s->s[1], A, k, A->n);
        } else {
            const ub_segment g = A->seg[0];
            uint64_t c = ub_cut_floor(prof, g.call, g.offset + quarters(g.length, 1 + ub_splitmix64(rng) % 3));
            if (c <= g.offset || c >= g.offset + g.length)
                break;
            ub_blk_reset(&s->s[0]);
            ub_blk_add(wp, &s->s[0], g.call, g.offset, c - g.offset);
            ub_blk_reset(&s->s[1]);
            ub_blk_add(wp, &s->s[1], g.call, c, g.offset + g.length - c);
        }
        ub_wblock_attrs(wp, &s->s[0]);
        ub_wblock_attrs(wp, &s->s[1]);
        ub_wplan_replace(wp, i, 1, s->s, 2);
        break;
    }
    }
    ub_wplan_timeline(wp);
}

void ub_search_free(ub_search *s)
{
    for (int k = 0; k < 4; k++)
        free(s->s[k].seg);
    free(s->ca.pre);
    free(s->ca.suf);
    free(s->cb.pre);
    free(s->cb.suf);
    ub_wplan_free(&s->wp);
}
