/* Extra start plans for `best` on layer-wise profiles (docs/policies-advanced.md): whole calls,
 * first in ready order up to a cut, then the rest by need (what the next forward waits for
 * first), grouped into consecutive blocks by an exact dynamic program for that order.
 *
 * For a fixed order the iteration is T = max(B + g + sum(forward), max over blocks of
 * e_b + W_b) (search.h).  Whether some grouping reaches T <= X is decided exactly by
 *   F[j] = min over groups [i, j] with  e + W(i..j) <= X  of  e = max(F[i-1], r(i..j)) + cost(i..j)
 * because a smaller link end never hurts what follows; the least feasible X is found by
 * bisection (to 1e-12 relative).  A group must be one dtype/op class, one merge group and,
 * when staged, within staging_max; the inner loop stops where longer groups can only be
 * later (their ready, cost and forward gate only grow). */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "order_internal.h"
#include "usbyte/alloc.h"
#include "usbyte/model.h"

/* A sequence of items (segments: call, offset, length) to cut into consecutive blocks. */
typedef struct {
    const ub_profile *prof;
    int n;
    int32_t *call;
    uint64_t *off, *len;
    const double *Fs; /* per call: sum of forward[need..] */
    const int *group; /* per call: merge group */
    double BgF;
    double *F;        /* n + 1 link ends */
    int *cut;         /* n + 1: first position of the last group */
} grouping;

static bool may_share(const grouping *g, int a, int b)
{
    const ub_call *x = &g->prof->calls[a], *y = &g->prof->calls[b];
    return x->dtype == y->dtype && x->op == y->op && g->group[a] == g->group[b];
}

/* Is there a grouping of the items with every e_b + W_b <= X?  Fills F and cut. */
static bool feasible(grouping *g, double X)
{
    const ub_profile *prof = g->prof;
    g->F[0] = 0.0;
    for (int j = 1; j <= g->n; j++) {
        int last = g->call[j - 1];
        double r = 0.0, bytes = 0.0, W = -DBL_MAX, best = DBL_MAX;
        bool staged = false;
        int best_i = -1;
        for (int i = j; i >= 1; i--) {
            int c = g->call[i - 1];
            if (c != last) {
                if (!may_share(g, c, last))
                    break;
                staged = true;
            }
            const ub_call *call = &prof->calls[c];
            if (call->ready > r)
                r = call->ready;
            bytes += (double)g->len[i - 1];
            if (g->Fs[c] > W)
                W = g->Fs[c];
            if (staged && !ub_staging_fits(prof, bytes))
                break;
            double cost = ub_block_cost(prof, bytes, staged);
            if (r + cost + W > X || r + cost >= best)
                break; /* a longer group starts no earlier and costs no less */
            if (g->F[i - 1] == DBL_MAX)
                continue;
            double e = (g->F[i - 1] > r ? g->F[i - 1] : r) + cost;
            if (e + W <= X && e < best) {
                best = e;
                best_i = i;
            }
        }
        g->F[j] = best_i < 0 ? DBL_MAX : best;
        g->cut[j] = best_i;
        if (best_i < 0)
            return false;
    }
    return true;
}

/* The items' plan under the least feasible X (bisection between lo, where nothing may be
 * feasible, and the one-block-per-item plan, which always is).  Returns the DP's work in
 * item steps of the last check (for budgets). */
static void group_exactly(grouping *g, double lo, ub_plan *out)
{
    double e = 0.0, hi = g->BgF;
    for (int j = 0; j < g->n; j++) {
        const ub_call *c = &g->prof->calls[g->call[j]];
        e = (e > c->ready ? e : c->ready) + ub_block_cost(g->prof, (double)g->len[j], 0);
        if (e + g->Fs[g->call[j]] > hi)
            hi = e + g->Fs[g->call[j]];
    }
    if (lo < g->BgF)
        lo = g->BgF;
    if (lo < hi && feasible(g, lo)) {
        hi = lo;
    } else {
        for (int it = 0; it < 64 && hi - lo > 1e-12 * hi; it++) {
            double mid = lo + (hi - lo) / 2;
            if (feasible(g, mid))
                hi = mid;
            else
                lo = mid;
        }
    }
    ub_plan_clear(out);
    if (!feasible(g, hi)) { /* cannot happen (hi was found feasible); one block per item is valid */
        for (int j = 0; j < g->n; j++) {
            ub_plan_begin_block(out);
            ub_plan_add_segment(out, g->call[j], g->off[j], g->len[j]);
        }
        return;
    }
    int *firsts = ub_xrealloc(NULL, sizeof(int) * (size_t)g->n, "planning best");
    int groups = 0;
    for (int j = g->n; j >= 1; j = g->cut[j] - 1)
        firsts[groups++] = g->cut[j];
    for (int q = groups - 1; q >= 0; q--) {
        int first = firsts[q], last = q > 0 ? firsts[q - 1] - 1 : g->n;
        ub_plan_begin_block(out);
        for (int p = first; p <= last; p++) {
            uint32_t ns = out->n_segments;
            ub_segment *prev = ns && p > first ? &out->segments[ns - 1] : NULL;
            if (prev && prev->call == g->call[p - 1] && prev->offset + prev->length == g->off[p - 1])
                prev->length += g->len[p - 1]; /* adjacent bytes of one call: one segment */
            else
                ub_plan_add_segment(out, g->call[p - 1], g->off[p - 1], g->len[p - 1]);
        }
    }
    free(firsts);
}

