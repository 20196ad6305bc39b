/* The docs/model.md timeline, exactly: a serial link, blocks in plan order, forward segments gated
 * by the completion of the calls they need, compute slowed beside the link.  Everything that
 * judges a plan calls this. */
#include <float.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "order_internal.h"
#include "usbyte/alloc.h"
#include "usbyte/model.h"

/* The compute's clock under rule 7: `work` seconds of compute begun at wall time t end at the
 * returned wall time, slowed by (1 + f) inside the link's busy intervals [start[j], end[j]) (the
 * blocks so far, in plan order: sorted and disjoint on a serial link).  *j is a cursor: the first
 * interval that may still end after t; it only moves forward, so a walk of increasing times costs
 * one pass over the intervals. */
static double compute_until(double t, double work, double f, const double *start, const double *end, uint32_t n,
                            uint32_t *j)
{
    while (*j < n && end[*j] <= t)
        ++*j;
    for (; work > 0.0 && *j < n; ++*j) {
        if (start[*j] > t) {
            double idle = start[*j] - t;
            if (work <= idle)
                return t + work;
            work -= idle;
            t = start[*j];
        }
        double room = (end[*j] - t) / (1.0 + f);
        if (work <= room)
            return t + work * (1.0 + f);
        work -= room;
        t = end[*j];
    }
    return t + work;
}

/* The backward's compute as it stands at its own second `tau` (a call's ready time, the
 * backward's end): its wall time over the first n blocks, which are all the link has run before
 * it (a later block starts after its own calls are ready, so after every time asked before it).
 * Asked in increasing tau it resumes where it stopped; an earlier tau (a plan that reorders)
 * walks from the start. */
typedef struct compute_clock {
    double tau, wall;
    uint32_t j;
} compute_clock;

static double compute_wall(compute_clock *k, double tau, double f, const double *start, const double *end, uint32_t n)
{
    if (tau < k->tau)
        *k = (compute_clock){0.0, 0.0, 0};
    k->wall = compute_until(k->wall, tau - k->tau, f, start, end, n, &k->j);
    k->tau = tau;
    return k->wall;
}

void ub_forward_gates(const ub_profile *prof, const double *done, double *gate)
{
    for (int s = 0; s < prof->n_forward; s++)
        gate[s] = -DBL_MAX;
    for (int k = 0; k < prof->n_calls; k++) {
        int s = prof->calls[k].need;
        if (done[k] > gate[s])
            gate[s] = done[k];
    }
}

/* Runs rules 1-7.  block_start/block_end may be NULL. */
static double timeline(const ub_profile *prof, const ub_plan *plan, double *block_start,
                       double *block_end, double *call_completion)
{
    /* Rule 7 reads the busy intervals back: kept here when the caller does not want them. */
    double f = prof->interference;
    double *own = NULL;
    if (f > 0.0 && (!block_start || !block_end)) {
        own = ub_xrealloc(NULL, sizeof(double) * 2 * (plan->n_blocks ? plan->n_blocks : 1), "evaluating a plan");
        block_start = own;
        block_end = own + plan->n_blocks;
    }
    compute_clock backward = {0.0, 0.0, 0};
    double small[64];
    double *done = call_completion;
    double *heap = NULL;
    if (!done) {
        if (prof->n_calls <= 64) {
            done = small;
        } else {
            heap = ub_xrealloc(NULL, sizeof(double) * (size_t)prof->n_calls, "evaluating a plan");
            done = heap;
        }
    }
    for (int k = 0; k < prof->n_calls; k++)
        done[k] = 0.0;

    double link = 0.0;
    for (uint32_t b = 0; b < plan->n_blocks; b++) {
        const ub_block *blk = &plan->blocks[b];
        const ub_segment *seg = &plan->segments[blk->first_segment];
        double start = link, bytes = 0.0;
        bool staged = ub_segments_staged(seg, blk->n_segments, NULL);
        for (uint32_t i = 0; i < blk->n_segments; i++) {
            double r = prof->calls[seg[i].call].ready;
            if (f > 0.0)
                r = compute_wall(&backward, r, f, block_start, block_end, b);
            if (r > start)
                start = r;
            bytes += (double)seg[i].length;
        }
        double end = start + ub_block_cost(prof, bytes, staged);
        for (uint32_t i = 0; i < blk->n_segments; i++)
            if (end > done[seg[i].call])
                done[seg[i].call] = end;
        if (block_start)
            block_start[b] = start;
        if (block_end)
            block_end[b] = end;
        link = end;
    }

    /* Forward: segment s waits for every call whose need is s. */
    double t = prof->backward_end + prof->gap;
    uint32_t j = 0;
    if (f > 0.0)
        t = compute_wall(&backward, t, f, block_start, block_end, plan->n_blocks);
    int s_count = prof->n_forward;
    double gate_small[64];
    double *gate =
        s_count <= 64 ? gate_small : ub_xrealloc(NULL, sizeof(double) * (size_t)s_count, "evaluating a plan");
    ub_forward_gates(prof, done, gate);
    for (int s = 0; s < s_count; s++) {
        if (gate[s] > t)
            t = gate[s];
        t = f > 0.0 ? compute_until(t, prof->forward[s], f, block_start, block_end, plan->n_blocks, &j)
                    : t + prof->forward[s];
    }
    if (gate != gate_small)
        free(gate);
    free(heap);
    free(own);
    return t;
}

