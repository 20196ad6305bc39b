/* What the generated wrappers tell the runtime.  Each wrapper calls the real function itself,
 * unless a hook took the call over: a deferred allreduce (schedule mode), an event record kept
 * pending or recorded behind deferred calls, a query of a pending event. */
#ifndef USBYTE_HOOKS_H
#define USBYTE_HOOKS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "lock_contract.h"

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
} ub_coll_token;

/* True when the call was taken over: deferred (schedule mode: result ncclSuccess), or refused
 * (its communicator was aborted while the call waited); the wrapper returns t->result without
 * forwarding it, and ub_coll_after is not called. */
bool ub_coll_before(const ub_coll_desc *d, ub_coll_token *t) UB_EXCLUDES(ub_state_mutex);
/* The call goes to NCCL unchanged (not deferred): work on its stream. */
void ub_coll_forwarded(const ub_coll_desc *d);
void ub_coll_after(const ub_coll_desc *d, const ub_coll_token *t, ncclResult_t r) UB_EXCLUDES(ub_state_mutex);
void ub_group_start(void);
void ub_group_end(void);    /* before the real ncclGroupEnd */
/* After it: what the application's ncclGroupEnd returns (r, the real one's result, or a failure
 * of what usbyte issued inside the group). */
ncclResult_t ub_group_ended(ncclResult_t r) UB_EXCLUDES(ub_state_mutex);
/* After a communicator's creation; parent: the communicator it was split or shrunk from. */
void ub_comm_created(ncclComm_t *out, int n, const ncclConfig_t *config, ncclComm_t parent, ncclResult_t r) UB_EXCLUDES(ub_state_mutex);
/* After ub_comm_created: the new communicator's identity (identity.c), from its ncclUniqueId
 * array (ids, n), or, ids NULL, from the parent it was split (n: the color) or shrunk (n: -1)
 * from; ub_comm_identify_all for ncclCommInitAll's n communicators of this process. */
void ub_comm_identify(ncclComm_t *out, const ncclUniqueId *ids, int n, ncclComm_t parent, ncclResult_t r) UB_EXCLUDES(ub_state_mutex);
void ub_comm_identify_all(ncclComm_t *out, int n, ncclResult_t r) UB_EXCLUDES(ub_state_mutex);
void ub_comm_ending(ncclComm_t comm, int id) UB_EXCLUDES(ub_state_mutex);

/* Nonzero while some stream or event is involved: the CUDA wrappers' fast path reads only this. */
extern atomic_int ub_cuda_tracking;

/* The CUDA hooks (cuda_hooks.c).  A hook that returns true answered the call itself (*r: the
 * result); the wrapper then returns *r without calling the real function. */
/* cudaEventRecord*: before the real record (an event on a stream with deferred calls is kept
 * pending or recorded behind them); _recorded after it (or after a successful take-over). */
bool ub_cuda_event_record(cudaEvent_t event, cudaStream_t stream, unsigned flags, cudaError_t *r);
void ub_cuda_event_recorded(cudaEvent_t event, cudaStream_t stream);
/* cudaEventQuery / cudaEventElapsedTime: a pending event is not ready. */
bool ub_cuda_event_query(cudaEvent_t event, cudaError_t *r);
bool ub_cuda_event_elapsed(cudaEvent_t start, cudaEvent_t end, cudaError_t *r);
/* Blocking consumers, before the real call: they return once what they wait for is issued. */
void ub_cuda_event_sync(cudaEvent_t event);
void ub_cuda_stream_wait(cudaStream_t stream, cudaEvent_t event) UB_EXCLUDES(ub_state_mutex);
void ub_cuda_stream_host_wait(cudaStream_t stream, bool poll) UB_EXCLUDES(ub_state_mutex);
/* After the real cudaStreamSynchronize/Query: deferred work on the stream is part of it. */
cudaError_t ub_cuda_stream_host_waited(cudaStream_t stream, bool poll, cudaError_t r);
void ub_cuda_device_wait(void);
/* Before a capture begins on the stream: what is deferred on it is issued, and the stream made to
 * wait for it, before the capture severs the stream from its earlier work. */
void ub_cuda_capture_begin(cudaStream_t stream) UB_EXCLUDES(ub_state_mutex);
void ub_cuda_stream_destroyed(cudaStream_t stream) UB_EXCLUDES(ub_state_mutex);
void ub_cuda_event_destroyed(cudaEvent_t event) UB_EXCLUDES(ub_state_mutex);

/* The wrappers of every capture begin and end (runtime and driver): what is deferred on the
 * stream goes out before its capture begins, the stream is known to capture once the real call
 * succeeded (result ok), and a capture is over when the stream says so after an end. */
#define UB_CAPTURE_BEGIN(stream, ok, call)            \
    __extension__({                                   \
        cudaStream_t ub_cap_stream_ = (stream);       \
        ub_cuda_capture_begin(ub_cap_stream_);        \
        __auto_type ub_cap_r_ = (call);               \
        if (ub_cap_r_ == (ok))                        \
            ub_capture_begun(ub_cap_stream_);         \
        ub_cap_r_;                                    \
    })
#define UB_CAPTURE_END(stream, call)                  \
    __extension__({                                   \
        __auto_type ub_cap_r_ = (call);               \
        ub_capture_ended(stream);                     \
        ub_cap_r_;                                    \
    })

/* lifecycle.c: the reports at exit (runtime.c's destructor). */
void ub_state_write_reports_at_exit(void);

#endif
