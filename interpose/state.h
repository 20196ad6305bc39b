/* Per-communicator and per-stream state of the runtime, and the communicator's life cycle
 * (DESIGN.md section 1), designed for schedule mode (next issue):
 *
 *   DETECT --lock--> PROFILE --USBYTE_WARMUP iterations--> AGREE --unanimous--> PLANNED
 *     ^                 |                                    |                   (observe: done;
 *     +---deviation-----+                                    +--mismatch--> PASS_THROUGH   schedule
 *                                                                                 mode: SCHEDULE)
 *   DISABLED: never observed again (nonblocking communicator, setup failure, destroyed).
 *
 * Every transition that changes what is issued to NCCL (only AGREE, in this issue) happens at a
 * call index derived from the portable call sequence (the detector's lock and phase plus the
 * warm-up count), never from timing.  All state is guarded by one process-wide mutex, which is
 * never held across a real NCCL call. */
#ifndef USBYTE_STATE_H
#define USBYTE_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <uthash.h>

#include "timing.h"
#include "usbyte/iteration.h"
#include "usbyte/record.h"
#include "usbyte/report.h"
#include "usbyte/signature.h"

#define UB_COMM_STATE_LIST(X)          \
    X(DETECT, "detect")                \
    X(PROFILE, "profile")              \
    X(AGREE, "agree")                  \
    X(PLANNED, "planned")              \
    X(SCHEDULE, "schedule")            \
    X(PASS_THROUGH, "pass-through")    \
    X(DISABLED, "disabled")

typedef enum {
#define X(e, name) UB_COMM_##e,
    UB_COMM_STATE_LIST(X)
#undef X
} ub_comm_state;

const char *ub_comm_state_name(ub_comm_state s);

typedef struct ub_comm ub_comm;

/* A CUDA stream the runtime cares about: an NCCL stream of a communicator being profiled.
 * Schedule mode adds its completion stream and the deferred calls' counters here. */
typedef struct ub_stream {
    cudaStream_t handle;
    ub_comm *comm;
    /* The latest upstream wait of this stream (a timing event that completes when the producer's
     * data is ready), not yet filed: it is the ready time of the allreduces that follow it, up to
     * the next wait (a layer's several tensors share one producer event). */
    cudaEvent_t ready_ev;
    int ready_it, ready_first, ready_n;
    UT_hash_handle hh;
} ub_stream;

/* An application event usbyte knows while some communicator profiles:
 *  - recorded on an NCCL stream after a profiled call (comm != NULL): waiting on it is waiting on
 *    that call's completion;
 *  - recorded elsewhere (a producer's event): `companion` is our timing event recorded right
 *    after it on the same stream, so a later cudaStreamWaitEvent(S, event) knows exactly when
 *    the producer's data was ready, whatever the host's delay in issuing the wait. */
typedef struct ub_event {
    cudaEvent_t handle;
    ub_comm *comm;
    int iteration;
    int call;
    cudaEvent_t companion;
    UT_hash_handle hh;
} ub_event;

struct ub_comm {
    ncclComm_t handle;
    UT_hash_handle hh;
    int index;
    int rank, nranks;
    bool nonblocking;
    ub_comm_state state;
    char reason[256];

    ub_iterdet *det;
    uint32_t period;
    uint64_t profile_start;   /* call index of the first profiled iteration */
    uint64_t agree_at;        /* call index of the agreement (first call after the warm-up) */
    uint64_t iterations_observed;
    int deviations;
    unsigned long issuer;     /* thread that issues this communicator's calls (pthread_t) */

    /* warm-up */
    ub_record rec;
    ub_timing tm;
    int *pos_call;            /* position in the period -> allreduce index, -1 other calls */
    ub_seqhash seq;
    int n_ar;                 /* allreduces per iteration */
    int other_calls;
    int cur_iter, cur_call;   /* latest profiled allreduce */
    bool *has_end_event;      /* per allreduce of the iteration: an event was recorded right after it */
    cudaStream_t last_need_stream;     /* the previous stream wait on a call's completion, */
    unsigned long long last_need_work; /* and the CUPTI work count at that moment */
    bool cupti_held;
    bool end_records;
    int consumers_stream, consumers_host;
    double stream_ordered;
    char stream_ordered_example[80];

    ub_comm_report report;
};

/* Called from runtime.c. */
void ub_state_forget_in_child(void);
void ub_state_write_reports_at_exit(void);

/* CUPTI (cupti_watch.c): reference-counted subscription while some communicator profiles. */
bool ub_cupti_acquire(char *detail, size_t len);  /* false: unavailable, detail says why */
void ub_cupti_release(void);
/* Called by the CUPTI callback for stream-ordered work on `stream` (global lock not held). */
void ub_state_stream_work(cudaStream_t stream, const char *what);
/* Compute operations (kernels, host functions) CUPTI saw on any stream while subscribed. */
extern atomic_ullong ub_work_count;

/* agree_rt.c: the agreement and planning at the agreement call; called with the global lock
 * held, returns with it held. */
void ub_comm_agree(ub_comm *c);
void ub_state_lock(void);
void ub_state_unlock(void);
void ub_state_write_reports(void);
/* Every communicator seen since the start (destroyed ones included), for the report. */
ub_comm **ub_state_all_comms(int *n);
void ub_comm_stop_profiling(ub_comm *c);
/* Files every stream's pending upstream timing event of c (before the blocking poll). */
void ub_comm_file_ready(ub_comm *c);

#endif
