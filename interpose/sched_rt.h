/* Schedule mode's per-communicator and per-stream state (docs/design.md, docs/runtime.md), kept in
 * ub_comm and ub_stream.  defer.c owns the plan cursor (which call this is, what arrived, what
 * the arrival issues, deviations and flushes), exec.c the private stream, the staging buffer and
 * the readiness events, redirect.c the application's events (pending until the block that
 * completes them is issued) and the host waits. */
#ifndef USBYTE_SCHED_RT_H
#define USBYTE_SCHED_RT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "timing.h"
#include "usbyte/plan.h"
#include "usbyte/schedule.h"

/* This iteration's arguments of one deferred call (never the profile's: DDP reallocates its
 * buckets when it rebuilds them). */
typedef struct ub_call_args {
    const void *send;
    void *recv;
    size_t count;
    int dtype, op;           /* ncclDataType_t, ncclRedOp_t */
    cudaStream_t stream;
} ub_call_args;

/* Steady iterations whose blocks are timed, from measured_iter on: the report's "blocks" are the
 * first, its recording (the trace) all of them. */
#define UB_SCHED_TRACED 8

/* Iteration start times kept for the measured iteration (backward start to backward start). */
#define UB_SCHED_MAX_MEASURED 4096

typedef struct ub_sched_rt {
    bool ready;              /* set up at planning time: the executor exists */
    atomic_int issuing;      /* the issuing thread is issuing blocks without the lock */
    bool live;               /* counted in ub_sched_live (from the first switch to the end) */
    ub_plan plan;            /* the chosen plan, validated against the profile */
    ub_sched sp;             /* its cursor tables */
    bool stream_semantics;   /* USBYTE_COMPLETION as agreed */
    uint32_t period;         /* NCCL calls per iteration */
    uint64_t *pos_sig;       /* per position: the portable signature expected there */
    int *pos_call;           /* per position: the allreduce index, -1 for another call */
    bool active;             /* following the plan (false: pass-through until an iteration start) */
    bool bypass;             /* this iteration passes through as verification asked (verify.h) */
    uint64_t next_call;      /* call index of the next call (the switch's is agree_at + period) */
    uint32_t pos;            /* position of the next call in the iteration */
    cudaStream_t asked;      /* the stream last asked whether it captures, in this iteration */
    uint32_t idle_calls;     /* calls since the last deviation (or the last count of one) without the plan resuming */
    int arrived;             /* allreduces of this iteration deferred so far */
    int next_block;          /* first block of this iteration not yet issued */
    /* Block values: block b of the iteration whose base is `base` has value base + b + 1; the
     * base grows by the plan's block count every iteration (flushed or not) and never goes back,
     * a new plan included, so that a value names one block for the communicator's whole life. */
    uint64_t base;
    uint64_t issued;         /* the highest block value enqueued on the private stream */
    ub_call_args *args;      /* per call */
    cudaEvent_t *ready_ev;   /* R_k: recorded on the caller's stream at call k when needed */
    int n_ready;             /* readiness events made (ub_exec_reserve, before the agreement) */
    uint64_t *ready_stamp;   /* per call: base + 1 of the iteration whose R_k is recorded */
    cudaStream_t priv;       /* non-blocking, highest priority */
    int device;
    void *staging;
    uint64_t staging_cap;    /* its size, reserved before the agreement */
    /* Smaller staging buffers of earlier agreements, replaced by a larger one for a later period
     * (a re-detection finds the real iteration after a shorter one): freed when the executor is
     * released, never before (a cudaFree could wait behind collectives). */
#define UB_EXEC_RETIRED_STAGING 4
    void *retired_staging[UB_EXEC_RETIRED_STAGING];
    int n_retired_staging;
    uint64_t staging_bytes;  /* what the plan uses of it */
    /* A merged block's copies in and out of staging, one cudaMemcpyBatchAsync each way where
     * the runtime has it with CUDA 13's signature; room for the plan's largest block. */
    bool batch_copies;
    void **batch_dst;
    const void **batch_src;
    size_t *batch_size;
    /* Completion (redirect.c): the application's events waiting for blocks not yet issued, in
     * order of the block value that completes them; the completion stream and the events that
     * tie an event to a block and to its stream's progress when the private stream alone
     * cannot (the stream had other work since its last deferred call). */
    struct ub_event *pending, *pending_tail;
    int n_pending;
    cudaStream_t comp;
    cudaEvent_t block_done;  /* re-recorded on the private stream after a block, on demand */
    cudaEvent_t iter_done;   /* recorded on the private stream after each iteration's last block */
    uint64_t iter_done_value;
    cudaEvent_t *spare;      /* progress events free for reuse */
    int n_spare, cap_spare;
    int consecutive_deviations;
    /* host cost: CUDA calls made by the process (ub_cuda_calls) since the first switch to the
     * plan, and the allreduces deferred since then */
    bool counting;
    unsigned long long cuda_calls_at_begin;
    uint64_t deferred_calls;
    /* report */
    uint64_t iterations, deviations, flushes;
    /* The last flush was the end's (destroy or finalize mid-iteration of the plan): which
     * iteration of the program the plan's iteration ends at depends on the agreed phase. */
    bool ended_mid_iteration;
    /* Host waits of the issuing thread on deferred calls that the plan did not expect: they
     * change nothing that is issued (docs/design.md section 3); the first one is told. */
    uint64_t unexpected_waits;
    bool unexpected_told;
    double predicted_iteration, predicted_wfbp, predicted_other_completion;
    char completion_note[300];  /* what the other completion semantics would give, or why refused */
    ub_timing tm;            /* timing events of the measurement (never read blocking) */
    double iter_start[UB_SCHED_MAX_MEASURED];
    int run_of[UB_SCHED_MAX_MEASURED]; /* consecutive iterations share a run id */
    int n_starts, run;
    int measured_iter;       /* index (in iter_start) of the iteration whose blocks are timed, -1 */
    double *block_start, *block_end;  /* UB_SCHED_TRACED x n_blocks, timing epoch seconds */
} ub_sched_rt;

/* Per application stream that carried deferred calls. */
typedef struct ub_stream_sched {
    void *comm;              /* ub_comm whose calls were deferred on this stream */
    uint64_t need_value;     /* every deferred call so far complete (stream semantics, host waits) */
    uint64_t last_value;     /* the latest deferred call complete (call semantics) */
    int last_call;           /* that call (diagnostics) */
    /* The application enqueued work on the stream (a stream wait) since its last deferred call:
     * an event recorded now must also wait for the stream's own progress. */
    bool dirty;
    /* Every deferred call of the stream is known to be complete on the device: its records are
     * the stream's own again, until the next deferred call. */
    bool settled;
} ub_stream_sched;

#endif
