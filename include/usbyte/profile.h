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

typedef struct ub_profile {
    char *name;            /* may be NULL */
    char *source;          /* may be NULL */
    int ranks;             /* 0 when absent */
    bool has_net;          /* false: the caller must supply alpha/beta */
    double alpha;          /* seconds per block */
    double beta;           /* seconds per byte */
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
    int n_forward;         /* >= 1 */
    double *forward;       /* n_forward seconds */
    int n_calls;
    ub_call *calls;        /* arrival order */
} ub_profile;

#endif
