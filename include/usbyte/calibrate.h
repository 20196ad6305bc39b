/* Calibration's pure pieces (docs/model.md, "Calibration"; docs/runtime.md, "Calibration"): which
 * sizes the runtime probes before a plan runs, and the fixed-size vector by which the ranks agree
 * on what the probes took.  Everything here is a function of agreed data (the agreed profile, the
 * plan planned on it) or of the agreed vector, so every rank computes the same. */
#ifndef USBYTE_CALIBRATE_H
#define USBYTE_CALIBRATE_H

#include <stdbool.h>
#include <stdint.h>

#include "usbyte/model.h"
#include "usbyte/plan.h"

/* At most this many probe sizes, each timed UB_CALIB_REPEATS times (the median counts, as a
 * call's median over the warm-up's iterations does). */
#define UB_CALIB_MAX_PROBES 8
#define UB_CALIB_REPEATS 3
/* The agreed vector: per probe slot minus this rank's time (a max-allreduce gives minus the least
 * over ranks, as for the warm-up's comm_cost), then 1 when this rank could not time every probe.
 * At most UB_CALIB_REPEATS repeats. */
#define UB_CALIB_LEN (UB_CALIB_MAX_PROBES + 1)

/* The bytes of block b of plan (the sum of its segments). */
double ub_calib_block_bytes(const ub_plan *plan, uint32_t b);

/* The sizes to probe before `plan` runs on `prof`: none when every block of the plan is within
 * UB_FIT_KNOT_RATIO of some call's size (the warm-up measured it); else ub_calibration_sizes's
 * sizes that fit the staging buffer every rank holds (prof->staging_max), rising, at most
 * UB_CALIB_MAX_PROBES.  Returns how many (out has room for UB_CALIB_MAX_PROBES). */
int ub_calib_probe_sizes(const ub_profile *prof, const ub_plan *plan, uint64_t *out);

/* This rank's vector from its probe times: seconds[r * n + i] is repeat r of probe i (NAN or
 * <= 0: not timed).  Slots past n are 0. */
void ub_calib_encode(const double *seconds, int n, int repeats, double out[UB_CALIB_LEN]);
/* The max-combined vector into the agreed time of each of the n probes (the least over ranks
 * and repeats); false when some rank could not time every probe (then nothing is agreed). */
bool ub_calib_decode(const double combined[UB_CALIB_LEN], int n, double *seconds);

/* comms[].calibration in the report: what was probed, when, and what the ranks agreed. */
typedef struct ub_calib_report {
    bool present;                 /* calibration ran (or is running) on this communicator */
    int n;                        /* probe sizes */
    int repeats;                  /* timed repeats of each */
    uint64_t sizes[UB_CALIB_MAX_PROBES];
    double seconds[UB_CALIB_MAX_PROBES]; /* agreed: the least over ranks and repeats; NAN until agreed */
    bool agreed;                  /* every rank timed every probe: the times joined the fit */
    int64_t probe_call, agree_call, apply_call; /* call indices; -1 until reached */
    double series_seconds;        /* rank-local: this device's time for the timed probes, NAN unknown */
    double spread[UB_CALIB_MAX_PROBES]; /* rank-local: (slowest - fastest) / fastest over this rank's repeats */
    char policy_before[32];       /* the chosen plan, planned on the calls' samples only */
    double predicted_before;      /* its predicted iteration (s) under that model */
    double predicted_after;       /* the chosen plan's after calibration (s), NAN until re-planned */
    bool plan_changed;            /* calibration changed the chosen plan's blocks */
} ub_calib_report;

#endif
