/* Merge regions: the runs of arrival order that calls marked "merge": false end.  A plan keeps
 * each block inside one region and the regions in order, so that when a merge:false call
 * arrives every block the runtime must issue for it (and for the calls before it) holds only
 * calls that have arrived: its consumer never forces a flush (docs/model.md, validity). */
#include <stdlib.h>
#include <string.h>

#include "order_internal.h"
#include "usbyte/alloc.h"

int ub_merge_regions(const ub_profile *prof, int *region)
{
    int r = 0;
    for (int k = 0; k < prof->n_calls; k++) {
        if (region)
            region[k] = r;
        if (!prof->calls[k].merge && k < prof->n_calls - 1)
            r++;
    }
    return prof->n_calls > 0 ? r + 1 : 0;
}

void ub_order_by_region(const int *region, int n_regions, int *ord, int m)
{
    if (n_regions <= 1 || m <= 1)
        return;
    int *count = ub_xcalloc((size_t)n_regions + 1, sizeof(int), "ordering calls by region");
    int *copy = ub_xrealloc(NULL, sizeof(int) * (size_t)m, "ordering calls by region");
    memcpy(copy, ord, sizeof(int) * (size_t)m);
    for (int i = 0; i < m; i++)
        count[region[copy[i]] + 1]++;
    for (int r = 0; r < n_regions; r++)
        count[r + 1] += count[r];
    for (int i = 0; i < m; i++)
        ord[count[region[copy[i]]]++] = copy[i];
    free(copy);
    free(count);
}

void ub_region_gate_init(ub_region_gate *g, const ub_profile *prof)
{
    int n = prof->n_calls;
    memset(g, 0, sizeof(*g));
    g->region = ub_xrealloc(NULL, sizeof(int) * (size_t)(n > 0 ? n : 1), "planning by region");
    g->n_regions = ub_merge_regions(prof, g->region);
    g->first = ub_xrealloc(NULL, sizeof(int) * ((size_t)g->n_regions + 1), "planning by region");
    g->left = ub_xrealloc(NULL, sizeof(int) * ((size_t)g->n_regions + 1), "planning by region");
    g->waiting = ub_xcalloc((size_t)(n > 0 ? n : 1), sizeof(bool), "planning by region");
    for (int k = n - 1; k >= 0; k--)
        g->first[g->region[k]] = k;
    g->first[g->n_regions] = n;
    ub_region_gate_reset(g);
}

void ub_region_gate_reset(ub_region_gate *g)
{
    g->open = 0;
    for (int r = 0; r < g->n_regions; r++)
        g->left[r] = g->first[r + 1] - g->first[r];
    if (g->n_regions > 1)
        memset(g->waiting, 0, sizeof(bool) * (size_t)g->first[g->n_regions]);
}

void ub_region_gate_free(ub_region_gate *g)
{
    free(g->region);
    free(g->first);
    free(g->left);
    free(g->waiting);
    memset(g, 0, sizeof(*g));
}

bool ub_region_gate_arrive(ub_region_gate *g, int c)
{
    if (g->region[c] <= g->open)
        return true;
    g->waiting[c] = true;
    return false;
}

void ub_region_gate_sent(ub_region_gate *g, int c, ub_rank_heap *heap)
{
    if (--g->left[g->region[c]] > 0 || g->region[c] != g->open)
        return;
    /* The open region is complete: open the next ones, releasing what waits there (a region
     * whose calls were all released and sent would already be complete, so stop at the first
     * one with bytes left). */
    while (g->open + 1 < g->n_regions && g->left[g->open] == 0) {
        g->open++;
        for (int k = g->first[g->open]; k < g->first[g->open + 1]; k++)
            if (g->waiting[k]) {
                g->waiting[k] = false;
                ub_rank_heap_push(heap, k);
            }
    }
}
