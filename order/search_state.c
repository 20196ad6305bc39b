/* The working plan of the `best` search (see search.h). */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"
#include "usbyte/alloc.h"
#include "usbyte/model.h"

/* Every array of the search grows the same way; running out of memory aborts (usbyte/alloc.h). */
static void *xrealloc(void *p, size_t n) { return ub_xrealloc(p, n, "in the plan search"); }

void ub_wplan_init(ub_wplan *wp, const ub_profile *prof)
{
    memset(wp, 0, sizeof(*wp));
    wp->prof = prof;
    int n = prof->n_calls, S = prof->n_forward;
    wp->Fs = xrealloc(NULL, sizeof(double) * (size_t)n);
    wp->group = xrealloc(NULL, sizeof(int) * (size_t)n);
    double *suffix = xrealloc(NULL, sizeof(double) * (size_t)(S + 1));
    suffix[S] = 0.0;
    for (int s = S - 1; s >= 0; s--)
        suffix[s] = suffix[s + 1] + prof->forward[s];
    wp->BgF = prof->backward_end + prof->gap + suffix[0];
    int g = 0;
    for (int k = 0; k < n; k++) {
        wp->Fs[k] = suffix[prof->calls[k].need];
        wp->group[k] = g;
        if (!prof->calls[k].merge)
            g++;
    }
    wp->ordered = n > 0 && wp->group[n - 1] > 0;
    free(suffix);
}

void ub_wplan_free(ub_wplan *wp)
{
    for (int i = 0; i < wp->cap; i++)
        free(wp->b[i].seg);
    free(wp->b);
    free(wp->Fs);
    free(wp->group);
    free(wp->e);
    free(wp->slack);
    free(wp->suffix_slack);
    memset(wp, 0, sizeof(*wp));
}

static void reserve_blocks(ub_wplan *wp, int need)
{
    if (need <= wp->cap)
        return;
    int c = (int)ub_grown_cap((uint32_t)wp->cap, (uint32_t)need, 16);
    wp->b = xrealloc(wp->b, sizeof(ub_wblock) * (size_t)c);
    memset(wp->b + wp->cap, 0, sizeof(ub_wblock) * (size_t)(c - wp->cap));
    wp->e = xrealloc(wp->e, sizeof(double) * (size_t)c);
    wp->slack = xrealloc(wp->slack, sizeof(double) * (size_t)c);
    wp->suffix_slack = xrealloc(wp->suffix_slack, sizeof(double) * (size_t)c);
    wp->cap = c;
}

void ub_wplan_load(ub_wplan *wp, const ub_plan *plan)
{
    reserve_blocks(wp, (int)plan->n_blocks);
    for (uint32_t i = 0; i < plan->n_blocks; i++) {
        ub_wblock *w = &wp->b[i];
        w->n = 0;
        const ub_block *blk = &plan->blocks[i];
        for (uint32_t j = 0; j < blk->n_segments; j++) {
            const ub_segment *s = &plan->segments[blk->first_segment + j];
            ub_wblock_push(w, s->call, s->offset, s->length);
        }
        ub_wblock_attrs(wp, w);
    }
    wp->nb = (int)plan->n_blocks;
    ub_wplan_timeline(wp);
}

static int by_offset(const void *a, const void *b)
{
    uint64_t x = ((const ub_segment *)a)->offset, y = ((const ub_segment *)b)->offset;
    return (x > y) - (x < y);
}

/* The search judges a block of one call's pieces as one allreduce in place, which it is only
 * when the pieces touch (docs/model.md, rule 2): pieces with gaps between them go out as one
 * block per contiguous range, back to back, never through staging (the stored plan is
 * evaluated again, so its time is the true one). */
void ub_wplan_store(const ub_wplan *wp, ub_plan *plan)
{
    ub_plan_clear(plan);
    for (int i = 0; i < wp->nb; i++) {
        const ub_wblock *w = &wp->b[i];
        bool one_call = true;
        for (uint32_t j = 1; j < w->n; j++)
            one_call &= w->seg[j].call == w->seg[0].call;
        if (!one_call || !ub_segments_staged(w->seg, w->n, NULL)) {
            ub_plan_begin_block(plan);
            for (uint32_t j = 0; j < w->n; j++)
                ub_plan_add_segment(plan, w->seg[j].call, w->seg[j].offset, w->seg[j].length);
            continue;
        }
        ub_segment *sorted = ub_xcalloc(w->n, sizeof *sorted, "in the plan search");
        memcpy(sorted, w->seg, sizeof *sorted * w->n);
        qsort(sorted, w->n, sizeof *sorted, by_offset);
        for (uint32_t j = 0; j < w->n; j++) {
            if (j == 0 || sorted[j].offset != sorted[j - 1].offset + sorted[j - 1].length)
                ub_plan_begin_block(plan);
            ub_plan_add_segment(plan, sorted[j].call, sorted[j].offset, sorted[j].length);
        }
        free(sorted);
    }
}

void ub_wplan_timeline(ub_wplan *wp)
{
    double link = 0.0, T = wp->BgF;
    for (int i = 0; i < wp->nb; i++) {
        const ub_wblock *w = &wp->b[i];
        wp->slack[i] = w->r - link;
        link = (w->r > link ? w->r : link) + w->cost;
        wp->e[i] = link;
        if (link + w->W > T)
            T = link + w->W;
    }
    wp->T = T;
    /* Moves must win by more than rounding noise, or the search could chase the last bit. */
    wp->thr = T - 1e-12 * (T > 0 ? T : -T);
    wp->first_crit = wp->last_crit = -1;
    for (int i = 0; i < wp->nb; i++)
        if (wp->e[i] + wp->b[i].W >= wp->thr) {
            if (wp->first_crit < 0)
                wp->first_crit = i;
            wp->last_crit = i;
        }
    wp->busy_start = 0;
    for (int i = wp->first_crit; i >= 0; i--)
        if (wp->slack[i] >= 0) {
            wp->busy_start = i;
            break;
        }
    /* suffix_slack[i]: the largest slack over [i, last_crit]. */
    double m = -DBL_MAX;
    for (int i = wp->last_crit; i >= 0; i--) {
        if (wp->slack[i] > m)
            m = wp->slack[i];
        wp->suffix_slack[i] = m;
    }
}

