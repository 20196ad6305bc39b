/* The executor (see exec.h).  A block of one call's segment is an allreduce of that byte range
 * (send+off -> recv+off; in place when the call is); a block of several calls is copied into the
 * staging buffer, reduced in place there and copied back to each call's receive buffer.  After
 * every block the private stream writes base + b + 1 into the completion counter, which the
 * completion streams wait for (redirect.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_list.h"
#include "driver.h"
#include "exec.h"
#include "guard.h"
#include "nccl_list.h"
#include "usbyte/types.h"

static size_t nccl_dtype_size(int nccl)
{
#define X(e, name, size, value) if (nccl == value) return size;
    UB_DTYPE_LIST(X)
#undef X
    return 1;
}

int ub_exec_setup(ub_comm *c, char *why, size_t len)
{
    ub_sched_rt *s = &c->sched;
    int n = s->sp.n_calls;
    if (ub_driver_resolve() != 0) {
        snprintf(why, len, "the driver's stream memory operations are not available");
        return -1;
    }
    s->args = calloc((size_t)n, sizeof *s->args);
    s->ready_ev = calloc((size_t)n, sizeof *s->ready_ev);
    free(s->ready_stamp);
    s->ready_stamp = calloc((size_t)n, sizeof *s->ready_stamp);
    free(s->block_start);
    free(s->block_end);
    size_t traced = (size_t)s->sp.n_blocks * UB_SCHED_TRACED;
    s->block_start = malloc(traced * sizeof *s->block_start);
    s->block_end = malloc(traced * sizeof *s->block_end);
    if (!s->args || !s->ready_ev || !s->ready_stamp || !s->block_start || !s->block_end) {
        snprintf(why, len, "out of memory for the executor");
        return -1;
    }
    for (size_t b = 0; b < traced; b++)
        s->block_start[b] = s->block_end[b] = NAN;
    int lo = 0, hi = 0;
    cudaError_t e = UB_REAL(ub_cuda.cudaGetDevice(&s->device));
    if (e == cudaSuccess && UB_REAL(ub_cuda.cudaDeviceGetStreamPriorityRange(&lo, &hi)) != cudaSuccess)
        hi = 0;
    if (e == cudaSuccess)
        e = UB_REAL(ub_cuda.cudaStreamCreateWithPriority(&s->priv, cudaStreamNonBlocking, hi));
    for (int k = 0; e == cudaSuccess && k < n; k++)
        e = UB_REAL(ub_cuda.cudaEventCreateWithFlags(&s->ready_ev[k], cudaEventDisableTiming));
    if (e == cudaSuccess)
        e = UB_REAL(ub_cuda.cudaHostAlloc((void **)&s->counter_host, sizeof *s->counter_host, cudaHostAllocMapped));
    void *dev = NULL;
    if (e == cudaSuccess) {
        *s->counter_host = 0;
        e = UB_REAL(ub_cuda.cudaHostGetDevicePointer(&dev, s->counter_host, 0));
        s->counter_dev = (CUdeviceptr)(uintptr_t)dev;
    }
    uint32_t most = 1;
    for (int b = 0; b < s->sp.n_blocks; b++)
        if (s->plan.blocks[b].n_segments > most)
            most = s->plan.blocks[b].n_segments;
    int version = 0;
    /* 12.8 has the function with another signature (a failIdx before the stream). */
    s->batch_copies = ub_cuda.cudaMemcpyBatchAsync && ub_cuda.cudaRuntimeGetVersion &&
                      UB_REAL(ub_cuda.cudaRuntimeGetVersion(&version)) == cudaSuccess && version >= 13000;
    free(s->batch_dst);
    free(s->batch_src);
    free(s->batch_size);
    s->batch_dst = malloc(most * sizeof *s->batch_dst);
    s->batch_src = malloc(most * sizeof *s->batch_src);
    s->batch_size = malloc(most * sizeof *s->batch_size);
    if (!s->batch_dst || !s->batch_src || !s->batch_size)
        s->batch_copies = false;
    ub_debug("communicator %d: a merged block's staging copies go %s", c->index,
             s->batch_copies ? "as one cudaMemcpyBatchAsync each way" : "one cudaMemcpyAsync per segment");
    s->staging_bytes = s->sp.staging_bytes;
    if (e == cudaSuccess && s->staging_bytes)
        e = UB_REAL(ub_cuda.cudaMalloc(&s->staging, s->staging_bytes));
    if (e == cudaSuccess && ub_timing_start(&s->tm, &c->ending) != 0)
        e = cudaErrorMemoryAllocation;
    if (e != cudaSuccess) {
        snprintf(why, len, "cannot set up the executor (%s)",
                 ub_cuda.cudaGetErrorString ? ub_cuda.cudaGetErrorString(e) : "CUDA error");
        return -1;
    }
    return 0;
}

