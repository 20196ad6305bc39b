/* What a wrapper of an NCCL operation hands the life cycle (lifecycle.h), and what the warm-up and
 * schedule mode read of it: the operation's arguments, and what is carried from before to after
 * the real call. */
#ifndef USBYTE_COLL_DESC_H
#define USBYTE_COLL_DESC_H

#include <stdbool.h>
#include <stddef.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

/* One NCCL operation on a communicator, as the wrapper received it. */
typedef struct ub_coll_desc {
    int id;  /* ub_nccl_id */
    const void *send;
    const void *recv;
    size_t count;
    int dtype;  /* ncclDataType_t */
    int op;     /* ncclRedOp_t, -1 when none */
    int root;   /* root or peer, -1 when none */
    ncclComm_t comm;
    cudaStream_t stream;
} ub_coll_desc;

/* Carried from before to after the real call. */
typedef struct ub_coll_token {
    ncclResult_t result; /* what the wrapper returns when ub_coll_before took the call over */
    void *comm;  /* ub_comm being observed, NULL: nothing to do after the call */
    int call;    /* allreduce index within the iteration, -1 when not profiled */
    unsigned long long iteration;
    bool stream_work_noted; /* the forwarded call's work on its stream is noted (schedule mode's completion) */
} ub_coll_token;

#endif
