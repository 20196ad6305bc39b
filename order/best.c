/* `best`: ours.  Every other policy's plan is a start; from each (best first) a deterministic
 * first-improvement local search under the model tries, at each block boundary:
 *   merge the two blocks; swap them; move a whole segment across the boundary; cut the last
 *   segment of a block (at 1/4, 1/2, 3/4 of its bytes, and at the cut that makes the block end
 *   exactly when the next block's data is ready) and send the tail as its own block, after the
 *   next block, or inside the next block; move the head of the next block's first segment
 *   back; split a block of several segments (at up to 8 segment boundaries), alone or around
 *   the next block.
 * Cuts are whole elements of the call's dtype.  A move is applied only when it lowers the
 * iteration time by more than a 1e-12 relative tolerance (judged incrementally, see
 * search_state.c, then confirmed on the full timeline), so the search terminates, and the
 * result is compared with the start under the evaluator itself: `best` is never worse than
 * any other policy.  The budget of move evaluations grows linearly with the number of calls,
 * so the plan is a pure function of the profile (no clocks). */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"
#include "usbyte/model.h"
#include "usbyte/policy.h"
#include "usbyte/synthetic.h"

#define MAX_SHIFT 8  /* farthest relocation of one block */
#define MAX_PAIR 32  /* farthest block holding the neighbouring piece of the same call */
#define MAX_CUTS 16

/* Quantities of every prefix and suffix of one block's segments, so that the moves that take
 * a block apart are judged in O(1) each instead of O(segments). */
typedef struct {
    double r, W, bytes;
    bool staged;
    int32_t call0;
} range_q;

typedef struct {
    range_q *pre, *suf; /* pre[k]: segments [0, k); suf[k]: [k, n) */
    uint32_t n, cap;
    const ub_segment *seg; /* the block it describes, as of generation gen */
    long gen;
} range_cache;

typedef struct {
    ub_wplan wp;
    range_cache ca, cb; /* block i and block i+1 while improve_at judges moves at i */
    ub_wblock s[4]; /* scratch blocks; their segment arrays are recycled */
    ub_wblock h[3]; /* hypothetical blocks: cached quantities only, judged before building */
    const ub_wblock *view[MAX_PAIR + MAX_SHIFT + 4];
    long evals, budget, moves;
    long gen; /* bumped whenever the plan changes, so range caches know they are stale */
} search;

/* Scratch blocks keep their cached quantities up to date as segments are added or resized,
 * so judging a move costs O(1) per changed segment, not O(segments of the block). */
static void reset(ub_wblock *w)
{
    w->n = 0;
    w->r = 0.0;
    w->bytes = 0.0;
    w->W = -DBL_MAX;
    w->staged = false;
    w->valid = true;
    w->call0 = -1;
}

static void clone_into(ub_wblock *dst, const ub_wblock *src)
{
    ub_wblock_reserve(dst, src->n);
    memcpy(dst->seg, src->seg, sizeof(ub_segment) * src->n);
    dst->n = src->n;
    dst->r = src->r;
    dst->bytes = src->bytes;
    dst->W = src->W;
    dst->staged = src->staged;
    dst->valid = src->valid;
    dst->call0 = src->call0;
}

static void add_seg(const ub_wplan *wp, ub_wblock *w, int32_t call, uint64_t offset, uint64_t length)
{
    const ub_call *c = &wp->prof->calls[call];
    if (w->call0 < 0) {
        w->call0 = call;
    } else if (call != w->call0) {
        const ub_call *c0 = &wp->prof->calls[w->call0];
        w->staged = true;
        if (c->dtype != c0->dtype || c->op != c0->op || wp->group[call] != wp->group[w->call0])
            w->valid = false;
    }
    if (c->ready > w->r)
        w->r = c->ready;
    if (wp->Fs[call] > w->W)
        w->W = wp->Fs[call];
    w->bytes += (double)length;
    ub_wblock_push(w, call, offset, length);
}

static void append_all(const ub_wplan *wp, ub_wblock *dst, const ub_wblock *src, uint32_t from, uint32_t to)
{
    for (uint32_t i = from; i < to; i++)
        add_seg(wp, dst, src->seg[i].call, src->seg[i].offset, src->seg[i].length);
}