/* Per-call forward suffixes, merge groups and the arrays of a grouping of up to `items`. */
static void grouping_init(grouping *g, const ub_profile *prof, int items)
{
    int n = prof->n_calls, S = prof->n_forward;
    memset(g, 0, sizeof(*g));
    g->prof = prof;
    double *Fs = ub_xrealloc(NULL, sizeof(double) * ((size_t)n + (size_t)S + 1), "planning best");
    double *suffix = Fs + n;
    int *group = ub_xrealloc(NULL, sizeof(int) * (size_t)n, "planning best");
    suffix[S] = 0.0;
    for (int s = S - 1; s >= 0; s--)
        suffix[s] = suffix[s + 1] + prof->forward[s];
    for (int k = 0, grp = 0; k < n; k++) {
        Fs[k] = suffix[prof->calls[k].need];
        group[k] = grp;
        if (!prof->calls[k].merge)
            grp++;
    }
    g->Fs = Fs;
    g->group = group;
    g->BgF = prof->backward_end + prof->gap + suffix[0];
    g->call = ub_xrealloc(NULL, sizeof(int32_t) * (size_t)items, "planning best");
    g->off = ub_xrealloc(NULL, sizeof(uint64_t) * (size_t)items, "planning best");
    g->len = ub_xrealloc(NULL, sizeof(uint64_t) * (size_t)items, "planning best");
    g->F = ub_xrealloc(NULL, sizeof(double) * ((size_t)items + 1), "planning best");
    g->cut = ub_xrealloc(NULL, sizeof(int) * ((size_t)items + 1), "planning best");
}

static void grouping_free(grouping *g)
{
    free((void *)g->Fs);
    free((void *)g->group);
    free(g->call);
    free(g->off);
    free(g->len);
    free(g->F);
    free(g->cut);
}

/* Whole calls in the order ord[0..n). */
static void set_calls(grouping *g, const int *ord)
{
    g->n = g->prof->n_calls;
    for (int j = 0; j < g->n; j++) {
        g->call[j] = ord[j];
        g->off[j] = 0;
        g->len[j] = g->prof->calls[ord[j]].bytes;
    }
}

long ub_regroup_exact(const ub_profile *prof, double lower_bound, const ub_plan *in, ub_plan *out)
{
    grouping g;
    grouping_init(&g, prof, in->n_segments > 0 ? (int)in->n_segments : 1);
    g.n = (int)in->n_segments;
    for (uint32_t b = 0, j = 0; b < in->n_blocks; b++)
        for (uint32_t i = 0; i < in->blocks[b].n_segments; i++, j++) {
            const ub_segment *sg = &in->segments[in->blocks[b].first_segment + i];
            g.call[j] = sg->call;
            g.off[j] = sg->offset;
            g.len[j] = sg->length;
        }
    group_exactly(&g, lower_bound, out);
    long work = 64L * g.n;
    grouping_free(&g);
    return work;
}

/* The order of one cut: ready order up to position `cut`, then the rest by need, ties by
 * ready order. */
static void cut_order(const ub_profile *prof, const int *ready_order, int cut, int *ord)
{
    int n = prof->n_calls, m = 0;
    for (int i = 0; i < cut; i++)
        ord[m++] = ready_order[i];
    /* counting sort of the rest by need keeps their ready order inside each need */
    int S = prof->n_forward;
    int *count = ub_xcalloc((size_t)S + 1, sizeof(int), "planning best");
    for (int i = cut; i < n; i++)
        count[prof->calls[ready_order[i]].need + 1]++;
    for (int s = 0; s < S; s++)
        count[s + 1] += count[s];
    for (int i = cut; i < n; i++) {
        int c = ready_order[i];
        ord[m + count[prof->calls[c].need]++] = c;
    }
    free(count);
}

/* The order of list scheduling by forward priority: whenever the link is free it sends the
 * released call the next forward needs first (lowest need, then ready order), whole, or with
 * `batch` every released call of that need; it idles only when nothing is released.  This is
 * earliest-deadline-first for the deadlines T - sum(forward[need..]) of any target T, which
 * defers the output side's calls behind the input side's without idling the link. */