bool ub_profile_times_finite(const ub_profile *prof)
{
    double t = prof->backward_end + prof->gap, bytes = 0.0, ready = 0.0;
    for (int s = 0; s < prof->n_forward; s++)
        t += prof->forward[s];
    for (int k = 0; k < prof->n_calls; k++) {
        bytes += (double)prof->calls[k].bytes;
        if (prof->calls[k].ready > ready)
            ready = prof->calls[k].ready;
    }
    /* A plan of up to 16 (n + 1024) blocks (far more than any policy cuts), every byte staged,
     * with a factor 16 of room for the sums of the search. */
    double blocks = 16.0 * ((double)prof->n_calls + 1024.0);
    double alpha, beta;
    ub_link_cost_maxima(prof, &alpha, &beta);
    t += ready + blocks * alpha + bytes * (beta + prof->copy_beta);
    return t < DBL_MAX / 16;
}

bool ub_meets_bound(double iteration, double lower_bound)
{
    return iteration <= lower_bound + 1e-9 * (lower_bound > 0 ? lower_bound : -lower_bound);
}

double ub_evaluate(const ub_profile *prof, ub_plan *plan, double *call_completion)
{
    return ub_evaluate_with_bound(prof, plan, ub_lower_bound(prof), call_completion);
}

double ub_evaluate_with_bound(const ub_profile *prof, ub_plan *plan, double lower_bound, double *call_completion)
{
    double *start = ub_xrealloc(NULL, sizeof(double) * (plan->n_blocks ? plan->n_blocks : 1) * 2, "evaluating a plan");
    double *end = start + plan->n_blocks;
    double t = timeline(prof, plan, start, end, call_completion);
    for (uint32_t b = 0; b < plan->n_blocks; b++) {
        plan->blocks[b].start = start[b];
        plan->blocks[b].end = end[b];
    }
    free(start);
    plan->iteration = t;
    plan->lower_bound = lower_bound;
    plan->optimal = ub_meets_bound(t, lower_bound);
    return t;
}

double ub_evaluate_const(const ub_profile *prof, const ub_plan *plan, double *call_completion)
{
    return timeline(prof, plan, NULL, NULL, call_completion);
}

/* E of docs/model.md rule 6 for the calls idx[0..m) (in ready order): the earliest time a link that
 * carries only them, in consecutive groups of that order, finishes them all:
 *   F[j] = min over 1 <= i <= j of  max(F[i-1], r_j) + alpha + beta*(P[j] - P[i-1]),  F[0] = 0,
 * with r_j the j-th ready time (the latest of its group) and P the prefix sums of bytes.  F is
 * non-decreasing (dropping the last call from its group never ends later), so the i with
 * F[i-1] <= r_j form a prefix 1..i*, where the best is i* itself (most bytes before it); past it
 * the term is F[i-1] - beta*P[i-1] =: G(i), whose minimum over the window (i*, j] a monotone
 * deque keeps.  r_j and F grow with j, so i* only moves right: O(m) in all. */
static double earliest_finish(const ub_profile *prof, double alpha, double beta, const int *idx, int m, double *F,
                              double *P, double *G, int *dq)
{
    F[0] = P[0] = 0.0;
    int head = 0, tail = 0, istar = 1;
    for (int j = 1; j <= m; j++) {
        const ub_call *c = &prof->calls[idx[j - 1]];
        double r = c->ready;
        P[j] = P[j - 1] + (double)c->bytes;
        G[j] = F[j - 1] - beta * P[j - 1];
        while (tail > head && G[dq[tail - 1]] >= G[j])
            tail--;
        dq[tail++] = j;
        while (istar < j && F[istar] <= r)
            istar++;
        while (head < tail && dq[head] <= istar)
            head++;
        double v = r - beta * P[istar - 1];
        if (head < tail && G[dq[head]] < v)
            v = G[dq[head]];
        F[j] = alpha + beta * P[j] + v;
    }
    return F[m];
}