/* Segment k of w loses `cut` bytes at its end (tail) or its start (head); the call stays. */
static void trim(ub_wblock *w, uint32_t k, uint64_t cut, bool head)
{
    if (head)
        w->seg[k].offset += cut;
    w->seg[k].length -= cut;
    w->bytes -= (double)cut;
}

/* Cost from the cached quantities; false when the block is empty or mixes what it may not. */
static bool finish(const ub_wplan *wp, ub_wblock *w)
{
    if (w->n == 0 || !w->valid)
        return false;
    w->cost = ub_block_cost(wp->prof, w->bytes, w->staged);
    return true;
}

/* The quantities of a union of segments, without copying them (h->n counts segments). */
static void hyp_add_range(const ub_wplan *wp, ub_wblock *h, const ub_wblock *b, uint32_t from, uint32_t to)
{
    for (uint32_t k = from; k < to; k++) {
        int32_t call = b->seg[k].call;
        const ub_call *c = &wp->prof->calls[call];
        if (h->call0 < 0) {
            h->call0 = call;
        } else if (call != h->call0) {
            const ub_call *c0 = &wp->prof->calls[h->call0];
            h->staged = true;
            if (c->dtype != c0->dtype || c->op != c0->op || wp->group[call] != wp->group[h->call0])
                h->valid = false;
        }
        if (c->ready > h->r)
            h->r = c->ready;
        if (wp->Fs[call] > h->W)
            h->W = wp->Fs[call];
        h->bytes += (double)b->seg[k].length;
        h->n++;
    }
}

static void cache_build(const ub_wplan *wp, range_cache *c, const ub_wblock *b)
{
    uint32_t n = b->n;
    if (n + 1 > c->cap) {
        c->cap = 2 * (n + 1);
        c->pre = realloc(c->pre, sizeof(range_q) * c->cap);
        c->suf = realloc(c->suf, sizeof(range_q) * c->cap);
        if (!c->pre || !c->suf) {
            fprintf(stderr, "usbyte: out of memory in the plan search\n");
            abort();
        }
    }
    c->n = n;
    range_q empty = {0.0, -DBL_MAX, 0.0, false, -1};
    c->pre[0] = empty;
    for (uint32_t k = 0; k < n; k++) {
        int32_t call = b->seg[k].call;
        range_q q = c->pre[k];
        double r = wp->prof->calls[call].ready;
        q.r = r > q.r ? r : q.r;
        q.W = wp->Fs[call] > q.W ? wp->Fs[call] : q.W;
        q.bytes += (double)b->seg[k].length;
        q.staged = q.staged || call != b->seg[0].call;
        q.call0 = b->seg[0].call;
        c->pre[k + 1] = q;
    }
    c->suf[n] = empty;
    for (uint32_t k = n; k-- > 0;) {
        int32_t call = b->seg[k].call;
        range_q q = c->suf[k + 1];
        double r = wp->prof->calls[call].ready;
        q.r = r > q.r ? r : q.r;
        q.W = wp->Fs[call] > q.W ? wp->Fs[call] : q.W;
        q.bytes += (double)b->seg[k].length;
        q.staged = q.staged || (k + 1 < n && b->seg[k + 1].call != call);
        q.call0 = call;
        c->suf[k] = q;
    }
}

/* h (reset) becomes segments [from, to) of the cached block b, a prefix or a suffix. */
static void hyp_set_range(const ub_wplan *wp, ub_wblock *h, const range_cache *c, const ub_wblock *b,
                          uint32_t from, uint32_t to)
{
    if (c->n != b->n || (from != 0 && to != b->n)) {
        hyp_add_range(wp, h, b, from, to);
        return;
    }
    const range_q *q = from == 0 ? &c->pre[to] : &c->suf[from];
    h->r = q->r;
    h->W = q->W;
    h->bytes = q->bytes;
    h->staged = q->staged;
    h->call0 = q->call0;
    h->valid = b->valid;
    h->n = to - from;
#ifdef UB_SEARCH_CHECK
    ub_wblock x = {0};
    x.W = -DBL_MAX;
    x.valid = true;
    x.call0 = -1;
    hyp_add_range(wp, &x, b, from, to);
    if (x.r != h->r || x.W != h->W || x.bytes != h->bytes || x.staged != h->staged || x.call0 != h->call0) {
        fprintf(stderr, "range cache mismatch [%u, %u) of %u\n", from, to, b->n);
        abort();
    }
#endif
}

