/* Scratch and hypothetical blocks of the `best` search (see search.h): building candidate
 * blocks with their cached quantities kept current, judging unions, prefixes and suffixes of
 * blocks without building them, and the candidate cut offsets. */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"
#include "usbyte/alloc.h"
#include "usbyte/model.h"

/* A block's segment array and its growth: the block primitives the working plan uses too. */
void ub_wblock_reserve(ub_wblock *w, uint32_t n)
{
    if (n <= w->cap)
        return;
    uint32_t c = ub_grown_cap(w->cap, n, 4);
    w->seg = ub_xrealloc(w->seg, sizeof(ub_segment) * c, "in the plan search");
    w->cap = c;
}

void ub_wblock_push(ub_wblock *w, int32_t call, uint64_t offset, uint64_t length)
{
    /* Keep a call's adjacent bytes in one segment where that is O(1) to see (the first or the
     * last segment): fewer segments, same cost.  Other pieces of the same call stay separate
     * segments, which is valid and costs the same. */
    uint32_t ends[2] = {w->n ? w->n - 1 : 0, 0};
    for (int e = 0; e < (w->n > 1 ? 2 : (int)w->n); e++) {
        ub_segment *s = &w->seg[ends[e]];
        if (s->call != call)
            continue;
        if (s->offset + s->length == offset) {
            s->length += length;
            return;
        }
        if (offset + length == s->offset) {
            s->offset = offset;
            s->length += length;
            return;
        }
    }
    ub_wblock_reserve(w, w->n + 1);
    w->seg[w->n++] = (ub_segment){.call = call, .offset = offset, .length = length};
}

/* May calls a and b share a block?  Same dtype, op and merge group (docs/model.md). */
static bool may_share(const ub_wplan *wp, int32_t a, int32_t b)
{
    const ub_call *ca = &wp->prof->calls[a], *cb = &wp->prof->calls[b];
    return ca->dtype == cb->dtype && ca->op == cb->op && wp->group[a] == wp->group[b];
}

/* The cached quantities of a block without segments. */
static void clear_attrs(ub_wblock *w)
{
    w->r = 0.0;
    w->bytes = 0.0;
    w->W = -DBL_MAX;
    w->staged = false;
    w->valid = true;
    w->call0 = -1;
}

/* w's cached quantities (cost and segment count aside) with `length` bytes of `call` added. */
static void absorb(const ub_wplan *wp, ub_wblock *w, int32_t call, uint64_t length)
{
    const ub_call *c = &wp->prof->calls[call];
    if (w->call0 < 0) {
        w->call0 = call;
    } else if (call != w->call0) {
        w->staged = true;
        if (!may_share(wp, call, w->call0))
            w->valid = false;
    }
    if (c->ready > w->r)
        w->r = c->ready;
    if (wp->Fs[call] > w->W)
        w->W = wp->Fs[call];
    w->bytes += (double)length;
}

/* Every cached quantity from the segments (an empty block is not valid). */
void ub_wblock_attrs(const ub_wplan *wp, ub_wblock *w)
{
    clear_attrs(w);
    for (uint32_t i = 0; i < w->n; i++)
        absorb(wp, w, w->seg[i].call, w->seg[i].length);
    w->valid = w->valid && w->n > 0;
    if (w->n)
        w->cost = ub_block_cost(wp->prof, w->bytes, w->staged);
}

/* Scratch blocks keep their cached quantities up to date as segments are added or resized,
 * so judging a move costs O(1) per changed segment, not O(segments of the block). */
void ub_blk_reset(ub_wblock *w)
{
    w->n = 0;
    clear_attrs(w);
}

void ub_blk_clone(ub_wblock *dst, const ub_wblock *src)
{
    ub_wblock_reserve(dst, src->n);
    memcpy(dst->seg, src->seg, sizeof(ub_segment) * src->n);
    ub_segment *seg = dst->seg;
    uint32_t cap = dst->cap;
    *dst = *src; /* the count and every cached quantity; dst keeps its own array */
    dst->seg = seg;
    dst->cap = cap;
}

void ub_blk_add(const ub_wplan *wp, ub_wblock *w, int32_t call, uint64_t offset, uint64_t length)
{
    absorb(wp, w, call, length);
    ub_wblock_push(w, call, offset, length);
}

void ub_blk_append(const ub_wplan *wp, ub_wblock *dst, const ub_wblock *src, uint32_t from, uint32_t to)
{
    for (uint32_t i = from; i < to; i++)
        ub_blk_add(wp, dst, src->seg[i].call, src->seg[i].offset, src->seg[i].length);
}

/* Segment k of w loses `cut` bytes at its end (tail) or its start (head); the call stays. */
void ub_blk_trim(ub_wblock *w, uint32_t k, uint64_t cut, bool head)
{
    if (head)
        w->seg[k].offset += cut;
    w->seg[k].length -= cut;
    w->bytes -= (double)cut;
}

