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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"
#include "usbyte/model.h"
#include "usbyte/policy.h"

#define MAX_SHIFT 8  /* farthest relocation of one block */
#define MAX_PAIR 32  /* farthest block holding the neighbouring piece of the same call */
#define MAX_CUTS 16

typedef struct {
    ub_wplan wp;
    ub_wblock s[4]; /* scratch blocks; their segment arrays are recycled */
    const ub_wblock *view[MAX_PAIR + MAX_SHIFT + 4];
    long evals, budget, moves;
} search;

static void clone_into(ub_wblock *dst, const ub_wblock *src)
{
    ub_wblock_reserve(dst, src->n);
    memcpy(dst->seg, src->seg, sizeof(ub_segment) * src->n);
    dst->n = src->n;
}

static void append_all(ub_wblock *dst, const ub_wblock *src, uint32_t from, uint32_t to)
{
    for (uint32_t i = from; i < to; i++)
        ub_wblock_push(dst, src->seg[i].call, src->seg[i].offset, src->seg[i].length);
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
        ub_wblock_attrs(wp, &s->s[k]);
        if (!s->s[k].valid)
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
    for (int k = 0; k < 2; k++) {
        ub_wblock_attrs(wp, &s->s[k]);
        if (!s->s[k].valid)
            return false;
    }
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
                if (try_pair(s, i, d))
                    return true;
            }
            return false; /* only the nearest neighbouring piece */
        }
    }
    return false;
}

/* Cuts block i's last segment and moves one piece away from the rest: the head alone to
 * k blocks earlier, or the tail alone to k blocks later (k = 1, 2, 4, 8). */