/* h grows by a whole block, in O(1) from the block's cached quantities. */
static void hyp_add_block(const ub_wplan *wp, ub_wblock *h, const ub_wblock *b)
{
    if (h->call0 < 0) {
        h->call0 = b->call0;
        h->staged = b->staged;
    } else {
        const ub_call *c = &wp->prof->calls[b->call0], *c0 = &wp->prof->calls[h->call0];
        if (b->staged || b->call0 != h->call0)
            h->staged = true;
        if (c->dtype != c0->dtype || c->op != c0->op || wp->group[b->call0] != wp->group[h->call0])
            h->valid = false;
    }
    h->valid = h->valid && b->valid;
    if (b->r > h->r)
        h->r = b->r;
    if (b->W > h->W)
        h->W = b->W;
    h->bytes += b->bytes;
    h->n += b->n;
}

/* Candidate cut offsets strictly inside [lo, hi) of call k, whole elements: the multiples of
 * 1/8 of the call (so the search covers the oracle's grids), 1/4, 1/2 and 3/4 of the range,
 * and `target` (an absolute offset, ignored when outside).  Sorted, without duplicates. */
static int cut_points(const ub_profile *prof, int k, uint64_t lo, uint64_t hi, double target, uint64_t *out)
{
    uint64_t z = ub_dtype_size(prof->calls[k].dtype), bytes = prof->calls[k].bytes;
    double want[16];
    int nw = 0;
    for (int j = 1; j < 8; j++)
        want[nw++] = (double)bytes * j / 8.0;
    for (int j = 1; j < 4; j++)
        want[nw++] = (double)lo + (double)(hi - lo) * j / 4.0;
    want[nw++] = target;
    int n = 0;
    for (int w = 0; w < nw; w++) {
        if (!(want[w] > (double)lo && want[w] < (double)hi))
            continue;
        uint64_t c = (uint64_t)want[w];
        c -= c % z;
        if (c <= lo || c >= hi)
            continue;
        int at = n;
        bool dup = false;
        for (int q = 0; q < n; q++) {
            if (out[q] == c)
                dup = true;
            if (out[q] > c && at == n)
                at = q;
        }
        if (dup)
            continue;
        memmove(&out[at + 1], &out[at], sizeof(uint64_t) * (size_t)(n - at));
        out[at] = c;
        n++;
    }
    return n;
}

/* Confirms a move on the full timeline; false (and the caller undoes it) when rounding fooled
 * the incremental test. */