bool ub_wblock_fits(const ub_wplan *wp, const ub_wblock *w)
{
    return !w->staged || ub_staging_fits(wp->prof, w->bytes);
}

/* Cost from the cached quantities; false when the block is empty, mixes what it may not, or
 * stages more than the staging buffer holds. */
bool ub_blk_finish(const ub_wplan *wp, ub_wblock *w)
{
    if (w->n == 0 || !w->valid || !ub_wblock_fits(wp, w))
        return false;
    w->cost = ub_block_cost(wp->prof, w->bytes, w->staged);
    return true;
}

/* The quantities of a union of segments, without copying them (h->n counts segments). */
void ub_hyp_add_range(const ub_wplan *wp, ub_wblock *h, const ub_wblock *b, uint32_t from, uint32_t to)
{
    for (uint32_t k = from; k < to; k++) {
        absorb(wp, h, b->seg[k].call, b->seg[k].length);
        h->n++;
    }
}

/* q with segment g's ready time, forward gate and bytes added (staging and call0 depend on
 * the direction: the callers set them). */
static ub_range_q range_add(const ub_wplan *wp, ub_range_q q, const ub_segment *g)
{
    double r = wp->prof->calls[g->call].ready;
    q.r = r > q.r ? r : q.r;
    q.W = wp->Fs[g->call] > q.W ? wp->Fs[g->call] : q.W;
    q.bytes += (double)g->length;
    return q;
}

void ub_range_cache_build(const ub_wplan *wp, ub_range_cache *c, const ub_wblock *b)
{
    uint32_t n = b->n;
    if (n + 1 > c->cap) {
        c->cap = ub_grown_cap(c->cap, n + 1, 16);
        c->pre = ub_xrealloc(c->pre, sizeof(ub_range_q) * c->cap, "in the plan search");
        c->suf = ub_xrealloc(c->suf, sizeof(ub_range_q) * c->cap, "in the plan search");
    }
    c->n = n;
    ub_range_q empty = {0.0, -DBL_MAX, 0.0, false, -1};
    c->pre[0] = empty;
    for (uint32_t k = 0; k < n; k++) {
        ub_range_q q = range_add(wp, c->pre[k], &b->seg[k]);
        q.staged = q.staged || b->seg[k].call != b->seg[0].call;
        q.call0 = b->seg[0].call;
        c->pre[k + 1] = q;
    }
    c->suf[n] = empty;
    for (uint32_t k = n; k-- > 0;) {
        ub_range_q q = range_add(wp, c->suf[k + 1], &b->seg[k]);
        q.staged = q.staged || (k + 1 < n && b->seg[k + 1].call != b->seg[k].call);
        q.call0 = b->seg[k].call;
        c->suf[k] = q;
    }
}

/* h (reset) becomes segments [from, to) of the cached block b, a prefix or a suffix. */
void ub_hyp_set_range(const ub_wplan *wp, ub_wblock *h, const ub_range_cache *c, const ub_wblock *b,
                          uint32_t from, uint32_t to)
{
    if (c->n != b->n || (from != 0 && to != b->n)) {
        ub_hyp_add_range(wp, h, b, from, to);
        return;
    }
    const ub_range_q *q = from == 0 ? &c->pre[to] : &c->suf[from];
    h->r = q->r;
    h->W = q->W;
    h->bytes = q->bytes;
    h->staged = q->staged;
    h->call0 = q->call0;
    h->valid = b->valid;
    h->n = to - from;
#ifdef UB_SEARCH_CHECK
    ub_wblock x = {0};
    ub_blk_reset(&x);
    ub_hyp_add_range(wp, &x, b, from, to);
    if (x.r != h->r || x.W != h->W || x.bytes != h->bytes || x.staged != h->staged || x.call0 != h->call0) {
        fprintf(stderr, "range cache mismatch [%u, %u) of %u\n", from, to, b->n);
        abort();
    }
#endif
}

/* h grows by a whole block, in O(1) from the block's cached quantities. */
void ub_hyp_add_block(const ub_wplan *wp, ub_wblock *h, const ub_wblock *b)
{
    if (h->call0 < 0) {
        h->call0 = b->call0;
        h->staged = b->staged;
    } else {
        if (b->staged || b->call0 != h->call0)
            h->staged = true;
        if (!may_share(wp, b->call0, h->call0))
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

/* Candidate cut offsets strictly inside [lo, hi) of call k, on its cut quantum (whole
 * elements, and the profile's align where it applies): the multiples of
 * 1/8 of the call (so the search covers the oracle's grids), 1/4, 1/2 and 3/4 of the range,
 * and `target` (an absolute offset, ignored when outside).  Sorted, without duplicates. */
int ub_cut_points(const ub_profile *prof, int k, uint64_t lo, uint64_t hi, double target, uint64_t *out)
{
    uint64_t bytes = prof->calls[k].bytes;
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
        uint64_t c = ub_cut_floor(prof, k, (uint64_t)want[w]);
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