/* A CUDA or NCCL failure while issuing a block leaves the other ranks waiting in theirs. */
static _Noreturn void cannot_issue(ub_comm *c, int b, const char *what)
{
    ub_error("communicator %d: %s while issuing block %d of the plan; the other ranks would wait for this one "
             "forever: aborting (USBYTE_MODE=observe runs the job without re-issuing)", c->index, what, b);
    abort();
}

/* The recorded readiness event that covers call j of this iteration: its own, or a later call's
 * on the same stream (recorded after j's work was enqueued there); when none is (a flush before
 * the block's largest call arrived), j's own is recorded now, which covers it too. */
static int readiness_of(ub_comm *c, int j, int arrived)
{
    ub_sched_rt *s = &c->sched;
    uint64_t stamp = s->base + 1;
    for (int k = j; k < arrived; k++)
        if (s->ready_stamp[k] == stamp && s->args[k].stream == s->args[j].stream)
            return k;
    if (UB_REAL(ub_cuda.cudaEventRecord(s->ready_ev[j], s->args[j].stream)) != cudaSuccess)
        cannot_issue(c, -1, "cudaEventRecord of a call's readiness");
    s->ready_stamp[j] = stamp;
    return j;
}

/* The kept segments of block b into the staging buffer (in) or back to their calls' receive
 * buffers, in segment order: one batched copy where the runtime has it, else one copy each. */
static void staging_copies(ub_comm *c, int b, const ub_segment *seg, uint32_t n_seg, const bool *keep, bool in)
{
    ub_sched_rt *s = &c->sched;
    char *stage = s->staging;
    uint64_t at = 0;
    size_t n = 0;
    for (uint32_t i = 0; i < n_seg; i++) {
        if (!keep[i])
            continue;
        const ub_call_args *a = &s->args[seg[i].call];
        void *dst = in ? (void *)(stage + at) : (void *)((char *)a->recv + seg[i].offset);
        const void *src = in ? (const void *)((const char *)a->send + seg[i].offset) : (const void *)(stage + at);
        at += seg[i].length;
        if (s->batch_copies) {
            s->batch_dst[n] = dst;
            s->batch_src[n] = src;
            s->batch_size[n] = seg[i].length;
            n++;
        } else if (UB_REAL(ub_cuda.cudaMemcpyAsync(dst, src, seg[i].length, cudaMemcpyDeviceToDevice, s->priv)) !=
                   cudaSuccess) {
            cannot_issue(c, b, in ? "the copy into the staging buffer" : "the copy out of the staging buffer");
        }
    }
    if (n == 0)
        return;
    /* Sources in stream order: the waits on the calls' readiness and the allreduce come first. */
    struct cudaMemcpyAttributes attr = {.srcAccessOrder = cudaMemcpySrcAccessOrderStream,
                                        .srcLocHint = {.type = cudaMemLocationTypeDevice, .id = s->device},
                                        .dstLocHint = {.type = cudaMemLocationTypeDevice, .id = s->device}};
    size_t first = 0;
    if (UB_REAL(ub_cuda.cudaMemcpyBatchAsync((void *const *)s->batch_dst, (const void *const *)s->batch_src,
                                             s->batch_size, n, &attr, &first, 1, s->priv)) != cudaSuccess)
        cannot_issue(c, b, in ? "the batched copy into the staging buffer" : "the batched copy out of the staging buffer");
}

