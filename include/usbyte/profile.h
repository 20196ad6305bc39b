/* One training iteration of one communicator, as docs/model.md defines it ("usbyte_profile": 1).
 * The planner, the simulator and the interposer's report all use this one struct. */
#ifndef USBYTE_PROFILE_H
#define USBYTE_PROFILE_H

#include <stdbool.h>
#include <stdint.h>

#include "usbyte/types.h"

typedef struct ub_call {
    char *name;            /* may be NULL */
    uint64_t bytes;        /* > 0 */
    double ready;          /* seconds from the iteration's start (first call's ready in measured profiles) */
    int need;              /* forward segment that first needs this call, 0..n_forward-1 */
    ub_dtype dtype;
    ub_op op;
    bool merge;            /* false: something waits for this call before the next one arrives */
    double measured_comm;  /* seconds, < 0 when the profile does not carry it */
} ub_call;

/* The link's cost of one allreduce of M bytes (docs/model.md, "The cost function"): segment i
 * holds for from_i <= M < from_{i+1} (the last one up to infinity; from_0 = 0) and costs
 * alpha_i + beta_i * M seconds.  Monotone (beta_i >= 0, never lower after a boundary), so more
 * bytes never cost less.  n == 0: the profile's line, alpha + beta * M. */
#define UB_NET_MAX_SEGMENTS 64
typedef struct ub_net_segment {
    double from;  /* bytes */
    double alpha; /* seconds */
    double beta;  /* seconds per byte */
} ub_net_segment;

typedef struct ub_net_curve {
    int n;
    ub_net_segment seg[UB_NET_MAX_SEGMENTS];
} ub_net_curve;

typedef struct ub_profile {
    char *name;            /* may be NULL */
    char *source;          /* may be NULL */
    int ranks;             /* 0 when absent */
    bool has_net;          /* false: the caller must supply alpha/beta */
    double alpha;          /* seconds per block (the line; a summary when curve.n > 0) */
    double beta;           /* seconds per byte (the same) */
    ub_net_curve curve;    /* when curve.n > 0, the cost of a block: ub_link_cost */
    double copy_beta;      /* seconds per byte through staging */
    /* What the runtime's schedule mode can issue (docs/model.md validity; 0 = no constraint):
     * align: bytes; a cut inside a call falls on a multiple of the call's element size and,
     * in a call larger than align, also on a multiple of align (addresses the runtime can
     * hand to NCCL without realigning).  staging_max: the largest total of a block that
     * holds segments of more than one call (the size of the runtime's one staging buffer). */
    uint64_t align;
    uint64_t staging_max;
    double backward_end;
    double gap;
    /* Compute beside communication (docs/model.md rule 7): while a block runs, compute advances
     * at 1 / (1 + interference) of its own speed.  0: compute is unaffected (the times above are
     * then wall times); > 0: ready, backward_end, gap and forward are the compute's own seconds,
     * which the timeline stretches wherever the link is busy. */
    double interference;
    int n_forward;         /* >= 1 */
    double *forward;       /* n_forward seconds */
    int n_calls;
    ub_call *calls;        /* arrival order */
} ub_profile;

#endif
