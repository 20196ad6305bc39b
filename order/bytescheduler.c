/* ByteScheduler (Peng et al., SOSP 2019) as a static plan.
 *
 * The dynamic policy: every tensor is cut into partitions of a fixed byte size; a partition
 * enters a priority queue when its tensor is ready (priority: the forward need, then the layer
 * nearer the input first); the scheduler posts the highest-priority queued partition while the
 * bytes in flight are below a credit, and a posted partition is committed to the link (NCCL
 * runs a communicator's operations serially, in posting order).  A plan must be static, so we
 * run that policy as an event simulation on the profile, with the model's block costs, and
 * the posting order becomes the plan.  ByteScheduler tunes partition and credit with Bayesian
 * optimisation at run time; our stand-in is the documented grid below, scored by the model.
 * A plan posts the regions between "merge": false calls in order (docs/model.md): a partition
 * of a later region enters the queue only once every earlier region has been posted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "order_internal.h"
#include "usbyte/alloc.h"
#include "usbyte/model.h"
#include "usbyte/policy.h"
#include "usbyte/schedulers.h"

/* Powers of two, so every cut is a whole number of elements of any dtype; a call whose cuts
 * must fall on a coarser quantum (the profile's align) is cut at the partition size rounded up
 * to it. */
static const uint64_t partition_grid[] = {64u << 10, 256u << 10, 1u << 20, 4u << 20, 16u << 20, 64u << 20, 256u << 20, 1u << 30};
#define N_GRID (sizeof(partition_grid) / sizeof(partition_grid[0]))
static const int credit_grid[] = {1, 2, 4, 8}; /* in partitions */

typedef struct {
    const ub_profile *prof;
    int *ready_order;
    int *rank;
    int *heap_items;
    uint64_t *sent;      /* bytes of each call already posted */
    uint64_t *part;      /* the partition size of each call for the current run */
    double *fifo_end;    /* posted partitions still in flight: end time and bytes */
    uint64_t *fifo_bytes;
    size_t fifo_cap;
    ub_region_gate gate;
} sim_state;

/* Room for one more in-flight partition at fifo[*tail]; the live entries [*head, *tail) move
 * to the front first, so the fifo holds what is in flight, not every partition posted. */
static void fifo_reserve(sim_state *s, size_t *head, size_t *tail)
{
    if (*tail < s->fifo_cap)
        return;
    size_t live = *tail - *head;
    if (*head > 0) {
        memmove(s->fifo_end, s->fifo_end + *head, sizeof(double) * live);
        memmove(s->fifo_bytes, s->fifo_bytes + *head, sizeof(uint64_t) * live);
        *head = 0;
        *tail = live;
    }
    if (*tail < s->fifo_cap)
        return;
    s->fifo_cap = s->fifo_cap ? 2 * s->fifo_cap : 64;
    s->fifo_end = ub_xrealloc(s->fifo_end, sizeof(double) * s->fifo_cap, "planning bytescheduler");
    s->fifo_bytes = ub_xrealloc(s->fifo_bytes, sizeof(uint64_t) * s->fifo_cap, "planning bytescheduler");
}

/* Simulates ByteScheduler with one (partition, credit) and writes the posting order to out. */
static void simulate(sim_state *s, uint64_t partition, int credit, ub_plan *out)
{
    const ub_profile *prof = s->prof;
    int n = prof->n_calls;
    ub_plan_clear(out);
    ub_rank_heap heap = {.items = s->heap_items, .n = 0, .rank = s->rank};
    memset(s->sent, 0, sizeof(uint64_t) * (size_t)n);
    ub_region_gate_reset(&s->gate);
    for (int k = 0; k < n; k++)
        s->part[k] = ub_piece_at_least(prof, k, partition);
    double credit_bytes = (double)credit * (double)partition;
    double in_flight = 0.0, t = 0.0, link_free = 0.0;
    size_t head = 0, tail = 0; /* fifo of in-flight partitions; ends never decrease */
    int next = 0;              /* next call to become ready, in ready order */
    for (;;) {
        while (next < n && prof->calls[s->ready_order[next]].ready <= t) {
            int c = s->ready_order[next++];
            if (ub_region_gate_arrive(&s->gate, c))
                ub_rank_heap_push(&heap, c);
        }
        while (head < tail && s->fifo_end[head] <= t)
            in_flight -= (double)s->fifo_bytes[head++];
        if (head == tail)
            in_flight = 0.0; /* no rounding residue once nothing is in flight */
        if (heap.n > 0 && in_flight < credit_bytes) {
            int c = ub_rank_heap_pop(&heap);
            uint64_t off = s->sent[c], left = prof->calls[c].bytes - off;
            uint64_t len = left < s->part[c] ? left : s->part[c];
            double start = link_free > t ? link_free : t;
            double end = start + ub_block_cost(prof, (double)len, 0);
            ub_plan_begin_block(out);
            ub_plan_add_segment(out, c, off, len);
            s->sent[c] = off + len;
            if (s->sent[c] < prof->calls[c].bytes)
                ub_rank_heap_push(&heap, c);
            else
                ub_region_gate_sent(&s->gate, c, &heap);
            link_free = end;
            fifo_reserve(s, &head, &tail);
            s->fifo_end[tail] = end;
            s->fifo_bytes[tail++] = len;
            in_flight += (double)len;
            continue;
        }
        /* Nothing to post now: wait for the next arrival or the next completion. */
        double wake = -1.0;
        if (next < n)
            wake = prof->calls[s->ready_order[next]].ready;
        if (head < tail && (wake < 0 || s->fifo_end[head] < wake))
            wake = s->fifo_end[head];
        if (wake < 0)
            break; /* everything posted */
        t = wake;
    }
}

