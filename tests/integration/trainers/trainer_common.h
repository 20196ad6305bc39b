/* What the three framework-shaped trainers share: command line, the model taken from a docs/model.md
 * profile, simulated compute on a "compute" stream, parameters and SGD, the checksum and the
 * truth file.
 *
 * The trainers are plain CUDA runtime + NCCL programs.  Everything they do is legal on a real GPU:
 * host functions only touch pinned host memory, and device buffers are filled and read with
 * stream-ordered copies.  Simulated compute is a host function that sleeps; gradients are a
 * deterministic, rank- and iteration-dependent pattern computed by a host function into pinned memory and copied
 * to the device on the compute stream, so the result of a run depends only on the NCCL results,
 * never on timing.
 *
 * Timing: the gradients are computed at the start of the forward pass (overlapping its compute);
 * every host function that closes a backward layer sleeps until
 * backward_start + ready * time_scale (an absolute deadline, so delays do not accumulate), which
 * makes the ready times seen on the device those of the profile, scaled. */
#ifndef TRAINER_COMMON_H
#define TRAINER_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <cuda_runtime_api.h>
#include <jansson.h>
#include <nccl.h>

#include "usbyte/profile.h"

#define CUDA_CHECK(expr) tr_cuda_check((expr), #expr, __FILE__, __LINE__)
#define NCCL_CHECK(expr) tr_nccl_check((expr), #expr, __FILE__, __LINE__)
void tr_cuda_check(cudaError_t err, const char *what, const char *file, int line);
void tr_nccl_check(ncclResult_t res, const char *what, const char *file, int line);
/* Prints "<trainer> rank R: message" to stderr and exits 1. */
void tr_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Options a trainer accepts besides the common ones (a bit mask). */
enum {
    TR_OPT_BUCKETS = 1 << 0,   /* --bucket-cap-mb, --first-bucket-mb */
    TR_OPT_FUSION = 1 << 1,    /* --fusion-threshold-mb, --cycle-time-ms, --host-finalizer, --postscale */
    TR_OPT_MISMATCH = 1 << 2,  /* --mismatch-rank, --bcast-rank, --group-rank */
    TR_OPT_WATCHDOG = 1 << 3,  /* --watchdog-ms */
};

/* Iterations the host may enqueue ahead of the device (a training loop that logs the loss of an
 * earlier step, or a caching allocator that runs out, bounds this in real frameworks). */
#define TR_HOST_AHEAD 2
/* Iterations in the "last iterations" mean (tr_print_checksum). */
#define TR_TAIL 10

typedef struct tr_options {
    const char *profile;
    int iters;
    double time_scale;
    double bytes_scale;
    const char *print_truth;   /* NULL: none; "%r" replaced by the rank */
    double bucket_cap_mb;      /* DDP's bucket_cap_mb (unscaled: multiplied by bytes_scale) */
    double first_bucket_mb;    /* DDP's first bucket after the rebuild (unscaled) */
    double fusion_threshold_mb;/* HOROVOD_FUSION_THRESHOLD in MB (unscaled); 0 turns fusion off */
    double cycle_time_ms;      /* HOROVOD_CYCLE_TIME in ms of profile time (unscaled) */
    bool host_finalizer;       /* Horovod's finalizer thread waits on the host */
    bool postscale;            /* Horovod averaging without ncclAvg: a scale kernel after each allreduce */
    int mismatch_rank;         /* -1: none */
    int bcast_rank;            /* -1: none */
    int group_rank;            /* -1: none */
    int watchdog_ms;           /* poll period of the watchdog thread, 0: none */
    int stall_rank, stall_from, stall_to; /* --stall R,I,J,MS: rank R's forwards of iterations I..J take MS longer (-1: none) */
    double stall_ms;
} tr_options;

/* One parameter tensor = one call of the profile, in arrival (backward) order. */
typedef struct tr_tensor {
    const char *name;
    size_t count;      /* float32 elements */
    size_t offset;     /* elements into the flat parameter / gradient arrays */
    double ready;      /* profile seconds since backward start (unscaled) */
    int need;
    int layer;
} tr_tensor;

/* Consecutive tensors with the same ready time: produced by one backward host function. */
typedef struct tr_layer {
    int first, n;
    double ready;
    size_t offset, count;     /* the layer's elements in the flat arrays */
    struct trainer *tr;
} tr_layer;

/* A contiguous range of tensors whose gradients are applied by one SGD host function. */
typedef struct tr_range {
    struct trainer *tr;
    size_t offset, count;     /* elements */
} tr_range;

typedef struct trainer {
    const char *name;
    tr_options opt;
    int rank, world, local_rank;
    ub_profile prof;
    int n_tensors, n_layers;
    tr_tensor *tensors;
    tr_layer *layers;
    size_t total;             /* elements of all tensors */
    float *h_param;           /* pinned: the parameters (updated by host SGD on the compute stream) */
    float *h_grad_stage;      /* pinned: gradients computed by the backward host functions */
    float *h_grad_out;        /* pinned: reduced gradients copied back for SGD */
    float *d_grad;            /* device: the flat gradient array (param.grad of every tensor) */
    cudaStream_t compute;     /* the framework's compute stream */
    ncclComm_t comm;
    cudaEvent_t iter_done[TR_HOST_AHEAD + 1];
    /* Stream-ordered state: written and read only by host functions of the compute stream. */
    int iter;                 /* iteration being computed (incremented by the backward start) */
    struct timespec backward_t0;
    struct timespec forward_t0;
    double iter_seconds_sum;  /* backward start to backward start, iterations >= 2 */
    int iter_seconds_n;
    double tail_seconds[TR_TAIL]; /* the last TR_TAIL of them (a library's steady state) */
    int tail_n;
    double late_sum, late_max;  /* how late layer host functions woke after their deadline */
    long late_n;
    double forward_scaled;    /* total forward seconds (barrier), scaled */
    double *segment_scaled;   /* forward[s] scaled */
    /* Actual ready times (tr_record_ready), index it * n_marks + slot, CLOCK_MONOTONIC seconds,
     * NaN when not reached: mark_t when the compute stream passed the work right before the event
     * (written by a host function), before_t / after_t when the host called and returned from
     * cudaEventRecord (written by the recording thread). */
    int n_marks;
    int host_iter;            /* backwards enqueued so far (host side) */
    double *mark_t, *before_t, *after_t;
    struct tr_mark *mark_args;
} trainer;

