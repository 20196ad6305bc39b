/* Schedule mode's calibration (docs/runtime.md, "Calibration"): where the warm-up's calls do not
 * show the sizes the chosen plan would issue, every rank issues the same probe allreduces at a
 * fixed call, agrees on their times by one fixed-size collective one iteration later, and one
 * iteration after that re-plans on a net fitted with them and switches to the plan.  calibrate.c
 * is the only writer of ub_calib_rt; the probe sizes and the agreed vector are
 * usbyte/calibrate.h's (pure). */
#ifndef USBYTE_CALIBRATE_RT_H
#define USBYTE_CALIBRATE_RT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "usbyte/calibrate.h"
#include "usbyte/record.h"

struct ub_comm;

typedef enum { UB_CALIB_IDLE, UB_CALIB_WANTED, UB_CALIB_PROBED, UB_CALIB_AGREEING } ub_calib_stage;

#define UB_CALIB_MARKS (1 + UB_CALIB_MAX_PROBES * UB_CALIB_REPEATS)

typedef struct ub_calib_rt {
    bool reserved;             /* the marks and buffers exist (made before the agreement) */
    cudaEvent_t marks[UB_CALIB_MARKS]; /* timing events on the private stream around the probes */
    double *host;              /* pinned: this rank's vector, then the agreed one */
    void *dev;                 /* its device copy (the collective runs in place) */
    cudaEvent_t done;          /* after the agreed vector's copy back */
    bool in_flight;            /* probes or the vector are enqueued and not waited for */
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

/* Without the lock, before the agreement (with the executor): the probes' timing events, the
 * vector's buffers and the tables of the calls' kinds for the re-plan.  0, or -1 with why (the agreement carries it as the executor's failure). */
int ub_calib_reserve(struct ub_comm *c, char *why, size_t len);
/* Lock held, schedule mode, the agreement adopted and planned: true when the chosen plan issues
 * sizes the calls do not show, so calibration runs first (from call agree_at + period); it then
 * takes *agreed (left empty) for the re-plan.  False: the switch is at agree_at + period. */
bool ub_calib_hold(struct ub_comm *c, ub_agreed *agreed, bool stream_sem);
/* A calibration step is due at this call. */
bool ub_calib_due(const struct ub_comm *c, uint64_t call);
/* Lock held on entry and return (released while work is enqueued or waited for).  The step due
 * at `call`: the probes, the vector, or the re-plan.  True when the plan is decided at this call
 * (the caller switches to it here when the decision schedules). */
bool ub_calib_step(struct ub_comm *c, uint64_t call);
/* Lock held on entry and return: the communicator ends (abort: nothing waits for device work,
 * nothing is freed that device work may still touch). */
void ub_calib_end(struct ub_comm *c, bool abort);

#endif
