/* The CUDA hooks behind the generated CUDA runtime and driver wrappers (cuda_hooks.c), and the
 * wrappers' capture begin and end. */
#ifndef USBYTE_CUDA_HOOKS_H
#define USBYTE_CUDA_HOOKS_H

#include <stdbool.h>

#include <cuda_runtime_api.h>

#include "capture.h"
#include "lock_contract.h"

/* A hook that returns true answered the call itself (*r: the
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

#endif