/* Rule 6 with the link's cost replaced by the line alpha + beta*M. */
static double bound_for_line(const ub_profile *prof, double alpha, double beta)
{
    int n = prof->n_calls, S = prof->n_forward;
    double *Fs = ub_xrealloc(NULL, sizeof(double) * ((size_t)S + 1), "computing the lower bound");
    Fs[S] = 0.0;
    for (int s = S - 1; s >= 0; s--)
        Fs[s] = Fs[s + 1] + prof->forward[s];
    double best = prof->backward_end + prof->gap + Fs[0];
    if (n == 0) {
        free(Fs);
        return best;
    }
    /* present[s]: some call has need s.  Between two such values the set {need <= s} does not
     * change while sum(forward[s:]) shrinks, so only those s can give the maximum. */
    char *present = ub_xcalloc((size_t)S, 1, "computing the lower bound");
    int s_max = 0;
    for (int k = 0; k < n; k++) {
        present[prof->calls[k].need] = 1;
        if (prof->calls[k].need > s_max)
            s_max = prof->calls[k].need;
    }
    size_t m1 = (size_t)n + 1;
    int *set = ub_xrealloc(NULL, sizeof(int) * (size_t)n, "computing the lower bound");
    int *dq = ub_xrealloc(NULL, sizeof(int) * m1, "computing the lower bound");
    double *F = ub_xrealloc(NULL, sizeof(double) * 3 * m1, "computing the lower bound");
    ub_ready_order(prof, set);
    /* From the largest s down: the set only shrinks (filtered in place, keeping ready order).
     * E_s <= E of any larger s, so an s whose term cannot beat the best even with that upper
     * bound is skipped without its DP. */
    int m = n;
    double upper = -1.0;
    for (int s = s_max; s >= 0; s--) {
        if (!present[s])
            continue;
        int kept = 0;
        for (int i = 0; i < m; i++)
            if (prof->calls[set[i]].need <= s)
                set[kept++] = set[i];
        m = kept;
        if (upper >= 0.0 && upper + Fs[s] <= best)
            continue;
        upper = earliest_finish(prof, alpha, beta, set, m, F, F + m1, F + 2 * m1, dq);
        if (upper + Fs[s] > best)
            best = upper + Fs[s];
    }
    free(present);
    free(set);
    free(dq);
    free(F);
    free(Fs);
    return best;
}

/* Any line at or below the cost function makes every block, and so every plan, no longer (the
 * timeline only adds and takes maxima of block costs): a bound for that line is a bound for the
 * curve.  The best of the curve's lower lines is kept. */
double ub_lower_bound(const ub_profile *prof)
{
    double alpha[2 * UB_NET_MAX_SEGMENTS + 2], beta[2 * UB_NET_MAX_SEGMENTS + 2];
    int lines = ub_link_lower_lines(prof, alpha, beta, 2 * UB_NET_MAX_SEGMENTS + 2);
    double best = bound_for_line(prof, alpha[0], beta[0]);
    for (int i = 1; i < lines; i++) {
        double b = bound_for_line(prof, alpha[i], beta[i]);
        if (b > best)
            best = b;
    }
    return best;
}

