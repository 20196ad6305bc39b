/* The executor (see exec.h).  A block of one call's segment is an allreduce of that byte range
 * (send+off -> recv+off; in place when the call is); a block of several calls is copied into the
 * staging buffer, reduced in place there and copied back to each call's receive buffer.  The
 * private stream waits only for readiness events recorded on the callers' streams when their
 * calls arrived: work already submitted. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "cuda_error.h"
#include "cuda_list.h"
#include "device.h"
#include "exec.h"
#include "guard.h"
#include "log.h"
#include "nccl_list.h"
#include "usbyte/median.h"
#include "usbyte/types.h"
#include "usbyte/verify.h"

static size_t nccl_dtype_size(int nccl)
{
#define X(e, name, size, value) if (nccl == value) return size;
    UB_DTYPE_LIST(X)
#undef X
    return 1;
}

int ub_exec_reserve(ub_comm *c, int n_calls, uint64_t staging, char *why, size_t len)
{
    ub_sched_rt *s = &c->sched;
    cudaError_t e = cudaSuccess;
    int previous = ub_device_enter(c->device);
    if (!s->priv) {
        e = UB_CUDA(ub_cuda.cudaGetDevice(&s->device));
        if (e == cudaSuccess)
            e = ub_device_urgent_stream(&s->priv);
        if (e != cudaSuccess)
            s->priv = NULL;
    }
    if (e == cudaSuccess && n_calls > s->n_ready) {
        cudaEvent_t *grown = realloc(s->ready_ev, (size_t)n_calls * sizeof *grown);
        if (!grown)
            e = cudaErrorMemoryAllocation;
        else
            s->ready_ev = grown;
        while (e == cudaSuccess && s->n_ready < n_calls) {
            e = UB_CUDA(ub_cuda.cudaEventCreateWithFlags(&s->ready_ev[s->n_ready], cudaEventDisableTiming));
            if (e == cudaSuccess)
                s->n_ready++;
        }
    }
    /* Kept to the end: freeing would wait for the whole device (cudaFree), behind collectives
     * that may wait for this rank.  A later agreement that wants more (a longer period found
     * after a shorter one) gets a larger buffer, the smaller one retired, still untouched by the
     * new plan; when that cannot be had, the later plan lives within the one there is (the
     * agreement offers what each rank has). */
    if (e == cudaSuccess && staging > s->staging_cap && (!s->staging || s->n_retired_staging < UB_EXEC_RETIRED_STAGING)) {
        void *larger = NULL;
        cudaError_t grown = UB_UNSAFE(ub_cuda.cudaMalloc(&larger, staging));
        if (grown == cudaSuccess) {
            if (s->staging)
                s->retired_staging[s->n_retired_staging++] = s->staging;
            s->staging = larger;
            s->staging_cap = staging;
        } else if (!s->staging) {
            e = grown;
        }
    }
    ub_device_leave(previous);
    if (e == cudaSuccess && !s->tm.ok && ub_timing_start(&s->tm, c->device) != 0)
        e = cudaErrorMemoryAllocation;
    if (e != cudaSuccess) {
        snprintf(why, len, "cannot set up schedule mode's executor (%s; staging %llu bytes)", ub_cuda_error_text(e),
                 (unsigned long long)staging);
        return -1;
    }
    return 0;
}

