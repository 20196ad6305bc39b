/* The plan cursor, the completion counter values and the flush rule (see usbyte/schedule.h). */
#include <stdlib.h>
#include <string.h>

#include "usbyte/schedule.h"

void ub_sched_free(ub_sched *s)
{
    free(s->issue_at);
    free(s->last_block);
    free(s->prefix_block);
    free(s->staged);
    free(s->closes);
    memset(s, 0, sizeof *s);
}

int ub_sched_build(const ub_plan *plan, int n_calls, ub_sched *out)
{
    memset(out, 0, sizeof *out);
    if (n_calls < 1 || plan->n_blocks < 1)
        return -1;
    out->n_calls = n_calls;
    out->n_blocks = (int)plan->n_blocks;
    out->issue_at = calloc(plan->n_blocks, sizeof *out->issue_at);
    out->last_block = malloc((size_t)n_calls * sizeof *out->last_block);
    out->prefix_block = malloc((size_t)n_calls * sizeof *out->prefix_block);
    out->staged = calloc(plan->n_blocks, sizeof *out->staged);
    out->closes = calloc((size_t)n_calls, sizeof *out->closes);
    if (!out->issue_at || !out->last_block || !out->prefix_block || !out->staged || !out->closes)
        goto bad;
    for (int k = 0; k < n_calls; k++)
        out->last_block[k] = -1;
    int issue = 0;
    for (uint32_t b = 0; b < plan->n_blocks; b++) {
        const ub_block *blk = &plan->blocks[b];
        if (blk->n_segments == 0)
            goto bad;
        int largest = -1;
        uint64_t bytes = 0;
        for (uint32_t i = 0; i < blk->n_segments; i++) {
            const ub_segment *sg = &plan->segments[blk->first_segment + i];
            if (sg->call < 0 || sg->call >= n_calls)
                goto bad;
            if (sg->call > largest)
                largest = sg->call;
            out->last_block[sg->call] = (int)b;
            bytes += sg->length;
        }
        out->staged[b] = ub_segments_staged(&plan->segments[blk->first_segment], blk->n_segments, NULL);
        out->closes[largest] = true;
        if (largest > issue)
            issue = largest;
        out->issue_at[b] = issue;
        if (out->staged[b] && bytes > out->staging_bytes)
            out->staging_bytes = bytes;
    }
    int prefix = -1;
    for (int k = 0; k < n_calls; k++) {
        if (out->last_block[k] < 0)
            goto bad;
        if (out->last_block[k] > prefix)
            prefix = out->last_block[k];
        out->prefix_block[k] = prefix;
    }
    return 0;
bad:
    ub_sched_free(out);
    return -1;
}

uint64_t ub_sched_done_value(const ub_sched *s, uint64_t base, int k, bool stream_semantics)
{
    int b = stream_semantics ? s->prefix_block[k] : s->last_block[k];
    return base + (uint64_t)b + 1;
}

ub_sched_arrival ub_sched_arrive(const ub_sched *s, uint64_t base, int next, int k)
{
    int b = next;
    while (b < s->n_blocks && s->issue_at[b] <= k)
        b++;
    return (ub_sched_arrival){.stream_value = ub_sched_done_value(s, base, k, true),
                              .call_value = ub_sched_done_value(s, base, k, false),
                              .first = next,
                              .end = b};
}

ub_sched_look ub_sched_look_at(const ub_sched *s, const uint64_t *pos_sig, const int *pos_call, uint32_t pos,
                               const ub_call_sig *cs, uint64_t base, int next)
{
    ub_sched_look look = {.expected = ub_sig_portable(cs) == pos_sig[pos], .call = pos_call[pos]};
    if (look.expected && look.call >= 0)
        look.at = ub_sched_arrive(s, base, next, look.call);
    return look;
}

uint32_t ub_sched_flush_segments(const ub_plan *plan, uint32_t b, int arrived, bool *keep)
{
    const ub_block *blk = &plan->blocks[b];
    uint32_t n = 0;
    for (uint32_t i = 0; i < blk->n_segments; i++) {
        keep[i] = plan->segments[blk->first_segment + i].call < arrived;
        n += keep[i];
    }
    return n;
}
