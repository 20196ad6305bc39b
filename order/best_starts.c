/* The exact grouping of a sequence of segments into consecutive blocks, and what `best` builds
 * on it (docs/policies-advanced.md): the regrouping of every start, and extra start plans for
 * layer-wise profiles, whole calls in a family of orders (list scheduling by forward priority;
 * ready order up to a cut, then the rest by need) grouped exactly.
 *
 * For a fixed sequence the iteration is T = max(B + g + sum(forward), max over blocks of
 * e_b + W_b) (search.h).  Whether some grouping reaches T <= X is decided exactly by
 *   F[j] = min over groups [i, j] with  e + W(i..j) <= X  of  e = max(F[i-1], R(i..j)) + cost(i..j)
 * because a smaller link end never hurts what follows (feasible(), O(n log n) per X); the least
 * feasible X is bracketed upwards from the lower bound and bisected.  A group must be one
 * dtype/op class, one merge group and, when staged, within staging_max; the orders keep the
 * merge groups in order, and regrouping keeps the order it is given. */
#include <float.h>
#include <math.h>
#include <limits.h>
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
    long steps, cap;  /* inner-loop steps done, and the most allowed (planning time) */
    /* Per order (prepare()), positions 1..n: prefix bytes P, the first position of the run of
     * items that may share a block with item j (lo) and of the run of item j's call (u), and
     * sparse tables of ready-time and forward-gate maxima; per check, a growing sparse table
     * of the argmin of G(i) = F[i-1] - beta' P[i-1]. */
    int levels, items;
    double *P, *G, *rd, *wf;
    int *lo, *u, *gm;
} grouping;

#define AT(tab, k, i) ((tab)[(size_t)(k) * (size_t)(g->items + 2) + (size_t)(i)])

static int floor_log2(int x) { return 31 - __builtin_clz((unsigned)x); } /* x >= 1 */

static double range_max(const grouping *g, const double *tab, int l, int r)
{
    int k = floor_log2(r - l + 1);
    double a = AT(tab, k, l), b = AT(tab, k, r - (1 << k) + 1);
    return a > b ? a : b;
}

static int range_argmin_G(const grouping *g, int l, int r)
{
    int k = floor_log2(r - l + 1);
    int a = AT(g->gm, k, l), b = AT(g->gm, k, r - (1 << k) + 1);
    return g->G[b] < g->G[a] ? b : a;
}

static bool may_share(const grouping *g, int a, int b)
{
    const ub_call *x = &g->prof->calls[a], *y = &g->prof->calls[b];
    return x->dtype == y->dtype && x->op == y->op && g->group[a] == g->group[b];
}

/* The tables of prepare() for the items as they are now. */
static void prepare(grouping *g)
{
    const ub_profile *prof = g->prof;
    int n = g->n;
    g->P[0] = 0.0;
    for (int j = 1; j <= n; j++) {
        int c = g->call[j - 1];
        g->P[j] = g->P[j - 1] + (double)g->len[j - 1];
        AT(g->rd, 0, j) = prof->calls[c].ready;
        AT(g->wf, 0, j) = g->Fs[c];
        g->lo[j] = j > 1 && may_share(g, g->call[j - 2], c) ? g->lo[j - 1] : j;
        g->u[j] = j > 1 && g->call[j - 2] == c ? g->u[j - 1] : j;
    }
    for (int k = 1; k < g->levels; k++)
        for (int i = 1; i + (1 << k) - 1 <= n; i++) {
            int h = i + (1 << (k - 1));
            AT(g->rd, k, i) = AT(g->rd, k - 1, i) > AT(g->rd, k - 1, h) ? AT(g->rd, k - 1, i) : AT(g->rd, k - 1, h);
            AT(g->wf, k, i) = AT(g->wf, k - 1, i) > AT(g->wf, k - 1, h) ? AT(g->wf, k - 1, i) : AT(g->wf, k - 1, h);
        }
}