static bool cut_relocate(search *s, int i, bool head_earlier)
{
    ub_wplan *wp = &s->wp;
    const ub_profile *prof = wp->prof;
    const ub_segment g = wp->b[i].seg[wp->b[i].n - 1];
    uint64_t cuts[MAX_CUTS];
    int nc = 0;
    uint64_t z = ub_dtype_size(prof->calls[g.call].dtype);
    for (int j = 1; j < 4; j++) {
        uint64_t c = g.offset + g.length * (uint64_t)j / 4;
        c -= c % z;
        if (c > g.offset && c < g.offset + g.length && (nc == 0 || cuts[nc - 1] != c))
            cuts[nc++] = c;
    }
    static const int dist[] = {1, 2, 4, 8};
    for (int c = 0; c < nc; c++) {
        for (size_t q = 0; q < sizeof(dist) / sizeof(dist[0]); q++) {
            int k = dist[q];
            int lo = head_earlier ? i - k : i, hi = head_earlier ? i : i + k;
            if (lo < 0 || hi >= wp->nb || (!head_earlier && k == 1))
                continue; /* the tail one block later is tried by improve_at */
            if (lo > wp->first_crit && wp->first_crit >= 0)
                continue;
            s->evals++;
            /* s[0]: the piece that moves, s[1]: block i without it */
            s->s[0].n = 0;
            clone_into(&s->s[1], &wp->b[i]);
            ub_segment *rest = &s->s[1].seg[s->s[1].n - 1];
            if (head_earlier) {
                ub_wblock_push(&s->s[0], g.call, g.offset, cuts[c] - g.offset);
                rest->offset = cuts[c];
                rest->length = g.offset + g.length - cuts[c];
            } else {
                ub_wblock_push(&s->s[0], g.call, cuts[c], g.offset + g.length - cuts[c]);
                rest->length = cuts[c] - g.offset;
            }
            ub_wblock_attrs(wp, &s->s[0]);
            ub_wblock_attrs(wp, &s->s[1]);
            if (!s->s[0].valid || !s->s[1].valid)
                continue;
            int m = 0;
            if (head_earlier) {
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
            /* Apply as: block i -> (moving piece, rest) or (rest, moving piece), then rotate. */
            if (head_earlier) {
                ub_wplan_replace(wp, i, 1, s->s, 2); /* [i] = head, [i+1] = rest */
                ub_wplan_rotate(wp, i, lo);
                if (confirm(s, thr))
                    return true;
                ub_wplan_rotate(wp, lo, i);
            } else {
                ub_wblock t = s->s[0];
                s->s[0] = s->s[1];
                s->s[1] = t;
                ub_wplan_replace(wp, i, 1, s->s, 2); /* [i] = rest, [i+1] = tail */
                ub_wplan_rotate(wp, i + 1, hi + 1);
                if (confirm(s, thr))
                    return true;
                ub_wplan_rotate(wp, hi + 1, i + 1);
            }
            ub_wplan_replace(wp, i, 2, s->s, 1);
            ub_wplan_timeline(wp);
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

    /* Windows must reach the busy period of the first critical block and start no later
     * than that block (search_state.c, ub_wplan_improves). */
    if (i >= wp->busy_start && cut_relocate(s, i, true))
        return true;
    if (wp->first_crit >= 0 && i > wp->first_crit)
        return false; /* every other move starts at block i */
    if (i + MAX_PAIR < wp->busy_start)
        return false; /* no window from here reaches it */

    bool near = i + 1 >= wp->busy_start; /* windows [i, i+1] can matter */
    if (has_next && near) {
        /* merge */
        s->s[0].n = 0;
        clone_into(&s->s[0], &wp->b[i]);
        append_all(&s->s[0], &wp->b[i + 1], 0, wp->b[i + 1].n);
        if (try_replace(s, i, 2, 1))
            return true;
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
            s->s[0].n = 0;
            append_all(&s->s[0], A, 0, A->n - 1);
            clone_into(&s->s[1], B);
            append_all(&s->s[1], A, A->n - 1, A->n);
            if (try_replace(s, i, 2, 2))
                return true;
        }
        A = &wp->b[i];
        B = &wp->b[i + 1];
        if (B->n > 1) {
            clone_into(&s->s[0], A);
            append_all(&s->s[0], B, 0, 1);
            s->s[1].n = 0;
            append_all(&s->s[1], B, 1, B->n);
            if (try_replace(s, i, 2, 2))
                return true;
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
                s->s[0].seg[s->s[0].n - 1].length -= x;
                clone_into(&s->s[1], &wp->b[i + 1]);
                s->s[2].n = 0;
                ub_wblock_push(&s->s[2], last.call, cuts[c], x);
                if (try_replace(s, i, 2, 3))
                    return true;
                clone_into(&s->s[0], &wp->b[i]);
                s->s[0].seg[s->s[0].n - 1].length -= x;
                clone_into(&s->s[1], &wp->b[i + 1]);
                ub_wblock_push(&s->s[1], last.call, cuts[c], x);
                if (try_replace(s, i, 2, 2))
                    return true;
            }
            clone_into(&s->s[0], &wp->b[i]);
            s->s[0].seg[s->s[0].n - 1].length -= x;
            s->s[1].n = 0;
            ub_wblock_push(&s->s[1], last.call, cuts[c], x);
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
            ub_wblock_push(&s->s[0], first.call, first.offset, x);
            clone_into(&s->s[1], &wp->b[i + 1]);
            s->s[1].seg[0].offset += x;
            s->s[1].seg[0].length -= x;
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
        if (cut_relocate(s, i, false))
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
            s->s[0].n = 0;
            append_all(&s->s[0], A, 0, k);
            s->s[1].n = 0;
            append_all(&s->s[1], A, k, n);
            if (try_replace(s, i, 1, 2))
                return true;
            if (i + 1 < wp->nb) {
                A = &wp->b[i];
                s->s[0].n = 0;
                append_all(&s->s[0], A, 0, k);
                clone_into(&s->s[1], &wp->b[i + 1]);
                s->s[2].n = 0;
                append_all(&s->s[2], A, k, n);
                if (try_replace(s, i, 2, 3))
                    return true;
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
    long total = 20000 + 80L * n;
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
    for (int r = 0; r < n_start && s.evals < total; r++) {
        if (dup_of[r])
            continue;
        if (lb >= best - 1e-12 * best)
            break; /* the best plan so far meets the lower bound */
        s.budget = s.evals + (total - s.evals) / distinct--;
        const ub_plan *p = &start[order[r]];
        ub_wplan_load(&s.wp, p);
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
    char from_name[32];
    snprintf(from_name, sizeof(from_name), "%s", from);
    snprintf(out->params, sizeof(out->params), "from=%s moves=%ld evals=%ld", from_name, moves, s.evals);
    free(dup_of);
    ub_plan_free(&cand);
    for (int k = 0; k < 4; k++)
        free(s.s[k].seg);
    ub_wplan_free(&s.wp);
    for (int k = 0; k < n_start; k++)
        ub_plan_free(&start[k]);
    return 0;
}