void ub_wplan_replace(ub_wplan *wp, int i, int n_old, ub_wblock *fresh, int n_new)
{
    /* Slots [nb, cap) hold spare blocks whose segment arrays are reused; every array is owned
     * by exactly one slot of wp->b or of fresh at any time. */
    reserve_blocks(wp, wp->nb - n_old + n_new);
    ub_wblock old[4], spare[4];
    memcpy(old, &wp->b[i], sizeof(ub_wblock) * (size_t)n_old);
    int tail = wp->nb - (i + n_old);
    int grow = n_new - n_old;
    if (grow > 0)
        memcpy(spare, &wp->b[wp->nb], sizeof(ub_wblock) * (size_t)grow);
    if (grow != 0)
        memmove(&wp->b[i + n_new], &wp->b[i + n_old], sizeof(ub_wblock) * (size_t)tail);
    if (grow < 0) /* fresh's unused entries become the spares freed at the end */
        memcpy(&wp->b[wp->nb + grow], &fresh[n_new], sizeof(ub_wblock) * (size_t)(-grow));
    memcpy(&wp->b[i], fresh, sizeof(ub_wblock) * (size_t)n_new);
    memcpy(fresh, old, sizeof(ub_wblock) * (size_t)n_old);
    if (grow > 0)
        memcpy(&fresh[n_old], spare, sizeof(ub_wblock) * (size_t)grow);
    wp->nb += grow;
}

void ub_wplan_rotate(ub_wplan *wp, int from, int to)
{
    ub_wblock moving = wp->b[from];
    if (from < to)
        memmove(&wp->b[from], &wp->b[from + 1], sizeof(ub_wblock) * (size_t)(to - from));
    else if (to < from)
        memmove(&wp->b[to + 1], &wp->b[to], sizeof(ub_wblock) * (size_t)(from - to));
    wp->b[to] = moving;
}

void ub_wplan_exchange(ub_wplan *wp, int pos, ub_wblock *w)
{
    ub_wblock t = wp->b[pos];
    wp->b[pos] = *w;
    *w = t;
}

bool ub_wplan_in_order(const ub_wplan *wp, int i, int n_old, const ub_wblock *const *fresh, int n_new)
{
    if (!wp->ordered)
        return true;
    int g = i > 0 ? wp->group[wp->b[i - 1].call0] : 0;
    for (int k = 0; k < n_new; k++) {
        if (fresh[k]->call0 < 0 || wp->group[fresh[k]->call0] < g)
            return false;
        g = wp->group[fresh[k]->call0];
    }
    return i + n_old >= wp->nb || wp->group[wp->b[i + n_old].call0] >= g;
}

bool ub_wplan_improves(const ub_wplan *wp, int i, int n_old, const ub_wblock *const *fresh, int n_new)
{
    if (wp->BgF >= wp->thr)
        return false; /* compute-bound: nothing the link does can help */
    if (!ub_wplan_in_order(wp, i, n_old, fresh, n_new))
        return false;
    double thr = wp->thr;
    if (i > 0 && i > wp->first_crit && wp->first_crit >= 0)
        return false; /* a critical block before the move keeps T */
    if (i + n_old - 1 < wp->busy_start)
        return false; /* first_crit still starts its busy period at the same ready time */
    double e = i > 0 ? wp->e[i - 1] : 0.0;
    for (int k = 0; k < n_new; k++) {
        const ub_wblock *w = fresh[k];
        if (!w->valid)
            return false;
        e = (w->r > e ? w->r : e) + w->cost;
        if (e + w->W >= thr)
            return false;
    }
    int j = i + n_old - 1; /* last replaced block */
    if (j == wp->nb - 1)
        return true;
    double delta = e - wp->e[j];
    if (delta > 0) {
        if (wp->last_crit > j)
            return false; /* a later critical block can only move later */
        /* Walk until the idle time absorbs the delay; bounded, then a safe bound. */
        double d = delta;
        for (int b = j + 1, steps = 0; b < wp->nb && d > 0; b++, steps++) {
            if (steps == 64) {
                double m = -DBL_MAX;
                for (int q = b; q < wp->nb; q++)
                    if (wp->e[q] + wp->b[q].W > m)
                        m = wp->e[q] + wp->b[q].W;
                return m + d < thr;
            }
            if (wp->slack[b] > 0)
                d = d > wp->slack[b] ? d - wp->slack[b] : 0.0;
            if (wp->e[b] + d + wp->b[b].W >= thr)
                return false;
        }
        return true;
    }
    if (wp->last_crit <= j)
        return true; /* everything after only moves earlier, and nothing there is critical */
    /* The last critical block gains min(-delta, the tightest non-idle margin before it), and
     * nothing if the link idles in between (it then waits for a ready time as before). */
    double s = wp->suffix_slack[j + 1];
    if (s >= 0)
        return false;
    double d = delta > s ? delta : s;
    return wp->T + d < thr; /* every critical block gains at least -d, and none exceeds T */
}