/* Is there a grouping of the items with every e_b + W_b <= X?  Fills F and cut.
 *
 * A group [i, j] ends at E(i, j) = max(F[i-1], R(i, j)) + cost(i, j), R the latest ready time
 * of its items.  F is non-decreasing (dropping the last item from its group never ends later
 * nor gates more), R(i, j) non-increasing in i, so the i with F[i-1] <= R(i, j) form a prefix
 * 1..i0 (binary search): there E only grows as i falls, the best is the prefix's last i.
 * Beyond i0, E = G(i) + alpha + beta' P[j]: the least G over the window (range-minimum
 * table); if that i breaks E + W <= X, so does every smaller i (W, the largest forward gate,
 * only grows with the group), and the search moves right of it.  Groups of one call's items
 * (no staging) are tried one by one: usually a single item.  O(n log n) per check. */
static bool feasible(grouping *g, double X)
{
    const ub_profile *prof = g->prof;
    double bs = prof->beta + prof->copy_beta; /* per byte in a staged block */
    /* E is computed through prefix sums, which round differently from the evaluator's sums:
     * a grouping the evaluator puts exactly at X must pass. */
    X += 1e-12 * (X > 0 ? X : -X);
    g->F[0] = 0.0;
    for (int j = 1; j <= g->n; j++) {
        /* G(j) and the argmin table entries that end at j */
        g->G[j] = g->F[j - 1] - bs * g->P[j - 1];
        AT(g->gm, 0, j) = j;
        for (int k = 1; k < g->levels && j - (1 << k) + 1 >= 1; k++) {
            int l = j - (1 << k) + 1, h = l + (1 << (k - 1));
            int a = AT(g->gm, k - 1, l), b = AT(g->gm, k - 1, h);
            AT(g->gm, k, l) = g->G[b] < g->G[a] ? b : a;
        }
        double best = DBL_MAX;
        int best_i = -1;
        g->steps += 1 + g->levels;
        for (int i = j; i >= g->u[j]; i--) { /* one call: unstaged */
            double r = range_max(g, g->rd, i, j), W = range_max(g, g->wf, i, j);
            double e = (g->F[i - 1] > r ? g->F[i - 1] : r) + ub_block_cost(prof, g->P[j] - g->P[i - 1], 0);
            g->steps++;
            if (e + W <= X && e < best) {
                best = e;
                best_i = i;
            }
        }
        int b = g->u[j] - 1, a = g->lo[j];
        if (prof->staging_max && b >= a) { /* the least i whose group fits the staging buffer */
            int lo = a, hi = b + 1;
            while (lo < hi) {
                int mid = lo + (hi - lo) / 2;
                if (ub_staging_fits(prof, g->P[j] - g->P[mid - 1]))
                    hi = mid;
                else
                    lo = mid + 1;
            }
            a = lo;
        }
        if (b >= a && prof->curve.n > 0) {
            /* A cost curve has no one per-byte slope for G: every staged group is tried. */
            for (int i = b; i >= a; i--) {
                double r = range_max(g, g->rd, i, j);
                double e = (g->F[i - 1] > r ? g->F[i - 1] : r) + ub_block_cost(prof, g->P[j] - g->P[i - 1], 1);
                g->steps++;
                if (e < best && e + range_max(g, g->wf, i, j) <= X) {
                    best = e;
                    best_i = i;
                }
            }
        } else if (b >= a) {
            int lo = 1, hi = j; /* i0: the last i with F[i-1] <= R(i, j) (true at i = 1) */
            while (lo < hi) {
                int mid = lo + (hi - lo + 1) / 2;
                if (g->F[mid - 1] <= range_max(g, g->rd, mid, j))
                    lo = mid;
                else
                    hi = mid - 1;
            }
            int i0 = lo, ib = i0 < b ? i0 : b;
            if (ib >= a) {
                double e = range_max(g, g->rd, ib, j) + ub_block_cost(prof, g->P[j] - g->P[ib - 1], 1);
                if (e + range_max(g, g->wf, ib, j) <= X && e < best) {
                    best = e;
                    best_i = ib;
                }
            }
            for (int l = i0 + 1 > a ? i0 + 1 : a; l <= b;) {
                int m = range_argmin_G(g, l, b);
                double e = g->G[m] + prof->alpha + bs * g->P[j];
                g->steps++;
                if (e >= best)
                    break;
                if (e + range_max(g, g->wf, m, j) <= X) {
                    best = e;
                    best_i = m;
                    break;
                }
                l = m + 1;
            }
        }
        g->F[j] = best_i < 0 ? DBL_MAX : best;
        g->cut[j] = best_i;
        if (best_i < 0 || g->steps > g->cap)
            return false;
    }
    return true;
}