static uint64_t gcd64(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

uint64_t ub_cut_quantum(const ub_profile *prof, int k)
{
    const ub_call *c = &prof->calls[k];
    uint64_t z = ub_dtype_size(c->dtype);
    if (z == 0)
        z = 1;
    if (prof->align == 0 || c->bytes <= prof->align)
        return z;
    uint64_t a = prof->align / gcd64(prof->align, z);
    if (a > UINT64_MAX / z)
        return UINT64_MAX;
    return a * z;
}

uint64_t ub_cut_floor(const ub_profile *prof, int k, uint64_t offset)
{
    uint64_t q = ub_cut_quantum(prof, k);
    return q == UINT64_MAX ? 0 : offset - offset % q;
}

uint64_t ub_piece_at_least(const ub_profile *prof, int k, uint64_t want)
{
    uint64_t q = ub_cut_quantum(prof, k), bytes = prof->calls[k].bytes;
    if (want == 0)
        want = 1; /* a piece is never empty */
    if (want >= bytes || q >= bytes)
        return bytes;
    uint64_t r = want % q;
    if (r && want > bytes - (q - r))
        return bytes;
    return r ? want + (q - r) : want;
}

/* Validity (docs/model.md): every byte of every call exactly once, homogeneous blocks, no block
 * spanning a call marked "merge": false, and the regions those calls end in order: a block of
 * region r never comes after a block of a later region.  Then when a merge:false call i arrives,
 * every block up to the last one holding a call <= i holds only calls <= i, so the runtime can
 * issue them all at once (a consumer of call i never waits for a call that has not arrived). */
typedef struct {
    uint64_t offset, length;
    uint32_t block;
} covered;

static int by_call_offset(const void *a, const void *b)
{
    const covered *x = a, *y = b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Segment i of block b (seg: the block's segments): a call of the profile, a range inside it at
 * cuts the runtime can issue, the dtype and op of the block's first segment. */
static bool segment_ok(const ub_profile *prof, const ub_segment *seg, uint32_t b, uint32_t i, char *err,
                       size_t errlen)
{
    int n = prof->n_calls;
    const ub_segment *s = &seg[i];
    if (s->call < 0 || s->call >= n) {
        snprintf(err, errlen, "blocks[%u].segments[%u]: call %d does not exist (the profile has %d calls)", b, i,
                 (int)s->call, n);
        return false;
    }
    const ub_call *c = &prof->calls[s->call];
    if (s->length == 0 || s->offset >= c->bytes || s->length > c->bytes - s->offset) {
        snprintf(err, errlen, "blocks[%u].segments[%u]: [%llu, +%llu) is empty or outside call %d's %llu bytes", b, i,
                 (unsigned long long)s->offset, (unsigned long long)s->length, (int)s->call,
                 (unsigned long long)c->bytes);
        return false;
    }
    /* The runtime issues a segment as `count` elements at an address inside the call's buffer: a
     * cut must not split an element, nor miss the alignment. */
    uint64_t q = ub_cut_quantum(prof, s->call), end = s->offset + s->length;
    bool bad_off = q == UINT64_MAX ? s->offset != 0 : s->offset % q != 0;
    bool bad_end = end != c->bytes && (q == UINT64_MAX || end % q != 0);
    if (bad_off || bad_end) {
        snprintf(err, errlen,
                 "blocks[%u].segments[%u]: %s %llu of call %d is not a cut the runtime can issue "
                 "(multiples of %llu bytes: whole %s elements%s)",
                 b, i, bad_off ? "offset" : "end", (unsigned long long)(bad_off ? s->offset : end), (int)s->call,
                 (unsigned long long)(q == UINT64_MAX ? c->bytes : q), ub_dtype_name(c->dtype),
                 prof->align && c->bytes > prof->align ? ", on the profile's align" : "");
        return false;
    }
    const ub_call *c0 = &prof->calls[seg[0].call];
    if (c->dtype != c0->dtype || c->op != c0->op) {
        snprintf(err, errlen, "blocks[%u] mixes %s/%s (call %d) with %s/%s (call %d)", b, ub_dtype_name(c0->dtype),
                 ub_op_name(c0->op), (int)seg[0].call, ub_dtype_name(c->dtype), ub_op_name(c->op), (int)s->call);
        return false;
    }
    return true;
}

/* The latest barrier region the blocks so far hold a call of, the first block that did and its
 * first call there. */
typedef struct region_mark {
    int region, call;
    uint32_t block;
} region_mark;

/* Block b: non-empty, its segments valid (counted per call in count), within one barrier region
 * (barrier_before), in region order after the blocks before it (mark), its staging within
 * staging_max. */
static bool block_ok(const ub_profile *prof, const ub_plan *plan, uint32_t b, const int *barrier_before,
                     uint32_t *count, region_mark *mark, char *err, size_t errlen)
{
    int n = prof->n_calls;
    const ub_block *blk = &plan->blocks[b];
    if (blk->n_segments == 0) {
        snprintf(err, errlen, "blocks[%u] is empty", b);
        return false;
    }
    if ((uint64_t)blk->first_segment + blk->n_segments > plan->n_segments) {
        snprintf(err, errlen, "blocks[%u] refers past the plan's segments", b);
        return false;
    }
    const ub_segment *seg = &plan->segments[blk->first_segment];
    int lo = n, hi = -1;
    uint64_t block_bytes = 0;
    bool staged = ub_segments_staged(seg, blk->n_segments, NULL);
    for (uint32_t i = 0; i < blk->n_segments; i++) {
        if (!segment_ok(prof, seg, b, i, err, errlen))
            return false;
        const ub_segment *s = &seg[i];
        block_bytes = s->length > UINT64_MAX - block_bytes ? UINT64_MAX : block_bytes + s->length;
        if (s->call < lo)
            lo = s->call;
        if (s->call > hi)
            hi = s->call;
        count[s->call]++;
    }
    if (barrier_before[hi] != barrier_before[lo]) {
        snprintf(err, errlen, "blocks[%u] merges calls %d and %d across a call marked \"merge\": false", b, lo, hi);
        return false;
    }
    int region = barrier_before[lo];
    if (region < mark->region) {
        /* the merge:false call that ends this block's region */
        int end = hi;
        while (end < n - 1 && prof->calls[end].merge)
            end++;
        snprintf(err, errlen,
                 "blocks[%u] holds call %d after blocks[%u] holds call %d: call %d is marked \"merge\": false, so "
                 "the blocks up to its last one may hold only calls up to %d (issuable when it arrives)",
                 b, lo, mark->block, mark->call, end, end);
        return false;
    }
    if (region > mark->region || mark->call < 0)
        *mark = (region_mark){region, lo, b};
    if (staged && prof->staging_max && block_bytes > prof->staging_max) {
        snprintf(err, errlen,
                 "blocks[%u] stages %llu bytes (several calls, or ranges of one call that do not touch), above "
                 "staging_max %llu (the runtime's staging "
                 "buffer)",
                 b, (unsigned long long)block_bytes, (unsigned long long)prof->staging_max);
        return false;
    }
    return true;
}

/* Every call's bytes covered exactly once: the segments bucketed by call (count: segments per
 * call, turned into bucket starts), each bucket sorted by offset. */
static bool cover_ok(const ub_profile *prof, const ub_plan *plan, uint32_t *count, covered *cov, uint32_t *fill,
                     char *err, size_t errlen)
{
    int n = prof->n_calls;
    uint32_t acc = 0;
    for (int k = 0; k <= n; k++) {
        uint32_t c = count[k];
        count[k] = acc;
        acc += c;
    }
    for (uint32_t b = 0; b < plan->n_blocks; b++)
        for (uint32_t i = 0; i < plan->blocks[b].n_segments; i++) {
            const ub_segment *s = &plan->segments[plan->blocks[b].first_segment + i];
            cov[count[s->call] + fill[s->call]++] = (covered){s->offset, s->length, b};
        }
    for (int k = 0; k < n; k++) {
        covered *c = &cov[count[k]];
        uint32_t m = fill[k];
        qsort(c, m, sizeof(*c), by_call_offset);
        uint64_t at = 0;
        for (uint32_t i = 0; i < m; i++) {
            if (c[i].offset != at) {
                snprintf(err, errlen, "call %d: bytes [%llu, %llu) are %s (block %u)", k,
                         (unsigned long long)(c[i].offset < at ? c[i].offset : at),
                         (unsigned long long)(c[i].offset < at ? at : c[i].offset),
                         c[i].offset < at ? "covered twice" : "not covered", c[i].block);
                return false;
            }
            at += c[i].length;
        }
        if (at != prof->calls[k].bytes) {
            snprintf(err, errlen, "call %d: bytes [%llu, %llu) are not covered", k, (unsigned long long)at,
                     (unsigned long long)prof->calls[k].bytes);
            return false;
        }
    }
    return true;
}

int ub_plan_validate(const ub_profile *prof, const ub_plan *plan, char *err, size_t errlen)
{
    int n = prof->n_calls;
    /* barrier_before[k]: number of merge:false calls among 0..k-1, so a block spanning calls
     * lo..hi crosses a barrier iff barrier_before[hi] != barrier_before[lo]. */
    int *barrier_before = calloc((size_t)n + 1, sizeof(int));
    uint32_t *count = calloc((size_t)n + 1, sizeof(uint32_t));
    /* Sized by what the blocks reference, not by n_segments: a malformed in-memory plan whose
     * blocks share segments would otherwise overflow the bucket array. */
    size_t referenced = 1;
    for (uint32_t b = 0; b < plan->n_blocks; b++)
        referenced += plan->blocks[b].n_segments;
    covered *cov = malloc(sizeof(covered) * referenced);
    uint32_t *fill = calloc((size_t)n + 1, sizeof(uint32_t));
    int rc = -1;
    if (!barrier_before || !count || !cov || !fill) {
        snprintf(err, errlen, "out of memory validating the plan");
        goto out;
    }
    for (int k = 0; k < n; k++)
        barrier_before[k + 1] = barrier_before[k] + (prof->calls[k].merge ? 0 : 1);
    region_mark mark = {0, -1, 0};
    for (uint32_t b = 0; b < plan->n_blocks; b++)
        if (!block_ok(prof, plan, b, barrier_before, count, &mark, err, errlen))
            goto out;
    if (cover_ok(prof, plan, count, cov, fill, err, errlen))
        rc = 0;
out:
    free(barrier_before);
    free(count);
    free(cov);
    free(fill);
    return rc;
}