/* slot: which of the UB_SCHED_TRACED recorded iterations this is, -1 when it is not recorded. */
static void issue_block(ub_comm *c, int b, int arrived, int slot)
{
    ub_sched_rt *s = &c->sched;
    const ub_block *blk = &s->plan.blocks[b];
    const ub_segment *seg = &s->plan.segments[blk->first_segment];
    bool keep[blk->n_segments > 0 ? blk->n_segments : 1];
    uint32_t n_keep = ub_sched_flush_segments(&s->plan, (uint32_t)b, arrived, keep);
    cudaStream_t p = s->priv;
    if (n_keep > 0) {
        int waited = -1;
        for (uint32_t i = 0; i < blk->n_segments; i++)
            if (keep[i]) {
                int r = readiness_of(c, seg[i].call, arrived);
                if (r == waited)
                    continue;
                waited = r;
                if (UB_REAL(ub_cuda.cudaStreamWaitEvent(p, s->ready_ev[r], 0)) != cudaSuccess)
                    cannot_issue(c, b, "cudaStreamWaitEvent on a call's readiness");
            }
        /* Who is reduced: the segments of one call go straight to NCCL, several through staging. */
        int first_call = -1;
        bool one_call = true;
        uint64_t total = 0;
        for (uint32_t i = 0; i < blk->n_segments; i++)
            if (keep[i]) {
                if (first_call < 0)
                    first_call = seg[i].call;
                one_call &= seg[i].call == first_call;
                total += seg[i].length;
            }
        const ub_call_args *a0 = &s->args[first_call];
        size_t esize = nccl_dtype_size(a0->dtype);
        if (slot >= 0)
            ub_timing_mark(&s->tm, p, &s->block_start[slot * s->sp.n_blocks + b], 1, 0, NULL);
        if (one_call && n_keep == 1) {
            const ub_segment *g = NULL;
            for (uint32_t i = 0; i < blk->n_segments && !g; i++)
                if (keep[i])
                    g = &seg[i];
            if (UB_REAL(ub_nccl.AllReduce((const char *)a0->send + g->offset, (char *)a0->recv + g->offset,
                                          g->length / esize, (ncclDataType_t)a0->dtype, (ncclRedOp_t)a0->op,
                                          c->handle, p)) != ncclSuccess)
                cannot_issue(c, b, "ncclAllReduce");
        } else {
            if (total > s->staging_bytes || !s->staging)
                cannot_issue(c, b, "a merged block larger than the staging buffer (a planner bug)");
            char *stage = s->staging;
            staging_copies(c, b, seg, blk->n_segments, keep, true);
            if (UB_REAL(ub_nccl.AllReduce(stage, stage, total / esize, (ncclDataType_t)a0->dtype, (ncclRedOp_t)a0->op,
                                          c->handle, p)) != ncclSuccess)
                cannot_issue(c, b, "ncclAllReduce of the staging buffer");
            staging_copies(c, b, seg, blk->n_segments, keep, false);
        }
        if (slot >= 0)
            ub_timing_mark(&s->tm, p, &s->block_end[slot * s->sp.n_blocks + b], 1, 0, NULL);
    }
    if (UB_REAL(ub_driver.write_value64((CUstream)p, s->counter_dev, s->base + (uint64_t)b + 1, 0)) != CUDA_SUCCESS)
        cannot_issue(c, b, "cuStreamWriteValue64 of the completion counter");
}

void ub_exec_issue(ub_comm *c, int first, int end, int arrived)
{
    ub_sched_rt *s = &c->sched;
    /* Inside the application's group the blocks would be launched only at its ncclGroupEnd, after
     * the copies and counter writes enqueued around them: the group is ended and reopened. */
    int depth = ub_thread_group_depth();
    if (depth > 0)
        ub_group_split_begin(depth);
    int slot = s->measured_iter >= 0 ? s->n_starts - 1 - s->measured_iter : -1;
    for (int b = first; b < end; b++)
        issue_block(c, b, arrived, slot < UB_SCHED_TRACED ? slot : -1);
    if (depth > 0)
        ub_group_split_end(depth);
}

void ub_exec_drain(ub_comm *c)
{
    if (c->sched.ready)
        UB_REAL(ub_cuda.cudaStreamSynchronize(c->sched.priv));
}

void ub_exec_release(ub_comm *c, bool wait)
{
    ub_sched_rt *s = &c->sched;
    if (!s->ready)
        return;
    s->ready = false;
    if (!wait) {
        /* Nothing may wait for device work here (a dead peer's collectives never complete):
         * every completion stream is released from the host, the rest is left to the process's
         * end (cudaFree and cudaStreamDestroy could synchronise behind those collectives). */
        if (s->counter_host)
            __atomic_store_n(s->counter_host, UINT64_MAX, __ATOMIC_RELEASE);
        ub_timing_discard(&s->tm);
        return;
    }
    ub_inside++;
    ub_cuda.cudaStreamSynchronize(s->priv);
    ub_timing_stop(&s->tm);
    for (int k = 0; k < s->sp.n_calls; k++)
        if (s->ready_ev[k])
            ub_cuda.cudaEventDestroy(s->ready_ev[k]);
    if (s->staging)
        ub_cuda.cudaFree(s->staging);
    ub_cuda.cudaStreamDestroy(s->priv);
    ub_inside--;
    /* The pinned counter stays: completion streams may still read it (they are the streams'
     * records, released with them); the measured block times stay for the report. */
    free(s->args);
    free(s->ready_ev);
    free(s->ready_stamp);
    free(s->batch_dst);
    free(s->batch_src);
    free(s->batch_size);
    s->batch_dst = NULL;
    s->batch_src = NULL;
    s->batch_size = NULL;
    s->args = NULL;
    s->ready_ev = NULL;
    s->ready_stamp = NULL;
    s->staging = NULL;
}
