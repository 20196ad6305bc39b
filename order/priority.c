/* Priority orders and a small heap shared by ByteScheduler and US-Byte. */
#include <stdlib.h>

#include "order_internal.h"
#include "usbyte/alloc.h"
#include "usbyte/model.h"

/* qsort is not stable, so every comparison ends on the call index: the order is total and
 * the same on every machine. */
static int by_forward_priority(const void *a, const void *b, void *ctx)
{
    const ub_profile *sort_prof = ctx;
    int x = *(const int *)a, y = *(const int *)b;
    const ub_call *cx = &sort_prof->calls[x], *cy = &sort_prof->calls[y];
    if (cx->need != cy->need)
        return cx->need < cy->need ? -1 : 1;
    return x > y ? -1 : x < y;
}

static int by_ready(const void *a, const void *b, void *ctx)
{
    const ub_profile *sort_prof = ctx;
    int x = *(const int *)a, y = *(const int *)b;
    double rx = sort_prof->calls[x].ready, ry = sort_prof->calls[y].ready;
    if (rx != ry)
        return rx < ry ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* qsort_r (glibc, _GNU_SOURCE): the profile travels as the context, so concurrent planners
 * on several communicators never share state. */
static void sorted(const ub_profile *prof, int *order, int (*cmp)(const void *, const void *, void *))
{
    for (int k = 0; k < prof->n_calls; k++)
        order[k] = k;
    qsort_r(order, (size_t)prof->n_calls, sizeof(int), cmp, (void *)prof);
}

void ub_forward_priority(const ub_profile *prof, int *order, int *rank)
{
    int *o = order ? order : ub_xrealloc(NULL, sizeof(int) * (size_t)prof->n_calls, "ordering calls by priority");
    sorted(prof, o, by_forward_priority);
    if (rank)
        for (int i = 0; i < prof->n_calls; i++)
            rank[o[i]] = i;
    if (!order)
        free(o);
}

void ub_ready_order(const ub_profile *prof, int *order) { sorted(prof, order, by_ready); }

void ub_rank_heap_push(ub_rank_heap *h, int call)
{
    int i = h->n++;
    h->items[i] = call;
    while (i > 0) {
        int p = (i - 1) / 2;
        if (h->rank[h->items[p]] <= h->rank[h->items[i]])
            break;
        int t = h->items[p];
        h->items[p] = h->items[i];
        h->items[i] = t;
        i = p;
    }
}

int ub_rank_heap_pop(ub_rank_heap *h)
{
    if (h->n == 0)
        return -1;
    int top = h->items[0];
    h->items[0] = h->items[--h->n];
    int i = 0;
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && h->rank[h->items[l]] < h->rank[h->items[m]])
            m = l;
        if (r < h->n && h->rank[h->items[r]] < h->rank[h->items[m]])
            m = r;
        if (m == i)
            break;
        int t = h->items[m];
        h->items[m] = h->items[i];
        h->items[i] = t;
        i = m;
    }
    return top;
}
