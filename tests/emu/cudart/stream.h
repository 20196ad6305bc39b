/* Streams and their workers (stream.c): handles resolved to objects, ops enqueued in stream
 * order with the legacy stream's implicit dependencies, waits for a stream or the whole
 * device, and what an op running on a worker may ask of it. */
#ifndef USBYTE_EMU_CUDART_STREAM_H
#define USBYTE_EMU_CUDART_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "../emu_internal.h"

struct CUstream_st;
struct emu_op_info;

/* Resolves a user handle (NULL, cudaStreamLegacy, cudaStreamPerThread or a created stream) to
 * its object; ptsz selects what NULL means (per-thread default stream for the _ptsz entry
 * points).  Returns cudaErrorInvalidResourceHandle for anything else. */
cudaError_t emu_stream_resolve(cudaStream_t handle, bool ptsz, struct CUstream_st **out);

/* Enqueues run(arg) on s (inserting the implicit legacy-stream dependencies first) and returns
 * the op's sequence number on s through seq (may be NULL).  `what` is copied. */
cudaError_t emu_enqueue(struct CUstream_st *s, usbyteEmuOpFn run, void *arg, const char *what, uint64_t *seq);
/* The same for an op that the queue model must know more of (info copied; NULL: EMU_OP_WORK). */
cudaError_t emu_enqueue_op(struct CUstream_st *s, const struct emu_op_info *info, usbyteEmuOpFn run, void *arg,
                           const char *what, uint64_t *seq);

/* The same for an op whose arg is one flat block of arg_size bytes that run frees: such an op
 * can be captured into a graph and run again at each launch. */
cudaError_t emu_enqueue_flat(struct CUstream_st *s, usbyteEmuOpFn run, void *arg, size_t arg_size, const char *what,
                             uint64_t *seq);

/* Blocks until s has completed its op number seq. */
void emu_stream_wait_seq(struct CUstream_st *s, uint64_t seq);

/* Blocks until every op enqueued on any stream before the call has completed. */
void emu_device_sync(void);

/* cudaStreamCreate's stream (NULL when out of memory or threads), and cudaStreamDestroy's end of
 * a created one's handle (its pending work still runs). */
struct CUstream_st *emu_stream_create(unsigned flags, int priority);
cudaError_t emu_stream_destroy(cudaStream_t handle);

/* The stream's id (as cudaStreamGetId and the hang dump show it). */
uint64_t emu_stream_id(struct CUstream_st *s);

/* Called by an op on its worker: when the stream had got through the previous op in the model
 * (false when not called on a worker), and when this op ends in the model (by default: when its
 * run function returns). */
bool emu_worker_reached(struct timespec *out);
void emu_worker_op_ends_at(struct timespec t);
/* Called by a wait op on its worker once the wait is satisfied, before it releases what it
 * waited on: the queue behind it may go on.  The worker calls it after every wait op anyway. */
void emu_worker_op_begun(void);
/* Sets the calling worker's activity text (no-op outside a worker). */
void emu_worker_set_activity(const char *what);

#endif