int ub_exec_setup(ub_comm *c, char *why, size_t len)
{
    ub_sched_rt *s = &c->sched;
    int n = s->sp.n_calls;
    if (n > s->n_ready || !s->priv || s->sp.staging_bytes > s->staging_cap) {
        snprintf(why, len, "the plan needs more than the executor reserved before the agreement (%d calls, staging "
                 "%llu of %llu bytes: a planner bug)", n, (unsigned long long)s->sp.staging_bytes,
                 (unsigned long long)s->staging_cap);
        return -1;
    }
    /* A previous plan's timing marks still pending point into the arrays replaced below. */
    ub_timing_discard(&s->tm);
    free(s->args);
    free(s->ready_stamp);
    s->args = calloc((size_t)n, sizeof *s->args);
    s->ready_stamp = calloc((size_t)n, sizeof *s->ready_stamp);
    free(s->block_start);
    free(s->block_end);
    size_t traced = (size_t)s->sp.n_blocks * UB_SCHED_TRACED;
    s->block_start = malloc(traced * sizeof *s->block_start);
    s->block_end = malloc(traced * sizeof *s->block_end);
    if (!s->args || !s->ready_stamp || !s->block_start || !s->block_end) {
        snprintf(why, len, "out of memory for the executor");
        return -1;
    }
    for (size_t b = 0; b < traced; b++)
        s->block_start[b] = s->block_end[b] = NAN;
    uint32_t most = 1;
    for (int b = 0; b < s->sp.n_blocks; b++)
        if (s->plan.blocks[b].n_segments > most)
            most = s->plan.blocks[b].n_segments;
    int version = 0;
    /* 12.8 has the function with another signature (a failIdx before the stream). */
    s->batch_copies = ub_cuda.cudaMemcpyBatchAsync && ub_cuda.cudaRuntimeGetVersion &&
                      UB_CUDA(ub_cuda.cudaRuntimeGetVersion(&version)) == cudaSuccess && version >= 13000;
    free(s->batch_dst);
    free(s->batch_src);
    free(s->batch_size);
    /* Without them the copies go one per segment: the same blocks to NCCL either way. */
    s->batch_dst = malloc(most * sizeof *s->batch_dst);
    s->batch_src = malloc(most * sizeof *s->batch_src);
    s->batch_size = malloc(most * sizeof *s->batch_size);
    if (!s->batch_dst || !s->batch_src || !s->batch_size)
        s->batch_copies = false;
    ub_debug("communicator %d: a merged block's staging copies go %s", c->index,
             s->batch_copies ? "as one cudaMemcpyBatchAsync each way" : "one cudaMemcpyAsync per segment");
    s->staging_bytes = s->sp.staging_bytes;
    return 0;
}

/* A CUDA or NCCL failure while issuing a block: the reason (the call and the error) in why, and
 * the result the application's call returns (a CUDA failure is NCCL's ncclUnhandledCudaError). */
typedef struct issue_failure {
    char *why;
    size_t len;
} issue_failure;

static ncclResult_t cuda_failed(const issue_failure *f, int b, const char *what, cudaError_t e)
{
    snprintf(f->why, f->len, "%s of block %d failed (%s)", what, b, ub_cuda_error_text(e));
    return ncclUnhandledCudaError;
}

static ncclResult_t nccl_failed(const issue_failure *f, int b, const char *what, ncclResult_t r)
{
    snprintf(f->why, f->len, "%s of block %d returned %s", what, b, ub_nccl_result_name(r));
    return r;
}

/* The recorded readiness event that covers call j of this iteration: its own, or a later call's
 * on the same stream (recorded after j's work was enqueued there); when none is (a flush before
 * the block's largest call arrived), j's own is recorded now, which covers it too.  -1 when that
 * record fails. */
static int readiness_of(ub_comm *c, int j, int arrived, cudaError_t *e)
{
    ub_sched_rt *s = &c->sched;
    uint64_t stamp = s->base + 1;
    for (int k = j; k < arrived; k++)
        if (s->ready_stamp[k] == stamp && s->args[k].stream == s->args[j].stream)
            return k;
    if ((*e = UB_CUDA(ub_cuda.cudaEventRecord(s->ready_ev[j], s->args[j].stream))) != cudaSuccess)
        return -1;
    s->ready_stamp[j] = stamp;
    return j;
}

/* The kept segments of block b into the staging buffer (in) or back to their calls' receive
 * buffers, in segment order: one batched copy where the runtime has it, else one copy each. */
static ncclResult_t staging_copies(ub_comm *c, int b, const ub_segment *seg, uint32_t n_seg, const bool *keep, bool in,
                                   const issue_failure *f)
{
    ub_sched_rt *s = &c->sched;
    char *stage = s->staging;
    uint64_t at = 0;
    size_t n = 0;
    cudaError_t e;
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
        } else if ((e = UB_CUDA(ub_cuda.cudaMemcpyAsync(dst, src, seg[i].length, cudaMemcpyDeviceToDevice, s->priv))) !=
                   cudaSuccess) {
            return cuda_failed(f, b, in ? "the copy into the staging buffer" : "the copy out of the staging buffer", e);
        }
    }
    if (n == 0)
        return ncclSuccess;
    /* Sources in stream order: the waits on the calls' readiness and the allreduce come first. */
    struct cudaMemcpyAttributes attr = {.srcAccessOrder = cudaMemcpySrcAccessOrderStream,
                                        .srcLocHint = {.type = cudaMemLocationTypeDevice, .id = s->device},
                                        .dstLocHint = {.type = cudaMemLocationTypeDevice, .id = s->device}};
    size_t first = 0;
    if ((e = UB_CUDA(ub_cuda.cudaMemcpyBatchAsync((void *const *)s->batch_dst, (const void *const *)s->batch_src,
                                                  s->batch_size, n, &attr, &first, 1, s->priv))) != cudaSuccess)
        return cuda_failed(f, b, in ? "the batched copy into the staging buffer" : "the batched copy out of the staging buffer",
                           e);
    return ncclSuccess;
}