static void edf_order(const ub_profile *prof, const int *ready_order, bool batch, int *ord)
{
    int n = prof->n_calls;
    int *rank = ub_xrealloc(NULL, sizeof(int) * (size_t)n, "planning best");
    int *items = ub_xrealloc(NULL, sizeof(int) * (size_t)n, "planning best");
    /* rank: need, then position in ready order (unique, so the heap's order is total) */
    int *pos = ub_xrealloc(NULL, sizeof(int) * (size_t)n, "planning best");
    for (int i = 0; i < n; i++)
        pos[ready_order[i]] = i;
    int *by_need = ub_xrealloc(NULL, sizeof(int) * (size_t)n, "planning best");
    cut_order(prof, ready_order, 0, by_need);
    for (int i = 0; i < n; i++)
        rank[by_need[i]] = i;
    free(by_need);
    free(pos);
    ub_rank_heap heap = {.items = items, .n = 0, .rank = rank};
    double t = 0.0;
    int next = 0, m = 0;
    while (m < n) {
        while (next < n && prof->calls[ready_order[next]].ready <= t)
            ub_rank_heap_push(&heap, ready_order[next++]);
        if (heap.n == 0) {
            t = prof->calls[ready_order[next]].ready;
            continue;
        }
        int c = ub_rank_heap_pop(&heap);
        double bytes = (double)prof->calls[c].bytes;
        ord[m++] = c;
        while (batch && heap.n > 0 && prof->calls[heap.items[0]].need == prof->calls[c].need) {
            int d = ub_rank_heap_pop(&heap);
            bytes += (double)prof->calls[d].bytes;
            ord[m++] = d;
        }
        t += ub_block_cost(prof, bytes, 0);
    }
    free(rank);
    free(items);
}

int ub_ready_need_starts(const ub_profile *prof, double lower_bound, int max_plans, ub_plan *plans)
{
    int n = prof->n_calls, S = prof->n_forward;
    if (n <= 0 || S <= 1 || max_plans <= 0)
        return 0; /* barrier profiles: mgwfbp-dp is already the exact DP of ready order */
    grouping g;
    grouping_init(&g, prof, n);
    int *ready = ub_xrealloc(NULL, sizeof(int) * (size_t)n, "planning best");
    int *ord = ub_xrealloc(NULL, sizeof(int) * (size_t)n, "planning best");
    ub_ready_order(prof, ready);

    /* Cuts at 0, 1/16, ..., 1 of the calls, then every cut within 1/16 of the calls around the
     * best of those (up to 64 more); the best max_plans plans are kept, best first. */
    enum { N_CUTS = 17, N_FINE = 64 };
    int kept = 0, best_cut = 0;
    double best_t = DBL_MAX;
    ub_plan trial;
    ub_plan_init(&trial, "ready-need");
    char *tried = ub_xcalloc((size_t)n + 1, 1, "planning best");
    int step = n / (N_CUTS - 1), n_fine = 0;
    for (int q = -2; q < N_CUTS + N_FINE; q++) {
        int cut;
        if (q < 0) { /* the two list-scheduling orders first */
            edf_order(prof, ready, q == -1, ord);
            set_calls(&g, ord);
            group_exactly(&g, lower_bound, &trial);
            ub_evaluate_with_bound(prof, &trial, lower_bound, NULL);
            snprintf(trial.params, sizeof(trial.params), "edf%s", q == -1 ? " batched" : "");
            goto keep;
        }
        if (q < N_CUTS) {
            cut = (int)((long long)n * q / (N_CUTS - 1));
        } else {
            int d = (q - N_CUTS) / 2 + 1; /* best_cut - 1, + 1, - 2, + 2, ... */
            if (d > step || n_fine >= N_FINE)
                break;
            cut = (q - N_CUTS) % 2 ? best_cut + d : best_cut - d;
            if (cut < 0 || cut > n)
                continue;
            n_fine++;
        }
        if (tried[cut])
            continue;
        tried[cut] = 1;
        cut_order(prof, ready, cut, ord);
        set_calls(&g, ord);
        group_exactly(&g, lower_bound, &trial);
        ub_evaluate_with_bound(prof, &trial, lower_bound, NULL);
        snprintf(trial.params, sizeof(trial.params), "cut=%d", cut);
        if (q < N_CUTS && trial.iteration < best_t) {
            best_t = trial.iteration;
            best_cut = cut;
        }
    keep:;
        /* insertion into the kept list (ties keep the earlier one) */
        int at = kept;
        while (at > 0 && trial.iteration < plans[at - 1].iteration)
            at--;
        if (at >= max_plans)
            continue;
        if (kept < max_plans)
            kept++;
        ub_plan spare = plans[kept - 1];
        for (int p = kept - 1; p > at; p--)
            plans[p] = plans[p - 1];
        plans[at] = spare;
        ub_plan_copy(&plans[at], &trial);
    }
    free(tried);
    ub_plan_free(&trial);
    free(ready);
    free(ord);
    grouping_free(&g);
    return kept;
}