/* The items' plan under the least feasible X up to hi, to 1e-7 relative (the search refines
 * what is left).  The search brackets X from the bound upwards
 * (lo (1 + 2^k / 1024)), because a check at a large X lets groups grow long and costs
 * O(n^2), then bisects.  Returns false, with nothing written, when no grouping reaches hi or
 * the work cap ran out first. */
static bool group_exactly(grouping *g, double lo, double hi, ub_plan *out)
{
    if (lo < g->BgF)
        lo = g->BgF;
    if (lo > hi)
        lo = hi;
    bool found = false;
    for (int k = 0; !found && g->steps <= g->cap; k++) {
        double x = lo * (1.0 + ldexp(1.0, k) / 1024.0);
        if (k == 0)
            x = lo;
        if (!(x < hi))
            break;
        if (feasible(g, x)) {
            hi = x;
            found = true;
        } else {
            lo = x;
        }
    }
    if (!found && !feasible(g, hi))
        return false; /* no grouping of this order is as good as hi */
    for (int it = 0; it < 64 && hi - lo > 1e-9 * hi && g->steps <= g->cap; it++) {
        double mid = lo + (hi - lo) / 2;
        if (feasible(g, mid))
            hi = mid;
        else
            lo = mid;
    }
    if (g->steps > g->cap)
        return false;
    long cap = g->cap;
    g->cap = LONG_MAX; /* the last pass rebuilds the cuts of hi */
    bool ok = feasible(g, hi);
    g->cap = cap;
    if (!ok)
        return false; /* cannot happen: hi is feasible */
    ub_plan_clear(out);
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
    return true;
}

/* The iteration of one block per item, in order: a feasible X for group_exactly. */
static double singletons(const grouping *g)
{
    double e = 0.0, T = g->BgF;
    for (int j = 0; j < g->n; j++) {
        const ub_call *c = &g->prof->calls[g->call[j]];
        e = (e > c->ready ? e : c->ready) + ub_block_cost(g->prof, (double)g->len[j], 0);
        if (e + g->Fs[g->call[j]] > T)
            T = e + g->Fs[g->call[j]];
    }
    return T;
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
    g->items = items;
    g->levels = floor_log2(items) + 1;
    size_t cells = (size_t)g->levels * ((size_t)items + 2);
    g->P = ub_xrealloc(NULL, sizeof(double) * ((size_t)items + 1), "planning best");
    g->G = ub_xrealloc(NULL, sizeof(double) * ((size_t)items + 2), "planning best");
    g->rd = ub_xrealloc(NULL, sizeof(double) * cells, "planning best");
    g->wf = ub_xrealloc(NULL, sizeof(double) * cells, "planning best");
    g->gm = ub_xrealloc(NULL, sizeof(int) * cells, "planning best");
    g->lo = ub_xrealloc(NULL, sizeof(int) * ((size_t)items + 1), "planning best");
    g->u = ub_xrealloc(NULL, sizeof(int) * ((size_t)items + 1), "planning best");
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
    free(g->P);
    free(g->G);
    free(g->rd);
    free(g->wf);
    free(g->gm);
    free(g->lo);
    free(g->u);
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
    prepare(g);
}

