/* The plan container: growable flat arrays of blocks and segments. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "usbyte/alloc.h"
#include "usbyte/plan.h"

static void *grow(void *p, uint32_t *cap, uint32_t need, size_t elem)
{
    if (need <= *cap)
        return p;
    uint32_t c = ub_grown_cap(*cap, need, 16);
    p = ub_xrealloc(p, (size_t)c * elem, "growing a plan to %u entries", need);
    *cap = c;
    return p;
}

void ub_plan_init(ub_plan *plan, const char *policy)
{
    memset(plan, 0, sizeof(*plan));
    snprintf(plan->policy, sizeof(plan->policy), "%s", policy ? policy : "");
}

void ub_plan_free(ub_plan *plan)
{
    free(plan->segments);
    free(plan->blocks);
    memset(plan, 0, sizeof(*plan));
}

void ub_plan_clear(ub_plan *plan)
{
    plan->n_segments = 0;
    plan->n_blocks = 0;
    plan->iteration = plan->lower_bound = plan->plan_seconds = 0;
    plan->optimal = false;
    plan->params[0] = '\0';
}

void ub_plan_copy(ub_plan *dst, const ub_plan *src)
{
    if (dst == src)
        return;
    dst->segments = grow(dst->segments, &dst->cap_segments, src->n_segments, sizeof(ub_segment));
    dst->blocks = grow(dst->blocks, &dst->cap_blocks, src->n_blocks, sizeof(ub_block));
    if (src->n_segments)
        memcpy(dst->segments, src->segments, src->n_segments * sizeof(ub_segment));
    if (src->n_blocks)
        memcpy(dst->blocks, src->blocks, src->n_blocks * sizeof(ub_block));
    dst->n_segments = src->n_segments;
    dst->n_blocks = src->n_blocks;
    memcpy(dst->policy, src->policy, sizeof(dst->policy));
    memcpy(dst->params, src->params, sizeof(dst->params));
    dst->iteration = src->iteration;
    dst->lower_bound = src->lower_bound;
    dst->optimal = src->optimal;
    dst->plan_seconds = src->plan_seconds;
}

bool ub_plan_same_blocks(const ub_plan *a, const ub_plan *b)
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

void ub_plan_begin_block(ub_plan *plan)
{
    plan->blocks = grow(plan->blocks, &plan->cap_blocks, plan->n_blocks + 1, sizeof(ub_block));
    plan->blocks[plan->n_blocks++] = (ub_block){.first_segment = plan->n_segments};
}

void ub_plan_add_segment(ub_plan *plan, int32_t call, uint64_t offset, uint64_t length)
{
    plan->segments = grow(plan->segments, &plan->cap_segments, plan->n_segments + 1, sizeof(ub_segment));
    plan->segments[plan->n_segments++] = (ub_segment){.call = call, .offset = offset, .length = length};
    plan->blocks[plan->n_blocks - 1].n_segments++;
}

bool ub_segments_staged(const ub_segment *seg, uint32_t n, const bool *keep)
{
    int32_t call = -1;
    uint64_t lo = UINT64_MAX, hi = 0, total = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (keep && !keep[i])
            continue;
        if (call >= 0 && seg[i].call != call)
            return true;
        call = seg[i].call;
        if (seg[i].offset < lo)
            lo = seg[i].offset;
        if (seg[i].offset + seg[i].length > hi)
            hi = seg[i].offset + seg[i].length;
        total += seg[i].length;
    }
    return call >= 0 && hi - lo != total;
}