static void state_init(sim_state *s, const ub_profile *prof)
{
    int n = prof->n_calls;
    memset(s, 0, sizeof(*s));
    s->prof = prof;
    s->ready_order = ub_xrealloc(NULL, sizeof(int) * (size_t)n, "planning bytescheduler");
    s->rank = ub_xrealloc(NULL, sizeof(int) * (size_t)n, "planning bytescheduler");
    s->heap_items = ub_xrealloc(NULL, sizeof(int) * (size_t)n, "planning bytescheduler");
    s->sent = ub_xrealloc(NULL, sizeof(uint64_t) * (size_t)n, "planning bytescheduler");
    s->part = ub_xrealloc(NULL, sizeof(uint64_t) * (size_t)n, "planning bytescheduler");
    ub_ready_order(prof, s->ready_order);
    ub_forward_priority(prof, NULL, s->rank);
    ub_region_gate_init(&s->gate, prof);
}

static void state_free(sim_state *s)
{
    free(s->ready_order);
    free(s->rank);
    free(s->heap_items);
    free(s->sent);
    free(s->part);
    free(s->fifo_end);
    free(s->fifo_bytes);
    ub_region_gate_free(&s->gate);
}

double ub_bytescheduler_plan(const ub_profile *prof, uint64_t partition, int credit, ub_plan *out)
{
    if (prof->n_calls <= 0 || partition == 0 || credit < 1)
        return -1.0;
    sim_state s;
    state_init(&s, prof);
    simulate(&s, partition, credit, out);
    state_free(&s);
    snprintf(out->params, sizeof(out->params), "partition=%llu credit=%d", (unsigned long long)partition, credit);
    return ub_evaluate_const(prof, out, NULL);
}

int ub_policy_bytescheduler(const ub_profile *prof, ub_plan *out)
{
    int n = prof->n_calls;
    if (n <= 0)
        return -1;
    double total = 0.0;
    uint64_t largest = 0;
    for (int k = 0; k < n; k++) {
        total += (double)prof->calls[k].bytes;
        if (prof->calls[k].bytes > largest)
            largest = prof->calls[k].bytes;
    }
    /* Partition sizes that would cut the data into more than 4n + 2048 pieces are skipped
     * (a bound on planning time and plan size).  The grid's two largest sizes mean "do not
     * cut" for calls up to 1 GiB; for a larger call the last size tried is the power of two
     * that holds it whole, so there is always a setting within the bound. */
    double part_limit = 4.0 * n + 2048.0;
    uint64_t sizes[N_GRID + 1];
    size_t n_sizes = 0;
    for (size_t p = 0; p < N_GRID; p++)
        sizes[n_sizes++] = partition_grid[p];
    if (largest > partition_grid[N_GRID - 1]) {
        uint64_t whole = partition_grid[N_GRID - 1];
        while (whole < largest && whole <= UINT64_MAX / 2)
            whole *= 2;
        sizes[n_sizes++] = whole;
    }
    sim_state s;
    state_init(&s, prof);

    ub_plan trial;
    ub_plan_init(&trial, "bytescheduler");
    double best = 0.0;
    uint64_t best_partition = 0;
    int best_credit = 0;
    /* Grid order is the tie-break: the first (smallest) setting that reaches the best time. */
    for (size_t p = 0; p < n_sizes; p++) {
        if (p + 1 < n_sizes && total / (double)sizes[p] > part_limit)
            continue;
        for (size_t c = 0; c < sizeof(credit_grid) / sizeof(credit_grid[0]); c++) {
            simulate(&s, sizes[p], credit_grid[c], &trial);
            double t = ub_evaluate_const(prof, &trial, NULL);
            if (best_partition == 0 || t < best) {
                best = t;
                best_partition = sizes[p];
                best_credit = credit_grid[c];
                ub_plan_copy(out, &trial);
            }
        }
    }
    snprintf(out->params, sizeof(out->params), "partition=%llu credit=%d",
             (unsigned long long)best_partition, best_credit);
    ub_plan_free(&trial);
    state_free(&s);
    return 0;
}
