/* `horovod`: Horovod's tensor fusion, as a reference.
 *
 * Horovod's background thread runs a cycle every HOROVOD_CYCLE_TIME (1 ms by default since
 * 0.21).  Each cycle takes the tensors that every rank has submitted and that are not yet sent,
 * in submission order, and fuses them (Controller::FuseResponses in horovod/common/controller.cc):
 * the first tensor opens a fused buffer; each following one of the same dtype and op joins it
 * when the buffer plus the tensor stays within HOROVOD_FUSION_THRESHOLD (128 MiB by default),
 * otherwise it is skipped and the look-ahead goes on while the buffer plus everything skipped
 * stays within the threshold; what was skipped opens the next buffers of the same cycle.  With
 * batched device copies (the default on GPUs) every tensor counts rounded up to 16 bytes.  A
 * tensor alone is never split, whatever its size.  Each fused buffer is one allreduce, issued in
 * that order.
 *
 * A plan is static, so the policy is simulated on the profile: cycles at 0, cycle, 2 cycle, ...
 * (time 0 is the profile's), a call is submitted at its ready time, and the resulting buffers,
 * in order, are the plan's blocks.  Where it must depart from Horovod to stay valid (docs/model.md):
 *   - a buffer never extends past a call marked "merge": false, and a call after such a call
 *     is not taken into a cycle before it (something waits for that call before later ones
 *     arrive);
 *   - a buffer of several calls stays within staging_max (the tensor that would exceed it is
 *     skipped, as one that exceeds the threshold is).
 * The model starts a block once its calls are ready and the link is free, not at the next
 * cycle: the wait for the cycle is not charged (docs/planner.md). */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "order_internal.h"
#include "usbyte/alloc.h"
#include "usbyte/model.h"
#include "usbyte/policy.h"
#include "usbyte/reference.h"

/* BATCHED_D2D_PADDING in Horovod: each tensor's share of the fused buffer is rounded up to it. */
#define PAD 16u

static uint64_t padded(uint64_t bytes)
{
    return bytes > UINT64_MAX - (PAD - 1) ? UINT64_MAX : (bytes + PAD - 1) / PAD * PAD;
}

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

/* The first cycle at or after r. */
static double cycle_at(double r, double cycle)
{
    if (cycle <= 0.0 || r <= 0.0)
        return r > 0.0 ? r : 0.0;
    double c = floor(r / cycle), t = c * cycle;
    if (t < r)
        t = (c + 1.0) * cycle;
    return t < r ? r : t; /* a cycle too small to move r at this magnitude */
}

/* The fused buffers of one cycle's queue q[0..m) (calls in arrival order), appended to out. */
static void fuse(const ub_profile *prof, const int *barrier_before, const int *q, int m, bool *taken,
                 uint64_t threshold, ub_plan *out)
{
    for (int h = 0; h < m; h++)
        taken[h] = false;
    for (int h = 0; h < m; h++) {
        if (taken[h])
            continue;
        int f = q[h];
        const ub_call *first = &prof->calls[f];
        taken[h] = true;
        ub_plan_begin_block(out);
        ub_plan_add_segment(out, f, 0, first->bytes);
        uint64_t size = padded(first->bytes), skipped = 0;
        double total = (double)first->bytes;
        for (int x = h + 1; x < m; x++) {
            if (taken[x])
                continue;
            int j = q[x];
            const ub_call *c = &prof->calls[j];
            if (barrier_before[j] != barrier_before[f])
                break;
            uint64_t s = padded(c->bytes);
            if (c->dtype == first->dtype && c->op == first->op && sat_add(size, s) <= threshold &&
                ub_staging_fits(prof, total + (double)c->bytes)) {
                ub_plan_add_segment(out, j, 0, c->bytes);
                size += s;
                total += (double)c->bytes;
                taken[x] = true;
                continue;
            }
            skipped = sat_add(skipped, s);
            if (sat_add(size, skipped) > threshold)
                break;
        }
    }
}

int ub_horovod_plan(const ub_profile *prof, double cycle, uint64_t threshold, ub_plan *out)
{
    int n = prof->n_calls;
    if (n <= 0 || !(cycle >= 0.0) || !isfinite(cycle))
        return -1;
    ub_plan_clear(out);
    size_t sz = (size_t)n;
    /* barrier_before[k]: merge:false calls among 0..k-1 (a buffer spans no change of it). */
    int *barrier_before = ub_xrealloc(NULL, sizeof(int) * (sz + 1), "planning horovod");
    int *barriers = ub_xrealloc(NULL, sizeof(int) * sz, "planning horovod");
    int *by_ready = ub_xrealloc(NULL, sizeof(int) * sz, "planning horovod");
    int *index = ub_xrealloc(NULL, sizeof(int) * sz, "planning horovod");
    int *items = ub_xrealloc(NULL, sizeof(int) * sz, "planning horovod");
    int *q = ub_xrealloc(NULL, sizeof(int) * sz, "planning horovod");
    bool *taken = ub_xrealloc(NULL, sizeof(bool) * sz, "planning horovod");
    int n_barriers = 0;
    barrier_before[0] = 0;
    for (int k = 0; k < n; k++) {
        index[k] = k;
        barrier_before[k + 1] = barrier_before[k] + (prof->calls[k].merge ? 0 : 1);
        if (!prof->calls[k].merge)
            barriers[n_barriers++] = k;
    }
    ub_ready_order(prof, by_ready);
    /* Submitted calls not yet sent, smallest arrival index first. */
    ub_rank_heap pool = {.items = items, .n = 0, .rank = index};
    int next = 0, bar = 0;
    while (next < n) {
        /* The next cycle that has something new: the first at or after the next ready time. */
        double t = cycle_at(prof->calls[by_ready[next]].ready, cycle);
        while (next < n && prof->calls[by_ready[next]].ready <= t)
            ub_rank_heap_push(&pool, by_ready[next++]);
        /* The first merge:false call not ready by t holds back every call after it. */
        while (bar < n_barriers && prof->calls[barriers[bar]].ready <= t)
            bar++;
        int held = bar < n_barriers ? barriers[bar] : n;
        int m = 0;
        while (pool.n > 0 && pool.items[0] < held)
            q[m++] = ub_rank_heap_pop(&pool);
        fuse(prof, barrier_before, q, m, taken, threshold, out);
    }
    char cyc[32];
    snprintf(cyc, sizeof(cyc), "%.6g", cycle);
    snprintf(out->params, sizeof(out->params), "cycle=%s threshold=%llu", cyc, (unsigned long long)threshold);
    free(barrier_before);
    free(barriers);
    free(by_ready);
    free(index);
    free(items);
    free(q);
    free(taken);
    return 0;
}

int ub_policy_horovod(const ub_profile *prof, ub_plan *out)
{
    ub_reference_settings s = ub_reference_get();
    return ub_horovod_plan(prof, s.horovod_cycle, s.horovod_threshold, out);
}