/* slot: which of the UB_SCHED_TRACED recorded iterations this is, -1 when it is not recorded. */
ncclResult_t ub_exec_issue_block(ub_comm *c, ncclComm_t handle, int b, int arrived, int slot, char *why, size_t len)
{
    ub_sched_rt *s = &c->sched;
    const ub_block *blk = &s->plan.blocks[b];
    const ub_segment *seg = &s->plan.segments[blk->first_segment];
    bool keep[blk->n_segments > 0 ? blk->n_segments : 1];
    uint32_t n_keep = ub_sched_flush_segments(&s->plan, (uint32_t)b, arrived, keep);
    cudaStream_t p = s->priv;
    issue_failure f = {why, len};
    if (n_keep == 0)
        return ncclSuccess;
    int waited = -1;
    cudaError_t e = cudaSuccess;
    for (uint32_t i = 0; i < blk->n_segments; i++)
        if (keep[i]) {
            int r = readiness_of(c, seg[i].call, arrived, &e);
            if (r < 0)
                return cuda_failed(&f, b, "cudaEventRecord of a call's readiness", e);
            if (r == waited)
                continue;
            waited = r;
            if ((e = UB_CUDA(ub_cuda.cudaStreamWaitEvent(p, s->ready_ev[r], 0))) != cudaSuccess)
                return cuda_failed(&f, b, "cudaStreamWaitEvent on a call's readiness", e);
        }
    /* Who is reduced: one contiguous range of one call goes straight to NCCL, anything else
     * through staging (ub_segments_staged, the model's rule). */
    int first_call = -1;
    uint64_t total = 0, lo = UINT64_MAX;
    for (uint32_t i = 0; i < blk->n_segments; i++)
        if (keep[i]) {
            if (first_call < 0)
                first_call = seg[i].call;
            total += seg[i].length;
            if (seg[i].offset < lo)
                lo = seg[i].offset;
        }
    const ub_call_args *a0 = &s->args[first_call];
    size_t esize = nccl_dtype_size(a0->dtype);
    ncclResult_t r;
    if (slot >= 0)
        ub_timing_mark(&s->tm, p, &s->block_start[slot * s->sp.n_blocks + b], 1, 0, NULL);
    if (!ub_segments_staged(seg, blk->n_segments, keep)) {
        if ((r = UB_NCCL(ub_nccl.AllReduce((const char *)a0->send + lo, (char *)a0->recv + lo, total / esize,
                                           (ncclDataType_t)a0->dtype, (ncclRedOp_t)a0->op, handle, p))) != ncclSuccess)
            return nccl_failed(&f, b, "ncclAllReduce", r);
    } else {
        if (total > s->staging_bytes || !s->staging) {
            snprintf(why, len, "block %d is larger than the staging buffer (a planner bug)", b);
            return ncclInternalError;
        }
        char *stage = s->staging;
        if ((r = staging_copies(c, b, seg, blk->n_segments, keep, true, &f)) != ncclSuccess)
            return r;
        if ((r = UB_NCCL(ub_nccl.AllReduce(stage, stage, total / esize, (ncclDataType_t)a0->dtype, (ncclRedOp_t)a0->op,
                                           handle, p))) != ncclSuccess)
            return nccl_failed(&f, b, "ncclAllReduce of the staging buffer", r);
        if ((r = staging_copies(c, b, seg, blk->n_segments, keep, false, &f)) != ncclSuccess)
            return r;
    }
    if (slot >= 0)
        ub_timing_mark(&s->tm, p, &s->block_end[slot * s->sp.n_blocks + b], 1, 0, NULL);
    return ncclSuccess;
}

