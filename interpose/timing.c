/* Timing events (see timing.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "capture.h"
#include "cuda_error.h"
#include "cuda_list.h"
#include "device.h"
#include "globals.h"
#include "guard.h"
#include "log.h"
#include "timing.h"

static cudaEvent_t get_event(ub_timing *t)
{
    if (t->n_pool)
        return t->pool[--t->n_pool];
    cudaEvent_t ev = NULL;
    int previous = ub_device_enter(t->device);
    if (UB_CUDA(ub_cuda.cudaEventCreateWithFlags(&ev, cudaEventDefault)) != cudaSuccess)
        ev = NULL;
    ub_device_leave(previous);
    return ev;
}

static void put_event(ub_timing *t, cudaEvent_t ev)
{
    if (t->n_pool == t->cap_pool) {
        int cap = t->cap_pool ? 2 * t->cap_pool : 64;
        cudaEvent_t *p = realloc(t->pool, (size_t)cap * sizeof *p);
        if (!p) {
            UB_CUDA(ub_cuda.cudaEventDestroy(ev));
            return;
        }
        t->pool = p;
        t->cap_pool = cap;
    }
    t->pool[t->n_pool++] = ev;
}

int ub_timing_start(ub_timing *t, int device)
{
    memset(t, 0, sizeof *t);
    int previous = ub_device_enter(device);
    cudaError_t e = UB_CUDA(ub_cuda.cudaGetDevice(&t->device));
    if (e == cudaSuccess)
        e = UB_CUDA(ub_cuda.cudaStreamCreateWithPriority(&t->clock, cudaStreamNonBlocking, 0));
    if (e == cudaSuccess)
        e = UB_CUDA(ub_cuda.cudaStreamCreateWithPriority(&t->probe, cudaStreamNonBlocking, 0));
    if (e == cudaSuccess)
        e = ub_device_urgent_stream(&t->agree);
    if (e == cudaSuccess)
        e = UB_CUDA(ub_cuda.cudaEventCreateWithFlags(&t->epoch, cudaEventDefault));
    if (e == cudaSuccess)
        e = UB_CUDA(ub_cuda.cudaEventRecord(t->epoch, t->clock));
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    t->epoch_unix = (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
    ub_device_leave(previous);
    if (e != cudaSuccess) {
        ub_warn("cannot set up timing events (%s): this communicator is not profiled",
                ub_cuda_error_text(e));
        return -1;
    }
    t->ok = true;
    return 0;
}

void ub_timing_file(ub_timing *t, cudaEvent_t ev, double *dest, int n, size_t stride, double *dest2)
{
    if (!ev)
        return;
    if (t->n_pending == t->cap_pending) {
        int cap = t->cap_pending ? 2 * t->cap_pending : 256;
        ub_pending *p = realloc(t->pending, (size_t)cap * sizeof *p);
        if (!p)
            return; /* the event leaks into nowhere: better than blocking */
        t->pending = p;
        t->cap_pending = cap;
    }
    t->pending[t->n_pending++] = (ub_pending){ev, dest, n, stride, dest2};
}

cudaEvent_t ub_timing_mark(ub_timing *t, cudaStream_t stream, double *dest, int n, size_t stride, double *dest2)
{
    if (!t->ok)
        return NULL;
    if (ub_capture_stream(stream))
        return NULL; /* recorded there it would be a captured event, which may not be queried */
    cudaEvent_t ev = get_event(t);
    if (ev && UB_CUDA(ub_cuda.cudaEventRecord(ev, stream)) != cudaSuccess) {
        put_event(t, ev);
        ev = NULL;
    }
    if (!ev)
        return NULL;
    ub_timing_file(t, ev, dest, n, stride, dest2);
    return ev;
}

void ub_timing_now(ub_timing *t, double *dest, int n, size_t stride)
{
    ub_timing_mark(t, t->clock, dest, n, stride, NULL);
}

cudaEvent_t ub_timing_probe(ub_timing *t, cudaEvent_t producer)
{
    if (!t->ok)
        return NULL;
    cudaEvent_t ev = get_event(t);
    if (ev && (UB_CUDA(ub_cuda.cudaStreamWaitEvent(t->probe, producer, 0)) != cudaSuccess ||
               UB_CUDA(ub_cuda.cudaEventRecord(ev, t->probe)) != cudaSuccess)) {
        put_event(t, ev);
        ev = NULL;
    }
    return ev;
}

static void store(const ub_pending *p, double seconds)
{
    for (int i = 0; p->dest && i < p->n; i++)
        *(double *)((char *)p->dest + (size_t)i * p->stride) = seconds;
    if (p->dest2)
        *p->dest2 = seconds;
}

int ub_timing_poll(ub_timing *t)
{
    int kept = 0;
    for (int i = 0; i < t->n_pending; i++) {
        ub_pending *p = &t->pending[i];
        cudaError_t e = UB_CUDA(ub_cuda.cudaEventQuery(p->event));
        if (e == cudaErrorNotReady) {
            t->pending[kept++] = *p;
            continue;
        }
        float ms = 0;
        if (e == cudaSuccess && UB_CUDA(ub_cuda.cudaEventElapsedTime(&ms, t->epoch, p->event)) == cudaSuccess)
            store(p, (double)ms * 1e-3); /* else unmeasured: the destination keeps what it held */
        put_event(t, p->event);
    }
    t->n_pending = kept;
    return kept;
}

bool ub_timing_pending_into(const ub_timing *t, const void *lo, const void *hi)
{
    const char *a = lo, *b = hi;
    for (int i = 0; i < t->n_pending; i++) {
        const ub_pending *p = &t->pending[i];
        for (int k = 0; p->dest && k < p->n; k++) {
            const char *d = (const char *)p->dest + (size_t)k * p->stride;
            if (d >= a && d < b)
                return true;
        }
        if (p->dest2 && (const char *)p->dest2 >= a && (const char *)p->dest2 < b)
            return true;
    }
    return false;
}

void ub_timing_discard(ub_timing *t)
{
    for (int i = 0; i < t->n_pending; i++) {
        t->pending[i].dest = NULL;
        t->pending[i].dest2 = NULL;
    }
}

void ub_timing_stop(ub_timing *t)
{
    if (!t->ok)
        return;
    ub_timing_discard(t);
    ub_timing_poll(t);
    /* Never waited for (see ub_timing_poll): CUDA releases an event destroyed with its record
     * pending once the record completes. */
    for (int i = 0; i < t->n_pending; i++)
        UB_CUDA(ub_cuda.cudaEventDestroy(t->pending[i].event));
    for (int i = 0; i < t->n_pool; i++)
        UB_CUDA(ub_cuda.cudaEventDestroy(t->pool[i]));
    UB_CUDA(ub_cuda.cudaEventDestroy(t->epoch));
    UB_CUDA(ub_cuda.cudaStreamDestroy(t->clock));
    UB_CUDA(ub_cuda.cudaStreamDestroy(t->probe));
    UB_CUDA(ub_cuda.cudaStreamDestroy(t->agree));
    free(t->pool);
    free(t->pending);
    t->pool = NULL;
    t->pending = NULL;
    t->n_pool = t->cap_pool = t->n_pending = t->cap_pending = 0;
    t->epoch = NULL;
    t->clock = t->probe = t->agree = NULL; /* a later warm-up that cannot start them sees none */
    t->ok = false;
}
