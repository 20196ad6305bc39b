/* Per-communicator and per-stream state of the runtime, and the communicator's life cycle
 * (docs/design.md section 1):
 *
 *   DETECT --lock--> PROFILE --USBYTE_WARMUP iterations--> AGREE --unanimous--> PLANNED
 *     ^                 |                                    |                    | at agree_at + period,
 *     +---deviation-----+                                    |                    | schedule mode:
 *     +---period refuted by the buffers / too many deviations in SCHEDULE ---- SCHEDULE
 *                                                            +--mismatch, not schedulable--> PASS_THROUGH
 *   DISABLED: never observed again (nonblocking communicator, out of memory, destroyed).
 *   A warm-up set-up failure (recorder, timing events) is rank-local: it does not disable (the
 *   others would issue the agreement alone) but sets local_failure; the rank takes part without
 *   numbers and every rank goes to PASS_THROUGH.
 *
 * Every transition that changes what is issued to NCCL (the agreement at agree_at, the switch to
 * the plan at agree_at + period, deviations, restarts) happens at a call index derived from the
 * portable call sequence and the agreed outcome, never from timing.
 *
 * Locking.  All of this state is guarded by one process-wide mutex (tables.c, ub_state_mutex);
 * the few other mutexes are leaves below it (lock_contract.h gives their order).  Each function's
 * declaration says what it needs (UB_REQUIRES, or UB_REQUIRES_UNLOCKS when it releases the lock
 * meanwhile) or takes (UB_EXCLUDES), and clang checks it (tests/locks/).
 * - It is never held across a real NCCL call (UB_NCCL stops the process if it would be): NCCL may
 *   block for as long as its peers take, and other threads' hooks need the lock meanwhile.
 * - CUDA calls made with it held go through UB_CUDA: the reentrancy guard makes a CUPTI callback
 *   they trigger on this thread return at once, so no callback takes the lock again.  CUDA's own
 *   locks are therefore always taken after this one, never before.
 * - A wait for another thread (a pending event, deferred calls not yet issued) releases it
 *   (ub_state_wait); so does the agreement's issue and planning.
 *
 * This header holds the records only (with the sub-records of sched_rt.h, verify_rt.h and
 * timing.h); the functions are declared by their files' headers (tables.h, group.h, warmup.h,
 * agree_rt.h, decide.h, report_rt.h, verify.h, cupti.h, lifecycle.h, cuda_hooks.h). */
#ifndef USBYTE_STATE_H
#define USBYTE_STATE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <uthash.h>

#include "sched_rt.h"
#include "calibrate_rt.h"
#include "timing.h"
#include "verify_rt.h"
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
 * Schedule mode adds the deferred calls' completion here (sched_rt.h). */
typedef struct ub_stream {
    cudaStream_t handle;
    ub_comm *comm;
    /* The latest upstream wait of this stream (a timing event that completes when the producer's
     * data is ready), not yet filed: it is the ready time of the allreduces that follow it, up to
     * the next wait (a layer's several tensors share one producer event). */
    cudaEvent_t ready_ev;
    int ready_it, ready_first, ready_n;
    ub_stream_sched sch;     /* schedule mode: deferred calls on this stream and their completion */
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
    /* Schedule mode (redirect.c).  pending: the application recorded the event on a stream with
     * deferred calls whose blocks are not all issued yet, so nothing is recorded on it yet; it
     * is recorded (materialized) once the block of value sched_value is issued.  progress: an
     * event recorded on that stream at the application's record when the stream had other work
     * since its last deferred call (NULL otherwise). */
    bool pending;
    ub_comm *sched_comm;
    uint64_t sched_value;
    int sched_call;
    cudaStream_t sched_stream;
    cudaEvent_t progress;
    struct ub_event *pnext, *pprev;  /* sched_comm's pending list, by sched_value */
    double first_poll;       /* the issuing thread's first query of it while pending (0: none) */
    bool warned;             /* the query loop's diagnostic was printed */
    UT_hash_handle hh;
} ub_event;

/* The configuration agreement of a communicator (agree_config.c, its only writer): one
 * fixed-size collective at its first lock, read at the first call of the warm-up. */
typedef struct ub_cfg_agreement {
    double *host;          /* pinned: this rank's vector, then the combined one */
    void *dev;
    cudaStream_t stream;   /* private: issued there */
    cudaEvent_t done;      /* recorded after the copy back */
    bool issued;           /* at the first lock (once per communicator) */
    bool copy_pending;     /* issued inside a group: the copy back waits for its launch */
    unsigned long thread;  /* the thread whose group holds it */
    bool read;             /* its result was read (never, for USBYTE_MODE=off) */
} ub_cfg_agreement;

struct ub_comm {
    ncclComm_t handle;
    UT_hash_handle hh;
    int index;
    int rank, nranks;
    int device;               /* ncclCommCuDevice: where its streams, events and buffers live */
    bool nonblocking;
    ub_comm_state state;
    char reason[256];
    /* This rank's own work on the communicator failed after the other ranks were committed to it
     * (an enqueue refused, memory not had): every later call returns this without reaching NCCL,
     * as NCCL answers a communicator in error (ub_comm_set_failed, tables.c). */
    ncclResult_t failed;
    bool failure_reported;    /* the reports were written when the application first heard of it (lifecycle.c) */

