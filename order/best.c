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

typedef struct {
    ub_wplan wp;
    ub_wblock s[4]; /* scratch blocks; their segment arrays are recycled */
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

/* Bytes of the tail of `seg` to cut so that about `want` bytes move, aligned so that the cut
 * offset is a whole element; 0 when no proper cut exists. */
static uint64_t aligned_tail(const ub_profile *prof, const ub_segment *seg, double want)
{
    if (want <= 0 || want >= (double)seg->length)
        return 0;
    uint64_t z = ub_dtype_size(prof->calls[seg->call].dtype);
    uint64_t cut = seg->offset + seg->length - (uint64_t)want;
    cut -= cut % z;
    if (cut <= seg->offset || cut >= seg->offset + seg->length)
        return 0;
    return seg->offset + seg->length - cut;
}

static uint64_t aligned_head(const ub_profile *prof, const ub_segment *seg, double want)
{
    if (want <= 0 || want >= (double)seg->length)
        return 0;
    uint64_t z = ub_dtype_size(prof->calls[seg->call].dtype);
    uint64_t cut = seg->offset + (uint64_t)want;
    cut -= cut % z;
    if (cut <= seg->offset || cut >= seg->offset + seg->length)
        return 0;
    return cut - seg->offset;
}

/* Judges the move staged in s->s[0..n_new) over blocks [i, i+n_old); applies it when it wins. */
static bool try_move(search *s, int i, int n_old, int n_new)
{
    ub_wplan *wp = &s->wp;
    s->evals++;
    for (int k = 0; k < n_new; k++) {
        ub_wblock_attrs(wp, &s->s[k]);
        if (!s->s[k].valid)
            return false;
    }
    if (!ub_wplan_improves(wp, i, n_old, s->s, n_new))
        return false;
    double thr = wp->thr;
    ub_wplan_replace(wp, i, n_old, s->s, n_new);
    ub_wplan_timeline(wp);
    s->evals += wp->nb / 32; /* the full timeline is part of the work */
    if (wp->T < thr) {
        s->moves++;
        return true;
    }
    ub_wplan_replace(wp, i, n_new, s->s, n_old); /* rounding fooled the incremental test */
    ub_wplan_timeline(wp);
    return false;
}

static const double fractions[] = {0.25, 0.5, 0.75};

/* Every move at the boundary after block i; true when one was applied. */
static bool improve_at(search *s, int i)
{
    ub_wplan *wp = &s->wp;
    const ub_profile *prof = wp->prof;
    bool has_next = i + 1 < wp->nb;
    const ub_wblock *A = &wp->b[i];

    if (has_next) {
        const ub_wblock *B = &wp->b[i + 1];
        /* merge */
        s->s[0].n = 0;
        clone_into(&s->s[0], A);
        append_all(&s->s[0], B, 0, B->n);
        if (try_move(s, i, 2, 1))
            return true;
        A = &wp->b[i];
        B = &wp->b[i + 1];
        /* swap */
        clone_into(&s->s[0], B);
        clone_into(&s->s[1], A);
        if (try_move(s, i, 2, 2))
            return true;
        A = &wp->b[i];
        B = &wp->b[i + 1];
        /* a whole segment across the boundary */
        if (A->n > 1) {
            s->s[0].n = 0;
            append_all(&s->s[0], A, 0, A->n - 1);
            clone_into(&s->s[1], B);
            append_all(&s->s[1], A, A->n - 1, A->n);
            if (try_move(s, i, 2, 2))
                return true;
            A = &wp->b[i];
            B = &wp->b[i + 1];
        }
        if (B->n > 1) {
            clone_into(&s->s[0], A);
            append_all(&s->s[0], B, 0, 1);
            s->s[1].n = 0;
            append_all(&s->s[1], B, 1, B->n);
            if (try_move(s, i, 2, 2))
                return true;
            A = &wp->b[i];
            B = &wp->b[i + 1];
        }
    }

    /* Cuts of A's last segment.  The targeted cut makes A end when the next block is ready. */
    double wants[4];
    int n_wants = 0;
    const ub_segment last = A->seg[A->n - 1];
    if (has_next) {
        double start = i > 0 ? wp->e[i - 1] : 0.0;
        if (A->r > start)
            start = A->r;
        double per_byte = prof->beta + (A->staged ? prof->copy_beta : 0.0);
        if (per_byte > 0)
            wants[n_wants++] = (start + A->cost - wp->b[i + 1].r) / per_byte;
    }
    for (size_t f = 0; f < sizeof(fractions) / sizeof(fractions[0]); f++)
        wants[n_wants++] = fractions[f] * (double)last.length;
    for (int w = 0; w < n_wants; w++) {
        A = &wp->b[i];
        uint64_t x = aligned_tail(prof, &last, wants[w]);
        if (!x)
            continue;
        /* head part stays in A */
        clone_into(&s->s[0], A);
        s->s[0].seg[s->s[0].n - 1].length -= x;
        if (has_next) {
            const ub_wblock *B = &wp->b[i + 1];
            /* the tail after the next block */
            clone_into(&s->s[1], B);
            s->s[2].n = 0;
            ub_wblock_push(&s->s[2], last.call, last.offset + last.length - x, x);
            if (try_move(s, i, 2, 3))
                return true;
            /* the tail inside the next block */
            clone_into(&s->s[0], &wp->b[i]);
            s->s[0].seg[s->s[0].n - 1].length -= x;
            clone_into(&s->s[1], &wp->b[i + 1]);
            ub_wblock_push(&s->s[1], last.call, last.offset + last.length - x, x);
            if (try_move(s, i, 2, 2))
                return true;
            clone_into(&s->s[0], &wp->b[i]);
            s->s[0].seg[s->s[0].n - 1].length -= x;
        }
        /* the tail as its own block right after */
        s->s[1].n = 0;
        ub_wblock_push(&s->s[1], last.call, last.offset + last.length - x, x);
        if (try_move(s, i, 1, 2))
            return true;
    }

    /* The head of the next block's first segment moves back into A. */
    if (has_next) {
        const ub_segment first = wp->b[i + 1].seg[0];
        for (size_t f = 0; f < sizeof(fractions) / sizeof(fractions[0]); f++) {
            uint64_t x = aligned_head(prof, &first, fractions[f] * (double)first.length);
            if (!x)
                continue;
            clone_into(&s->s[0], &wp->b[i]);
            ub_wblock_push(&s->s[0], first.call, first.offset, x);
            clone_into(&s->s[1], &wp->b[i + 1]);
            s->s[1].seg[0].offset += x;
            s->s[1].seg[0].length -= x;
            if (try_move(s, i, 2, 2))
                return true;
        }
    }

    /* Splits of a block of several segments at up to 8 boundaries, alone or around B. */
    A = &wp->b[i];
    if (A->n > 1) {
        uint32_t n = A->n, steps = n - 1 < 8 ? n - 1 : 8;
        for (uint32_t q = 1; q <= steps; q++) {
            uint32_t k = (uint32_t)((uint64_t)q * n / (steps + 1));
            if (k == 0 || k >= n)
                continue;
            A = &wp->b[i];
            s->s[0].n = 0;
            append_all(&s->s[0], A, 0, k);
            s->s[1].n = 0;
            append_all(&s->s[1], A, k, n);
            if (try_move(s, i, 1, 2))
                return true;
            if (i + 1 < wp->nb) {
                A = &wp->b[i];
                s->s[0].n = 0;
                append_all(&s->s[0], A, 0, k);
                clone_into(&s->s[1], &wp->b[i + 1]);
                s->s[2].n = 0;
                append_all(&s->s[2], A, k, n);
                if (try_move(s, i, 2, 3))
                    return true;
            }
        }
    }
    return false;
}

/* First-improvement descent: sweep the boundaries up to the first critical block (a move
 * later cannot lower T), step back one after each applied move. */
static void descend(search *s)
{
    ub_wplan *wp = &s->wp;
    bool improved = true;
    while (improved && s->evals < s->budget) {
        improved = false;
        int i = 0;
        while (i < wp->nb && s->evals < s->budget) {
            if (wp->first_crit >= 0 && i > wp->first_crit)
                break;
            if (improve_at(s, i)) {
                improved = true;
                i = i > 0 ? i - 1 : 0;
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
    s.budget = 20000 + 150L * n;
    ub_plan cand;
    ub_plan_init(&cand, "best");
    ub_plan_copy(out, &start[order[0]]);
    double best = ub_evaluate_const(prof, out, NULL);
    const char *from = start[order[0]].policy;
    long moves = 0;
    for (int r = 0; r < n_start && s.evals < s.budget; r++) {
        const ub_plan *p = &start[order[r]];
        bool dup = false;
        for (int q = 0; q < r && !dup; q++)
            dup = same_plan(p, &start[order[q]]);
        if (dup)
            continue;
        ub_wplan_load(&s.wp, p);
        long before = s.moves;
        descend(&s);
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
    ub_plan_free(&cand);
    for (int k = 0; k < 4; k++)
        free(s.s[k].seg);
    ub_wplan_free(&s.wp);
    for (int k = 0; k < n_start; k++)
        ub_plan_free(&start[k]);
    return 0;
}
