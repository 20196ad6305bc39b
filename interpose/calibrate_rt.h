/* Schedule mode's calibration record in a communicator (state.h), written by calibrate.c only
 * (calibrate.h); the records only, so that state.h can hold it without including calibrate.c's
 * functions. */
#ifndef USBYTE_CALIBRATE_RECORD_H
#define USBYTE_CALIBRATE_RECORD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "usbyte/calibrate.h"
#include "usbyte/record.h"

typedef enum { UB_CALIB_IDLE, UB_CALIB_WANTED, UB_CALIB_PROBED, UB_CALIB_AGREEING } ub_calib_stage;

#define UB_CALIB_MARKS (1 + UB_CALIB_MAX_PROBES * UB_CALIB_REPEATS)

typedef struct ub_calib_rt {
    bool reserved;             /* the marks and buffers exist (made before the agreement) */
    cudaEvent_t marks[UB_CALIB_MARKS]; /* timing events on the private stream around the probes */
    double *host;              /* pinned: this rank's vector, then the agreed one */
    void *dev;                 /* its device copy (the collective runs in place) */
    cudaEvent_t done;          /* after the agreed vector's copy back */
    bool in_flight;            /* probes or the vector are enqueued and not waited for */
    atomic_int issuing;        /* the issuing thread enqueues them without the lock right now */
    ub_calib_stage stage;
    uint64_t next_call;        /* the call of the next step (a function of agree_at and the period) */
    int n;
    uint64_t sizes[UB_CALIB_MAX_PROBES];
    ub_agreed agreed;          /* the agreement's numbers, held for the re-plan */
    uint64_t *bytes;           /* per call, from the agreed profile (the warm-up's record is gone); */
    int *dtype, *op;           /* made before the agreement, cap_calls long */
    int cap_calls;
    bool stream_sem;
    ub_calib_report report;
} ub_calib_rt;

#endif