long ub_regroup_exact(const ub_profile *prof, double lower_bound, long cap, const ub_plan *in, ub_plan *out)
{
    grouping g;
    grouping_init(&g, prof, in->n_segments > 0 ? (int)in->n_segments : 1);
    g.n = (int)in->n_segments;
    g.cap = cap;
    for (uint32_t b = 0, j = 0; b < in->n_blocks; b++)
        for (uint32_t i = 0; i < in->blocks[b].n_segments; i++, j++) {
            const ub_segment *sg = &in->segments[in->blocks[b].first_segment + i];
            g.call[j] = sg->call;
            g.off[j] = sg->offset;
            g.len[j] = sg->length;
        }
    prepare(&g);
    /* in's own grouping is feasible at its iteration */
    double hi = ub_evaluate_const(prof, in, NULL);
    bool ok = group_exactly(&g, lower_bound, hi, out);
    long steps = g.steps;
    grouping_free(&g);
    return ok ? steps : -steps - 1;
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

int ub_ready_need_starts(const ub_profile *prof, double lower_bound, double limit, long cap, int max_plans,
                         ub_plan *plans)
{
    int n = prof->n_calls, S = prof->n_forward;
    if (n <= 0 || S <= 1 || max_plans <= 0)
        return 0; /* barrier profiles: mgwfbp-dp is already the exact DP of ready order */
    grouping g;
    grouping_init(&g, prof, n);
    g.cap = cap;
    int *ready = ub_xrealloc(NULL, sizeof(int) * (size_t)n, "planning best");
    int *ord = ub_xrealloc(NULL, sizeof(int) * (size_t)n, "planning best");
    ub_ready_order(prof, ready);
    /* Every order keeps the merge regions in order (a valid plan does), each region's calls in
     * the order's own sequence. */
    int n_regions = ub_merge_regions(prof, NULL);

    /* The two list-scheduling orders; cuts at 0, 1/8, ..., 1 of the calls; then around the
     * best cut at half the step, a quarter, ... down to one call (a pattern search over the
     * cut, about 2 log2(n) more orders).  The best max_plans plans are kept, best first. */
    enum { N_COARSE = 9 };
    int kept = 0, best_cut = 0;
    double best_t = DBL_MAX;
    ub_plan trial;
    ub_plan_init(&trial, "ready-need");
    char *tried = ub_xcalloc((size_t)n + 1, 1, "planning best");
    int step = n / (N_COARSE - 1), probe = 0;
    for (int q = -2; g.steps <= g.cap; q++) {
        int cut;
        if (q < 0) { /* the two list-scheduling orders first */
            edf_order(prof, ready, q == -1, ord);
            ub_order_by_region(g.group, n_regions, ord, n);
            set_calls(&g, ord);
            double hi = singletons(&g);
            if (!group_exactly(&g, lower_bound, hi < limit ? hi : limit, &trial))
                continue;
            ub_evaluate_with_bound(prof, &trial, lower_bound, NULL);
            snprintf(trial.params, sizeof(trial.params), "edf%s", q == -1 ? " batched" : "");
            goto keep;
        }
        if (q < N_COARSE) {
            cut = (int)((long long)n * q / (N_COARSE - 1));
        } else {
            if (probe % 2 == 0) {
                step /= 2;
                if (step < 1)
                    break;
            }
            cut = probe++ % 2 ? best_cut + step : best_cut - step;
            if (cut < 0 || cut > n)
                continue;
        }
        if (tried[cut])
            continue;
        tried[cut] = 1;
        cut_order(prof, ready, cut, ord);
        ub_order_by_region(g.group, n_regions, ord, n);
        set_calls(&g, ord);
        double hi = singletons(&g);
        if (!group_exactly(&g, lower_bound, hi < limit ? hi : limit, &trial))
            continue; /* not better than limit, or out of work */
        ub_evaluate_with_bound(prof, &trial, lower_bound, NULL);
        snprintf(trial.params, sizeof(trial.params), "cut=%d", cut);
        if (trial.iteration < best_t) {
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
