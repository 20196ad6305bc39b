/* Schedule mode's verification record in a communicator (state.h), written by verify.c only
 * (verify.h); the records only, so that state.h can hold it without including verify.c's
 * functions. */
#ifndef USBYTE_VERIFY_RECORD_H
#define USBYTE_VERIFY_RECORD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "timing.h"
#include "usbyte/plan.h"
#include "usbyte/verify.h"

typedef struct ub_verify_rt {
    bool on;                 /* verification runs for the current plans (agreed settings) */
    int n_candidates;
    ub_plan plans[UB_VERIFY_MAX_CANDIDATES];   /* in order of prediction */
    double predicted[UB_VERIFY_MAX_CANDIDATES];
    int trying;              /* candidate of the running window */
    int kept;                /* candidate kept, -1: pass-through (or nothing decided yet) */
    int loaded;              /* candidate whose plan the cursor holds */
    int window;              /* iteration of the running window, -1: none (the kept side runs) */
    uint64_t since_check;    /* iterations since the latest decision */
    ub_timing tm;            /* the window's iteration starts (never read blocking) */
    double start[UB_VERIFY_MARKS];   /* timing epoch seconds, NAN until read */
    bool spoiled[UB_VERIFY_MARKS];   /* a deviation in that iteration: its length is not measured */
    double *host;            /* pinned: the vector, then the agreed vector */
    void *dev;               /* the same on the device (the collective runs in place) */
    cudaEvent_t done;        /* recorded on the private stream after the copy back */
    bool issued;             /* this window's collective is out and not read */
    atomic_int issuing;      /* the issuing thread enqueues it without the lock right now */
    bool check_begun;        /* a check began: its first verdict replaces the previous check's reason */
    /* The agreed durations of the judged candidate's blocks (NAN: not timed), for the
     * re-fit that a keep or a drop asks for (refit_from: that candidate, -1: none asked); once per
     * check. */
    double block_seconds[UB_VERIFY_BLOCKS];
    int n_block_seconds;
    double block_wait;       /* the agreed executor's wait before a block (NAN: none timed) */
    int refit_from;
    int refit_of;            /* the candidate whose blocks the re-fit under way uses */
    bool refit_tried;
    int kept_before;         /* while a re-fitted candidate runs: the candidate kept before it, -1 */
    int resume;              /* after a drop's re-fit: the candidate to try next, -1: pass-through */
    unsigned judged;         /* candidates decided in this check (bit i: candidate i) */
    char failure[200];       /* the call that refused the window's collective, and its error */
    ub_verify_verdict earlier;   /* the running candidate's earlier windows of this check (windows 0: none) */
    ub_verify_report report;
} ub_verify_rt;

#endif