    ub_iterdet *det;
    uint32_t period;
    uint64_t profile_start;   /* call index of the first profiled iteration */
    uint64_t agree_at;        /* call index of the agreement (first call after the warm-up) */
    uint64_t iterations_observed;
    int deviations;
    unsigned profile_gen;     /* counts warm-up starts (ub_warmup_start): a deferred mark of an older
                                 warm-up is dropped */
    unsigned long issuer;     /* thread that issues this communicator's calls (pthread_t) */
    /* lifecycle.c: why this rank cannot follow a plan, seen in its calls (its issuing thread also
     * issues another rank's calls of its clique; its stream carries another communicator's
     * calls), or empty; it goes into the agreement as local_failure. */
    char refusal[160];

    /* warm-up */
    ub_record rec;
    ub_timing tm;
    int *pos_call;            /* position in the period -> allreduce index, -1 other calls */
    uint64_t *pos_sig;        /* position in the period -> portable signature */
    const void **pos_buf;     /* position -> send and recv buffers of the first profiled iteration */
    bool period_refuted;      /* this rank: some allreduce's buffers differ one period later */
    bool refuted;             /* agreed: the period is refuted; detection restarts at agree_at + period */
    uint32_t min_period;      /* the detector's shortest period: past a period refuted by the buffers */
    uint32_t addr_period;     /* agreed: the full signatures' period (0: the ranks differ or none) */
    uint32_t phase_pos;       /* agreed: the profiled iteration began mid-backward; the true one
                                 begins this many calls after the lock's (ub_iteration_phase) */
    bool rephased;            /* this lock's warm-up was already moved to its true start once */
    bool agree_again;         /* agreed: some rank had no complete iteration; the agreement is issued
                                 again at agree_at + period, from the same warm-up */
    int agree_tries;          /* agreements of this warm-up that found no complete iteration */
    ub_iterdet *det_full;     /* rank-local: the same detector on full signatures (buffers included) */
    cudaStream_t nccl_stream; /* stream of the first profiled allreduce */
    bool multi_stream;        /* allreduces on more than one stream */
    bool legacy_stream;       /* an allreduce on the legacy or a per-thread default stream */
    bool blocking_stream;     /* an allreduce on a blocking stream, which the legacy stream waits for */
    bool p2p;                 /* point-to-point calls in the period */
    double copy_t0, copy_t1;  /* the staging copy timed in the first warm-up (timing epoch
                                 seconds; NAN until read) */
    bool copy_probed;         /* that copy was issued (once per communicator) */
    void *copy_buf;           /* its device buffers */
    ub_seqhash seq;
    int n_ar;                 /* allreduces per iteration */
    int other_calls;
    int cur_iter, cur_call;   /* latest profiled allreduce */
    bool *has_end_event;      /* per allreduce of the iteration: an event was recorded right after it */
    cudaStream_t last_need_stream;     /* the previous stream wait on a call's completion, */
    unsigned long long last_need_work; /* and the CUPTI work count at that moment */
    bool cupti_held;
    bool cupti_taken;         /* another CUPTI subscriber held CUPTI, or took it, during the warm-up */
    bool end_records;
    bool stream_host_waits;   /* cudaStreamSynchronize/Query of the NCCL stream (seen: not a static runtime) */
    int consumers_stream, consumers_host;
    double stream_ordered;    /* stream-ordered operations on the NCCL stream, */
    double stream_compute;    /* of which compute (kernels, graphs, host functions, callbacks) */
    double stream_copies;     /* and copies, memsets and memory writes */
    char stream_ordered_example[80];

    /* The agreement (agree_rt.c): issued at agree_at whatever the group nesting, read later. */
    double *agree_host;        /* pinned: max vector, then sum vector (UB_AGREE_*_LEN) */
    void *agree_dev;           /* the same on the device: the collectives run in place */
    cudaEvent_t agree_done;    /* recorded on tm.agree after the copy back to agree_host */
    bool agree_issued;         /* this warm-up's collectives were issued and not read yet (each
                                  such communicator counts once in agree_rt.c's unread count) */
    bool agree_copy_pending;   /* issued inside a group: the copy back waits for its ncclGroupEnd */
    unsigned long agree_thread;/* the thread whose group holds them */
    char local_failure[160];   /* rank-local: why this rank has no numbers (still takes part) */
    char exec_failure[240];    /* rank-local: why its executor could not be reserved (still takes part) */
    uint64_t staging_agreed;   /* agreed: the staging bytes every rank holds, the planner's limit */
    bool watching;             /* counted in ub_cuda_tracking, CUPTI held: the warm-up's CUDA hooks */
    int consumers_host_other;  /* host waits from threads that do not issue the calls (ignored) */

    ub_comm_report report;
    ub_cfg_agreement cfg_agree; /* the configuration agreement at the first lock (agree_config.c) */
    ub_sched_rt sched;        /* schedule mode (defer.c, exec.c, redirect.c) */
    ub_verify_rt verify;      /* schedule mode's verification against pass-through (verify.c) */
    ub_calib_rt calib;        /* schedule mode's calibration before the switch (calibrate.c) */
    atomic_bool ending;       /* ncclCommDestroy/Abort/Finalize reached it (read by waits without the lock) */
    atomic_bool aborted;      /* ncclCommAbort/Revoke reached it: nothing may be issued on it any more */
    atomic_int peer_error;    /* ncclResult_t: NCCL's asynchronous error seen by a wait of the runtime */
    bool issuing_agreement;   /* a thread is in ub_comm_agree_issue without the lock, using the warm-up's record */
};

/* Agreements issued again, one iteration apart, while some rank has no warm-up iteration whose
 * timing has completed (the device behind the host), before the communicator goes to pass-through. */
#define UB_MAX_AGREE_TRIES 8

/* The detector's min_span (usbyte/iteration.h): a repeating region of 16 calls before a lock. */
#define UB_MIN_SPAN 16u

#endif