/* The argument of one mark's host function. */
typedef struct tr_mark {
    struct trainer *tr;
    int slot;
} tr_mark;

/* Parses the command line (exits 2 with a usage line on a bad option), reads RANK/WORLD_SIZE/
 * LOCAL_RANK, loads the profile, builds tensors and layers, allocates memory, creates the
 * compute stream and the communicator. */
void tr_init(trainer *tr, const char *name, unsigned accepted, int argc, char **argv);
/* Makes LOCAL_RANK's device current for the calling thread (each thread has its own). */
void tr_bind_device(const trainer *tr);
void tr_finish(trainer *tr);   /* frees everything, destroys the communicator */

/* Compute-stream work.  A forward starts with tr_enqueue_forward_start (it also computes the
 * gradients of the coming backward); a one-segment forward then ends with
 * tr_enqueue_forward_barrier (sleeps until forward start + the whole forward time). */
void tr_enqueue_forward_start(trainer *tr);
void tr_enqueue_forward_barrier(trainer *tr);
void tr_enqueue_backward_start(trainer *tr);
void tr_enqueue_layer(trainer *tr, int layer);   /* sleep to the layer's deadline, copy H2D */
void tr_enqueue_sleep(trainer *tr, cudaStream_t stream, const double *seconds);
/* Actual ready times.  The layers' host functions wake when the machine lets them (under load,
 * milliseconds after their deadline), and the host may record an event after the stream got
 * there (a host thread preempted while the stream is idle), so the planned schedule is not when a
 * call's data is really available.  tr_record_ready(tr, slot, ev) records `ev` on the compute
 * stream (the event a call's upstream wait is on) and notes when the stream passed the work right
 * before it (a host function) and when the host called and returned from cudaEventRecord.  The
 * event completes at L = max(stream, call) (plus the emulator's microseconds); an observer that
 * records its own event right after ours inside cudaEventRecord (usbyte's companion) sees at most
 * H = max(stream, return).  H == L when the host is ahead of the stream, as it normally is.
 * Call tr_marks_init(tr, n) once, after tr_init and before the first iteration: slots 0..n-1. */
void tr_marks_init(trainer *tr, int n_marks);
void tr_record_ready(trainer *tr, int slot, cudaEvent_t ev);
/* End of iteration t on the host: records its completion on the compute stream and waits until
 * the device has finished iteration t - TR_HOST_AHEAD. */
void tr_end_iteration(trainer *tr, int t);
/* Copies the reduced gradients of the range back to the host and applies SGD to them. */
void tr_enqueue_apply(trainer *tr, cudaStream_t stream, const tr_range *range);
tr_range tr_range_of(trainer *tr, int first_tensor, int n_tensors);

double tr_scaled(const trainer *tr, double profile_seconds);
size_t tr_scaled_bytes(const trainer *tr, double profile_mb);   /* rounded to whole floats, >= 4 */

/* "iteration <ms> ms ..." (mean time from one backward start to the next, from the third
 * iteration on, as docs/model.md defines an iteration), "last-iterations <ms> ms ..." (the same over
 * the last TR_TAIL: a preloaded library's steady state, after its warm-up) and "checksum <16 hex
 * digits>" over the parameters and `extra` (may be NULL) on stdout. */
void tr_print_checksum(trainer *tr, const void *extra, size_t extra_bytes);

/* Truth: {"trainer", "rank", "world_size", "time_scale", "bytes_scale", "profile": {docs/model.md profile
 * of a steady iteration, times scaled and relative to the first call's ready}, ...}.
 * tr_truth_profile builds that profile from per-call bytes, ready (unscaled profile seconds) and
 * need; the trainer adds its own keys and calls tr_truth_write. */
json_t *tr_truth_new(trainer *tr);
void tr_truth_set_profile(trainer *tr, json_t *truth, int n_calls, const uint64_t *bytes,
                          const double *ready, const int *need, int n_forward,
                          const double *forward_unscaled);
/* "actual_ready" and "actual_ready_by": one entry per iteration, null when a slot of it is
 * missing (DDP's iteration 0 issues other calls), else the per-call offsets L_k - L_0 and
 * H_k - L_0 in seconds (k's slot is slot_of_call[k]; call 0's L is the origin, as in a measured
 * profile).  Call after the last iteration's compute-stream work has completed
 * (tr_print_checksum synchronizes). */
void tr_truth_set_actual_ready(trainer *tr, json_t *truth, int n_calls, const int *slot_of_call);
void tr_truth_write(trainer *tr, json_t *truth);   /* steals truth; no-op without --print-truth */

#endif
