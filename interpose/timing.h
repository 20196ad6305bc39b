/* Timing events that never block the training thread: recorded where something happens, read
 * later (ub_timing_poll at later calls) with
 * cudaEventElapsedTime against an epoch event.  Every CUDA call here goes to the real function.
 * Timing only ever feeds the profile: it never changes what is issued to NCCL. */
#ifndef USBYTE_TIMING_H
#define USBYTE_TIMING_H

#include <stdbool.h>
#include <stddef.h>

#include <cuda_runtime_api.h>

/* Where a completed event's time goes: n doubles, `stride` bytes apart (NULL: discard). */
typedef struct ub_pending {
    cudaEvent_t event;
    double *dest;
    int n;
    size_t stride;
    double *dest2;  /* one more single destination, or NULL */
} ub_pending;

typedef struct ub_timing {
    bool ok;
    int device;
    cudaStream_t clock;   /* idle private stream: an event recorded on it marks "now" */
    cudaStream_t probe;   /* private stream that waits on producers' events, then marks */
    cudaStream_t agree;   /* private, highest priority: the agreement collectives */
    cudaEvent_t epoch;
    double epoch_unix;    /* CLOCK_REALTIME seconds when the epoch was recorded on the idle clock
                             stream (it completes microseconds later): event times + this = the
                             host's wall clock, the time base of the report's recordings */
    cudaEvent_t *pool;
    int n_pool, cap_pool;
    ub_pending *pending;
    int n_pending, cap_pending;
} ub_timing;

/* Creates streams and the epoch on `device` (its events too, later; -1: the current device); -1
 * with a logged reason. */
int ub_timing_start(ub_timing *t, int device);
/* Records an event on stream and files it; returns it (NULL on failure, dest left NAN). */
cudaEvent_t ub_timing_mark(ub_timing *t, cudaStream_t stream, double *dest, int n, size_t stride, double *dest2);
/* "Now" on the clock stream. */
void ub_timing_now(ub_timing *t, double *dest, int n, size_t stride);
/* An event that completes when `producer`'s latest record completes, held back until the caller
 * knows its destination (ub_timing_file); NULL on failure. */
cudaEvent_t ub_timing_probe(ub_timing *t, cudaEvent_t producer);
void ub_timing_file(ub_timing *t, cudaEvent_t ev, double *dest, int n, size_t stride, double *dest2);
/* Reads every completed event, never waiting for one.  Returns how many remain pending. */
int ub_timing_poll(ub_timing *t);
/* Whether some event still pending writes into [lo, hi) when it completes. */
bool ub_timing_pending_into(const ub_timing *t, const void *lo, const void *hi);
/* Forgets every destination (the record they pointed into is going away). */
void ub_timing_discard(ub_timing *t);
/* Forgets every destination and releases everything, pending events included (never waits). */
void ub_timing_stop(ub_timing *t);

#endif