static bool confirm(search *s, double thr)
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
static bool try_replace(search *s, int i, int n_old, int n_new)
{
    ub_wplan *wp = &s->wp;
    s->evals++;
    for (int k = 0; k < n_new; k++) {
        if (!finish(wp, &s->s[k]))
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
static bool hyp_improves(search *s, int i, int n_old, int n_new)
{
    s->evals++;
    const ub_wblock *view[3];
    for (int k = 0; k < n_new; k++) {
        if (!finish(&s->wp, &s->h[k]))
            return false;
        view[k] = &s->h[k];
    }
    return ub_wplan_improves(&s->wp, i, n_old, view, n_new);
}

/* Block `from` moved to position `to`. */
static bool try_rotate(search *s, int from, int to)
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
static bool try_pair(search *s, int i, int d)
{
    ub_wplan *wp = &s->wp;
    s->evals++;
    for (int k = 0; k < 2; k++)
        if (!finish(wp, &s->s[k]))
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

/* Shifts the boundary between block i's segment g and the neighbouring piece of the same call
 * in a later block (within MAX_PAIR): the cut of a call between two blocks moves. */
static bool shift_same_call(search *s, int i, uint32_t gi)
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
            double per_byte = prof->beta + (wp->b[i].staged ? prof->copy_beta : 0.0);
            double grow = per_byte > 0 ? (wp->b[i + 1].r - (start_of(wp, i) + wp->b[i].cost)) / per_byte : 0.0;
            double target = after ? (double)(g.offset + g.length) + grow : (double)g.offset - grow;
            uint64_t cuts[MAX_CUTS];
            int nc = cut_points(prof, g.call, lo, top, target, cuts);
            for (int c = 0; c < nc; c++) {
                uint64_t o = cuts[c];
                if (o == (after ? g.offset + g.length : g.offset))
                    continue; /* the current cut */
                clone_into(&s->s[0], &wp->b[i]);
                clone_into(&s->s[1], &wp->b[d]);
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

/* place_piece's test on the hypothetical piece s->h[0] and rest s->h[1], building nothing. */
static bool piece_may_win(search *s, int i, bool earlier)
{
    ub_wplan *wp = &s->wp;
    static const int dist[] = {1, 2, 4, 8};
    if (!finish(wp, &s->h[0]) || !finish(wp, &s->h[1]))
        return false;
    for (size_t q = 0; q < sizeof(dist) / sizeof(dist[0]); q++) {
        int k = dist[q];
        int lo = earlier ? i - k : i, hi = earlier ? i : i + k;
        if (lo < 0 || hi >= wp->nb)
            break;
        if (lo > wp->first_crit && wp->first_crit >= 0)
            continue;
        s->evals++;
        int m = 0;
        if (earlier) {
            s->view[m++] = &s->h[0];
            for (int b = lo; b < i; b++)
                s->view[m++] = &wp->b[b];
            s->view[m++] = &s->h[1];
        } else {
            s->view[m++] = &s->h[1];
            for (int b = i + 1; b <= hi; b++)
                s->view[m++] = &wp->b[b];
            s->view[m++] = &s->h[0];
        }
        if (ub_wplan_improves(wp, lo, hi - lo + 1, s->view, m))
            return true;
    }
    return false;
}

/* With s->s[0] a piece of block i and s->s[1] the rest of it: tries the piece alone k blocks
 * earlier (before block i-k) or later (after block i+k), k = 1, 2, 4, 8.  On failure the
 * scratch blocks hold the same piece and rest again. */
static bool place_piece(search *s, int i, bool earlier)
{
    ub_wplan *wp = &s->wp;
    static const int dist[] = {1, 2, 4, 8};
    if (!finish(wp, &s->s[0]) || !finish(wp, &s->s[1]))
        return false;
    for (size_t q = 0; q < sizeof(dist) / sizeof(dist[0]); q++) {
        int k = dist[q];
        int lo = earlier ? i - k : i, hi = earlier ? i : i + k;
        if (lo < 0 || hi >= wp->nb)
            break;
        if (lo > wp->first_crit && wp->first_crit >= 0)
            continue;
        s->evals++;
        int m = 0;
        if (earlier) {
            s->view[m++] = &s->s[0];
            for (int b = lo; b < i; b++)
                s->view[m++] = &wp->b[b];
            s->view[m++] = &s->s[1];
        } else {
            s->view[m++] = &s->s[1];
            for (int b = i + 1; b <= hi; b++)
                s->view[m++] = &wp->b[b];
            s->view[m++] = &s->s[0];
        }
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

/* Pieces of block i that may travel alone: the head or tail of its last segment cut at 1/4,
 * 1/2 or 3/4, and, in a block of several segments, its first or last segment whole. */
static bool relocate_pieces(search *s, int i, bool earlier)
{
    ub_wplan *wp = &s->wp;
    const ub_profile *prof = wp->prof;
    const ub_segment g = wp->b[i].seg[wp->b[i].n - 1];
    uint64_t z = ub_dtype_size(prof->calls[g.call].dtype);
    uint64_t prev = 0;
    for (int j = 1; j < 4; j++) {
        uint64_t c = g.offset + g.length * (uint64_t)j / 4;
        c -= c % z;
        if (c <= g.offset || c >= g.offset + g.length || c == prev)
            continue;
        prev = c;
        reset(&s->s[0]);
        clone_into(&s->s[1], &wp->b[i]);
        if (earlier) { /* the head leaves first */
            add_seg(wp, &s->s[0], g.call, g.offset, c - g.offset);
            trim(&s->s[1], s->s[1].n - 1, c - g.offset, true);
        } else {
            add_seg(wp, &s->s[0], g.call, c, g.offset + g.length - c);
            trim(&s->s[1], s->s[1].n - 1, g.offset + g.length - c, false);
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
            reset(&s->h[0]);
            hyp_add_range(wp, &s->h[0], A, which[w], which[w] + 1);
            reset(&s->h[1]);
            if (which[w] == 0)
                hyp_set_range(wp, &s->h[1], &s->ca, A, 1, n);
            else
                hyp_set_range(wp, &s->h[1], &s->ca, A, 0, n - 1);
            if (!piece_may_win(s, i, earlier))
                continue;
            reset(&s->s[0]);
            append_all(wp, &s->s[0], A, which[w], which[w] + 1);
            reset(&s->s[1]);
            append_all(wp, &s->s[1], A, 0, which[w]);
            append_all(wp, &s->s[1], A, which[w] + 1, n);
            if (place_piece(s, i, earlier))
                return true;
        }
    }
    return false;
}

/* Every move at block i and the boundary after it; true when one was applied. */
static bool improve_at(search *s, int i)
{
    ub_wplan *wp = &s->wp;
    const ub_profile *prof = wp->prof;
    bool has_next = i + 1 < wp->nb;
    /* Range caches of blocks i and i+1; the one built for i+1 at the previous position serves
     * as block i's when the plan has not changed since. */
    if (s->cb.gen == s->gen && s->cb.seg == wp->b[i].seg && s->cb.n == wp->b[i].n) {
        range_cache t = s->ca;
        s->ca = s->cb;
        s->cb = t;
    } else if (!(s->ca.gen == s->gen && s->ca.seg == wp->b[i].seg && s->ca.n == wp->b[i].n)) {
        s->ca.n = UINT32_MAX;
        if (wp->b[i].n > 1) {
            cache_build(wp, &s->ca, &wp->b[i]);
            s->evals += wp->b[i].n / 32; /* part of the work the budget bounds */
            s->ca.seg = wp->b[i].seg;
            s->ca.gen = s->gen;
        }
    }
    s->cb.n = UINT32_MAX;
    if (has_next && wp->b[i + 1].n > 1) {
        cache_build(wp, &s->cb, &wp->b[i + 1]);
        s->evals += wp->b[i + 1].n / 32;
        s->cb.seg = wp->b[i + 1].seg;
        s->cb.gen = s->gen;
    }

    /* Windows must reach the busy period of the first critical block and start no later
     * than that block (search_state.c, ub_wplan_improves). */
    if (i >= wp->busy_start && relocate_pieces(s, i, true))
        return true;
    if (wp->first_crit >= 0 && i > wp->first_crit)
        return false; /* every other move starts at block i */
    if (i + MAX_PAIR < wp->busy_start)
        return false; /* no window from here reaches it */

    bool near = i + 1 >= wp->busy_start; /* windows [i, i+1] can matter */
    if (has_next && near) {
        /* merge */
        reset(&s->h[0]);
        hyp_add_block(wp, &s->h[0], &wp->b[i]);
        hyp_add_block(wp, &s->h[0], &wp->b[i + 1]);
        if (hyp_improves(s, i, 2, 1)) {
            reset(&s->s[0]);
            clone_into(&s->s[0], &wp->b[i]);
            append_all(wp, &s->s[0], &wp->b[i + 1], 0, wp->b[i + 1].n);
            if (try_replace(s, i, 2, 1))
                return true;
        }
    }
    if (has_next) {
        /* swap, and relocations of one block over up to MAX_SHIFT others */
        for (int k = 1; k <= MAX_SHIFT && i + k < wp->nb; k++) {
            if (i + k < wp->busy_start)
                continue;
            if (try_rotate(s, i, i + k))
                return true;
            if (k > 1 && try_rotate(s, i + k, i))
                return true;
        }
    }
    if (has_next && near) {
        /* a whole segment across the boundary */
        const ub_wblock *A = &wp->b[i], *B = &wp->b[i + 1];
        if (A->n > 1) {
            reset(&s->h[0]);
            hyp_set_range(wp, &s->h[0], &s->ca, A, 0, A->n - 1);
            reset(&s->h[1]);
            hyp_add_block(wp, &s->h[1], B);
            hyp_add_range(wp, &s->h[1], A, A->n - 1, A->n);
            if (hyp_improves(s, i, 2, 2)) {
                reset(&s->s[0]);
                append_all(wp, &s->s[0], A, 0, A->n - 1);
                clone_into(&s->s[1], B);
                append_all(wp, &s->s[1], A, A->n - 1, A->n);
                if (try_replace(s, i, 2, 2))
                    return true;
            }
        }
        A = &wp->b[i];
        B = &wp->b[i + 1];
        if (B->n > 1) {
            reset(&s->h[0]);
            hyp_add_block(wp, &s->h[0], A);
            hyp_add_range(wp, &s->h[0], B, 0, 1);
            reset(&s->h[1]);
            hyp_set_range(wp, &s->h[1], &s->cb, B, 1, B->n);
            if (hyp_improves(s, i, 2, 2)) {
                clone_into(&s->s[0], A);
                append_all(wp, &s->s[0], B, 0, 1);
                reset(&s->s[1]);
                append_all(wp, &s->s[1], B, 1, B->n);
                if (try_replace(s, i, 2, 2))
                    return true;
            }
        }
    }

    /* Cuts of A's last segment; the tail goes after the next block, into it, or alone.  The
     * targeted cut makes A end when the next block's data is ready. */
    if (near) {
        const ub_segment last = wp->b[i].seg[wp->b[i].n - 1];
        double target = -1.0;
        if (has_next) {
            double per_byte = prof->beta + (wp->b[i].staged ? prof->copy_beta : 0.0);
            if (per_byte > 0)
                target = (double)(last.offset + last.length) -
                         (start_of(wp, i) + wp->b[i].cost - wp->b[i + 1].r) / per_byte;
        }
        uint64_t cuts[MAX_CUTS];
        int nc = cut_points(prof, last.call, last.offset, last.offset + last.length, target, cuts);
        for (int c = 0; c < nc; c++) {
            uint64_t x = last.offset + last.length - cuts[c]; /* tail bytes */
            if (has_next) {
                clone_into(&s->s[0], &wp->b[i]);
                trim(&s->s[0], s->s[0].n - 1, x, false);
                clone_into(&s->s[1], &wp->b[i + 1]);
                reset(&s->s[2]);
                add_seg(wp, &s->s[2], last.call, cuts[c], x);
                if (try_replace(s, i, 2, 3))
                    return true;
                clone_into(&s->s[0], &wp->b[i]);
                trim(&s->s[0], s->s[0].n - 1, x, false);
                clone_into(&s->s[1], &wp->b[i + 1]);
                add_seg(wp, &s->s[1], last.call, cuts[c], x);
                if (try_replace(s, i, 2, 2))
                    return true;
            }
            clone_into(&s->s[0], &wp->b[i]);
            trim(&s->s[0], s->s[0].n - 1, x, false);
            reset(&s->s[1]);
            add_seg(wp, &s->s[1], last.call, cuts[c], x);
            if (try_replace(s, i, 1, 2))
                return true;
        }
    }

    /* The head of the next block's first segment moves back into A. */
    if (has_next && near) {
        const ub_segment first = wp->b[i + 1].seg[0];
        uint64_t cuts[MAX_CUTS];
        int nc = cut_points(prof, first.call, first.offset, first.offset + first.length, -1.0, cuts);
        for (int c = 0; c < nc; c++) {
            uint64_t x = cuts[c] - first.offset;
            clone_into(&s->s[0], &wp->b[i]);
            add_seg(wp, &s->s[0], first.call, first.offset, x);
            clone_into(&s->s[1], &wp->b[i + 1]);
            trim(&s->s[1], 0, x, true);
            if (try_replace(s, i, 2, 2))
                return true;
        }
    }

    /* The cut between a call's pieces in two blocks moves (first and last segment of A). */
    if (has_next) {
        if (shift_same_call(s, i, wp->b[i].n - 1))
            return true;
        if (wp->b[i].n > 1 && shift_same_call(s, i, 0))
            return true;
        if (relocate_pieces(s, i, false))
            return true;
    }

    /* Splits of a block of several segments at up to 8 boundaries, alone or around B. */
    if (wp->b[i].n > 1 && near) {
        uint32_t n = wp->b[i].n, steps = n - 1 < 8 ? n - 1 : 8;
        for (uint32_t q = 1; q <= steps; q++) {
            uint32_t k = (uint32_t)((uint64_t)q * n / (steps + 1));
            if (k == 0 || k >= n)
                continue;
            const ub_wblock *A = &wp->b[i];
            reset(&s->h[0]);
            hyp_set_range(wp, &s->h[0], &s->ca, A, 0, k);
            reset(&s->h[1]);
            hyp_set_range(wp, &s->h[1], &s->ca, A, k, n);
            if (hyp_improves(s, i, 1, 2)) {
                reset(&s->s[0]);
                append_all(wp, &s->s[0], A, 0, k);
                reset(&s->s[1]);
                append_all(wp, &s->s[1], A, k, n);
                if (try_replace(s, i, 1, 2))
                    return true;
            }
            if (i + 1 < wp->nb) {
                A = &wp->b[i];
                ub_wblock tail = s->h[1];
                reset(&s->h[1]);
                hyp_add_block(wp, &s->h[1], &wp->b[i + 1]);
                s->h[2] = tail;
                if (hyp_improves(s, i, 2, 3)) {
                    reset(&s->s[0]);
                    append_all(wp, &s->s[0], A, 0, k);
                    clone_into(&s->s[1], &wp->b[i + 1]);
                    reset(&s->s[2]);
                    append_all(wp, &s->s[2], A, k, n);
                    if (try_replace(s, i, 2, 3))
                        return true;
                }
            }
        }
    }
    return false;
}

/* First-improvement descent: sweep the boundaries up to the first critical block (a move
 * later cannot lower T), step back one after each applied move. */
static void descend(search *s, double lower_bound)
{
    ub_wplan *wp = &s->wp;
    bool improved = true;
    if (wp->BgF >= wp->thr || lower_bound >= wp->thr)
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
static void kick(search *s, uint64_t *rng)
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
        if (j != i)
            ub_wplan_rotate(wp, i, j);
        break;
    }
    case 1:
        if (i + 1 < wp->nb) {
            reset(&s->s[0]);
            clone_into(&s->s[0], &wp->b[i]);
            append_all(wp, &s->s[0], &wp->b[i + 1], 0, wp->b[i + 1].n);
            ub_wblock_attrs(wp, &s->s[0]);
            if (s->s[0].valid)
                ub_wplan_replace(wp, i, 2, s->s, 1);
        }
        break;
    default: {
        const ub_wblock *A = &wp->b[i];
        if (A->n > 1) {
            uint32_t k = 1 + (uint32_t)(ub_splitmix64(rng) % (A->n - 1));
            reset(&s->s[0]);
            append_all(wp, &s->s[0], A, 0, k);
            reset(&s->s[1]);
            append_all(wp, &s->s[1], A, k, A->n);
        } else {
            const ub_segment g = A->seg[0];
            uint64_t z = ub_dtype_size(prof->calls[g.call].dtype);
            uint64_t c = g.offset + g.length * (1 + ub_splitmix64(rng) % 3) / 4;
            c -= c % z;
            if (c <= g.offset || c >= g.offset + g.length)
                break;
            reset(&s->s[0]);
            add_seg(wp, &s->s[0], g.call, g.offset, c - g.offset);
            reset(&s->s[1]);
            add_seg(wp, &s->s[1], g.call, c, g.offset + g.length - c);
        }
        ub_wblock_attrs(wp, &s->s[0]);
        ub_wblock_attrs(wp, &s->s[1]);
        ub_wplan_replace(wp, i, 1, s->s, 2);
        break;
    }
    }
    ub_wplan_timeline(wp);
}

static bool same_plan(const ub_plan *a, const ub_plan *b)
{
    if (a->n_blocks != b->n_blocks || a->n_segments != b->n_segments)
        return false;
    for (uint32_t i = 0; i < a->n_blocks; i++)
        if (a->blocks[i].n_segments != b->blocks[i].n_segments || a->blocks[i].first_segment != b->blocks[i].first_segment)
            return false;
    for (uint32_t i = 0; i < a->n_segments; i++)
        if (a->segments[i].call != b->segments[i].call || a->segments[i].offset != b->segments[i].offset ||
            a->segments[i].length != b->segments[i].length)
            return false;
    return true;
}

int ub_policy_best(const ub_profile *prof, ub_plan *out)
{
    int n = prof->n_calls;
    if (n <= 0)
        return -1;
    enum { N_START = UB_POLICY_COUNT - 1 };
    ub_plan start[N_START];
    int order[N_START], n_start = 0;
    for (int id = 0; id < UB_POLICY_COUNT; id++) {
        if (id == UB_POLICY_BEST)
            continue;
        ub_plan_init(&start[n_start], ub_policy_name(id));
        if (ub_policy_run(id, prof, &start[n_start]) != 0) {
            ub_plan_free(&start[n_start]);
            continue;
        }
        order[n_start] = n_start;
        n_start++;
    }
    /* Best start first; ties keep the registry order. */
    for (int a = 1; a < n_start; a++)
        for (int b = a; b > 0 && start[order[b]].iteration < start[order[b - 1]].iteration; b--) {
            int t = order[b];
            order[b] = order[b - 1];
            order[b - 1] = t;
        }

    search s;
    memset(&s, 0, sizeof(s));
    ub_wplan_init(&s.wp, prof);
    /* Move evaluations: a pure function of n.  Up to 150,000 between 80 and 500 calls, fewer
     * for tiny profiles (they converge long before) and a slower-growing share for large ones
     * (each evaluation costs more there): 150,000 at 1,000 calls (some 20 ms on the 2-CPU
     * development machine), 636,000 at 10,000.  The starts share 30%, the iterated local
     * search gets the rest. */
    long extra = 1500L * n;
    if (extra > 300000)
        extra = 300000;
    if (extra > 60000000L / n)
        extra = 60000000L / n;
    long total = 30000 + extra + 60L * n, for_starts = total * 3 / 10;
    ub_plan cand;
    ub_plan_init(&cand, "best");
    ub_plan_copy(out, &start[order[0]]);
    double best = ub_evaluate_const(prof, out, NULL);
    double lb = ub_lower_bound(prof);
    const char *from = start[order[0]].policy;
    long moves = 0;
    int distinct = 0;
    bool *dup_of = calloc((size_t)n_start, sizeof(bool));
    if (!dup_of) {
        fprintf(stderr, "usbyte: out of memory planning best\n");
        abort();
    }
    for (int r = 0; r < n_start; r++) {
        for (int q = 0; q < r && !dup_of[r]; q++)
            dup_of[r] = same_plan(&start[order[r]], &start[order[q]]);
        distinct += !dup_of[r];
    }
    /* Each start gets an equal share of what is left, so budget a start does not use (it
     * reached a local optimum) goes to the next ones. */
    for (int r = 0; r < n_start && s.evals < for_starts; r++) {
        if (dup_of[r])
            continue;
        if (lb >= best - 1e-12 * best)
            break; /* the best plan so far meets the lower bound */
        s.budget = s.evals + (for_starts - s.evals) / distinct--;
        const ub_plan *p = &start[order[r]];
        ub_wplan_load(&s.wp, p);
        s.gen++;
        long before = s.moves;
        descend(&s, lb);
        ub_wplan_store(&s.wp, &cand);
        double t = ub_evaluate_const(prof, &cand, NULL);
        if (t < best) {
            best = t;
            ub_plan_copy(out, &cand);
            from = p->policy;
            moves = s.moves - before;
        }
    }
    /* Iterated local search from the best plan: kick, descend, keep strict improvements. */
    uint64_t rng = 0x6b69636b5eedULL ^ (uint64_t)n;
    long kicks = 0;
    while (s.evals < total && lb < best - 1e-12 * best) {
        if (kicks % 2 == 0)
            ub_wplan_load(&s.wp, out); /* odd kicks continue from where the last descent ended */
        s.gen++;
        int n_kicks = 1 + (int)(ub_splitmix64(&rng) % 2);
        for (int k = 0; k < n_kicks; k++)
            kick(&s, &rng);
        s.evals += 1 + s.wp.nb / 32;
        kicks++;
        s.budget = total;
        long before = s.moves;
        descend(&s, lb);
        ub_wplan_store(&s.wp, &cand);
        double t = ub_evaluate_const(prof, &cand, NULL);
        if (t < best) {
            best = t;
            ub_plan_copy(out, &cand);
            moves += s.moves - before;
        }
    }
    char from_name[32];
    snprintf(from_name, sizeof(from_name), "%s", from);
    snprintf(out->params, sizeof(out->params), "from=%s moves=%ld kicks=%ld evals=%ld", from_name, moves, kicks,
             s.evals);
    free(dup_of);
    ub_plan_free(&cand);
    for (int k = 0; k < 4; k++)
        free(s.s[k].seg);
    free(s.ca.pre);
    free(s.ca.suf);
    free(s.cb.pre);
    free(s.cb.suf);
    ub_wplan_free(&s.wp);
    for (int k = 0; k < n_start; k++)
        ub_plan_free(&start[k]);
    return 0;
}