int ub_exec_block_seconds(ub_comm *c, double copy_beta, double *out, int max)
{
    ub_sched_rt *s = &c->sched;
    int nb = s->sp.n_blocks < max ? s->sp.n_blocks : max;
    if (nb < 0)
        nb = 0;
    for (int b = 0; b < nb; b++)
        out[b] = NAN;
    if (s->measured_iter < 0 || !s->block_start)
        return nb;
    ub_timing_poll(&s->tm);
    for (int b = 0; b < nb; b++) {
        double d[UB_SCHED_TRACED];
        int n = 0;
        for (int slot = 0; slot < UB_SCHED_TRACED && s->measured_iter + slot < s->n_starts; slot++) {
            d[n] = s->block_end[slot * s->sp.n_blocks + b] - s->block_start[slot * s->sp.n_blocks + b];
            if (isfinite(d[n]) && d[n] > 0)
                n++;
        }
        if (n > 0)
            out[b] = ub_median(d, n);
    }
    for (int b = 0; b < nb; b++) {
        const ub_block *blk = &s->plan.blocks[b];
        const ub_segment *seg = &s->plan.segments[blk->first_segment];
        if (!isfinite(out[b]) || !s->sp.staged[b])
            continue;
        double bytes = 0;
        for (uint32_t i = 0; i < blk->n_segments; i++)
            bytes += (double)seg[i].length;
        out[b] -= copy_beta * bytes;
        if (!(out[b] > 0))
            out[b] = NAN;
    }
    return nb;
}

double ub_exec_block_wait(ub_comm *c, const ub_profile *agreed, int max)
{
    ub_sched_rt *s = &c->sched;
    int nb = s->sp.n_blocks < max ? s->sp.n_blocks : max;
    if (nb <= 0 || s->measured_iter < 0 || !s->block_start)
        return NAN;
    double *ready = malloc(sizeof *ready * (size_t)nb);
    if (!ready)
        return NAN;
    for (int b = 0; b < nb; b++) {
        const ub_block *blk = &s->plan.blocks[b];
        const ub_segment *seg = &s->plan.segments[blk->first_segment];
        ready[b] = 0;
        for (uint32_t i = 0; i < blk->n_segments; i++) {
            if (seg[i].call < 0 || seg[i].call >= agreed->n_calls) {
                ready[b] = NAN;
                break;
            }
            double r = agreed->calls[seg[i].call].ready;
            ready[b] = r > ready[b] ? r : ready[b];
        }
    }
    ub_timing_poll(&s->tm);
    int slots = s->n_starts - s->measured_iter < UB_SCHED_TRACED ? s->n_starts - s->measured_iter : UB_SCHED_TRACED;
    double wait = ub_verify_executor_wait(ready, nb, s->sp.n_blocks, &s->iter_start[s->measured_iter], s->block_start,
                                          s->block_end, slots);
    free(ready);
    return wait;
}

void ub_exec_drain(ub_comm *c)
{
    if (c->sched.ready)
        UB_CUDA(ub_cuda.cudaStreamSynchronize(c->sched.priv));
}

void ub_exec_release(ub_comm *c, bool wait)
{
    ub_sched_rt *s = &c->sched;
    s->ready = false;
    if (!wait) {
        /* Nothing may wait for device work here (a dead peer's collectives never complete): the
         * device resources are left to the process's end (cudaFree could synchronise behind
         * those collectives). */
        ub_timing_discard(&s->tm);
        return;
    }
    if (s->priv)
        UB_CUDA(ub_cuda.cudaStreamSynchronize(s->priv));
    ub_timing_stop(&s->tm);
    for (int k = 0; k < s->n_ready; k++)
        UB_CUDA(ub_cuda.cudaEventDestroy(s->ready_ev[k]));
    if (s->staging)
        UB_UNSAFE(ub_cuda.cudaFree(s->staging));
    for (int i = 0; i < s->n_retired_staging; i++)
        UB_UNSAFE(ub_cuda.cudaFree(s->retired_staging[i]));
    s->n_retired_staging = 0;
    if (s->priv)
        UB_CUDA(ub_cuda.cudaStreamDestroy(s->priv));
    /* The measured block times stay for the report. */
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
    s->priv = NULL;
    s->n_ready = 0;
    s->staging_cap = 0;
}
