/* The graph captures usbyte sees (docs/runtime.md, "Graph capture"): begun through the wrapped
 * cudaStreamBeginCapture (and _ptsz), joined by a stream that waits on an event recorded in
 * one, ended by cudaStreamEndCapture.  usbyte makes no call on a capturing stream that capture
 * forbids or that would put its own work into the graph: it does not redirect, time or follow
 * work there, and its own potentially unsafe calls (allocations) run in relaxed capture mode, so
 * that an application's global-mode capture on another thread is never invalidated by them. */
#ifndef USBYTE_CAPTURE_H
#define USBYTE_CAPTURE_H

#include <stdatomic.h>
#include <stdbool.h>

#include <cuda_runtime_api.h>

#include "cuda_list.h"
#include "guard.h"

/* Streams in a capture usbyte saw: the wrappers' slow path is taken while nonzero. */
extern atomic_int ub_capture_live;

/* The wrappers (cuda_wrap.c). */
void ub_capture_begun(cudaStream_t stream);   /* after it succeeded */
void ub_capture_ended(cudaStream_t stream);   /* after cudaStreamEndCapture, whatever its result */
void ub_capture_recorded(cudaEvent_t event, cudaStream_t stream, unsigned flags);
void ub_capture_waited(cudaStream_t stream, cudaEvent_t event);

/* Whether stream records into a capture usbyte saw (lock-free when there is none). */
bool ub_capture_stream(cudaStream_t stream);
/* Whether event was last recorded inside such a capture: a stream that waits on it joins it. */
bool ub_capture_event(cudaEvent_t event);

/* A potentially unsafe call of usbyte's (cudaMalloc, cudaFree, pinned memory) in relaxed capture
 * mode, the thread's mode restored: in global mode it would fail, and invalidate the capture,
 * while any thread captures. */
#define UB_UNSAFE(expr)                                                                               \
    __extension__({                                                                                   \
        enum cudaStreamCaptureMode ub_mode_ = cudaStreamCaptureModeRelaxed;                           \
        bool ub_swapped_ = ub_cuda.cudaThreadExchangeStreamCaptureMode &&                             \
                           UB_CUDA(ub_cuda.cudaThreadExchangeStreamCaptureMode(&ub_mode_)) == cudaSuccess; \
        __auto_type ub_unsafe_r_ = UB_CUDA(expr);                                                     \
        if (ub_swapped_)                                                                              \
            UB_CUDA(ub_cuda.cudaThreadExchangeStreamCaptureMode(&ub_mode_));                          \
        ub_unsafe_r_;                                                                                 \
    })

#endif
