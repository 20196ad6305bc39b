/* Schedule mode's per-communicator and per-stream state (DESIGN.md sections 1, 3 and 6), kept in
 * ub_comm and ub_stream.  defer.c owns the plan cursor (which call this is, what arrived, what
 * the arrival issues, deviations and flushes), exec.c the private stream, the staging buffer and
 * the completion counter, redirect.c the completion streams and the host waits. */
#ifndef USBYTE_SCHED_RT_H
#define USBYTE_SCHED_RT_H

#include <stdbool.h>
#include <stdint.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

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
    bool live;               /* counted in ub_sched_live (from the first switch to the end) */
    ub_plan plan;            /* the chosen plan, validated against the profile */
    ub_sched sp;             /* its cursor tables */
    bool stream_semantics;   /* USBYTE_COMPLETION as agreed */
    uint32_t period;         /* NCCL calls per iteration */
    uint64_t *pos_sig;       /* per position: the portable signature expected there */
    int *pos_call;           /* per position: the allreduce index, -1 for another call */
    bool active;             /* following the plan (false: pass-through until an iteration start) */
    uint32_t pos;            /* position of the next call in the iteration */
    int arrived;             /* allreduces of this iteration deferred so far */
    int next_block;          /* first block of this iteration not yet issued */
    uint64_t base;           /* counter base of this iteration */
    uint64_t issued;         /* highest counter value whose block is enqueued */
    uint64_t waited;         /* highest counter value a completion stream waits for */
    ub_call_args *args;      /* per call */
    cudaEvent_t *ready_ev;   /* R_k: recorded on the caller's stream at call k when needed */
    uint64_t *ready_stamp;   /* per call: base + 1 of the iteration whose R_k is recorded */
    cudaStream_t priv;       /* non-blocking, highest priority */
    int device;
    void *staging;
    uint64_t staging_bytes;
    /* A merged block's copies in and out of staging, one cudaMemcpyBatchAsync each way where
     * the runtime has it with CUDA 13's signature; room for the plan's largest block. */
    bool batch_copies;
    void **batch_dst;
    const void **batch_src;
    size_t *batch_size;
    uint64_t *counter_host;  /* pinned, mapped: written by the private stream */
    CUdeviceptr counter_dev;
    int consecutive_deviations;
    /* report */
    uint64_t iterations, deviations, flushes;
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
#define UB_COMPLETION_STREAMS 8
typedef struct ub_stream_sched {
    void *comm;              /* ub_comm whose calls were deferred on this stream */
    uint64_t need_value;     /* every deferred call so far complete (stream semantics, host waits) */
    uint64_t last_value;     /* the latest deferred call complete (call semantics) */
    int last_call;           /* that call (diagnostics) */
    cudaEvent_t progress;    /* re-recorded on the stream at each redirection */
    cudaEvent_t host_ev;     /* host waits on deferred work */
    cudaStream_t comp[UB_COMPLETION_STREAMS];
    uint64_t comp_value[UB_COMPLETION_STREAMS];
    int n_comp;
} ub_stream_sched;

#endif
