/* The CUDA hooks behind the wrappers (cuda_hooks.h): each dispatches to the warm-up's observation of
 * producers and consumers while some communicator profiles (ub_cuda_tracking), and to schedule
 * mode's completion while some communicator runs a plan (ub_sched_live).  A blocking wait on
 * deferred work is resolved here: on any other thread than the one that issues the
 * communicator's calls, a host wait until the issuing thread issues the work (redirect.c); on
 * the issuing thread it is a wait the plan did not expect (one the warm-up saw is a merge
 * barrier: nothing is deferred then), maybe made on some ranks only, so it changes nothing that
 * is issued: it waits for what was submitted to the device, and the deferred calls stay deferred
 * (docs/design.md section 3). */
#include <pthread.h>

#include "capture.h"
#include "cuda_hooks.h"
#include "defer.h"
#include "lifecycle.h"
#include "redirect.h"
#include "state.h"
#include "tables.h"
#include "warmup.h"

static bool watching(void) { return !ub_state_in_child() && atomic_load(&ub_cuda_tracking) != 0; }
static bool scheduling(void) { return !ub_state_in_child() && atomic_load(&ub_sched_live) != 0; }
static bool issuing_thread(const ub_comm *c) { return c->issuer == (unsigned long)pthread_self(); }

bool ub_cuda_event_record(cudaEvent_t event, cudaStream_t stream, unsigned flags, cudaError_t *r)
{
    return scheduling() && ub_redirect_record(event, stream, flags, r);
}

void ub_cuda_event_recorded(cudaEvent_t event, cudaStream_t stream)
{
    /* A companion recorded on a capturing stream would be a captured event, which may not be
     * queried. */
    if (watching() && !ub_capture_stream(stream))
        ub_warmup_event_recorded(event, stream);
}

bool ub_cuda_event_query(cudaEvent_t event, cudaError_t *r)
{
    if (scheduling() && ub_redirect_event_query(event, r))
        return true;
    if (watching())
        ub_warmup_event_host_wait(event, true);
    return false;
}

bool ub_cuda_event_elapsed(cudaEvent_t start, cudaEvent_t end, cudaError_t *r)
{
    return scheduling() && ub_redirect_elapsed(start, end, r);
}

/* A blocking wait on a pending event (waiter: the stream of cudaStreamWaitEvent, NULL for the
 * host) returns once the event is recorded, or, on the issuing thread, once what was submitted
 * is done. */
static void consume_event(cudaEvent_t event, cudaStream_t waiter, const char *what)
{
    if (!atomic_load_explicit(&ub_events_pending, memory_order_relaxed))
        return;
    ub_state_lock();
    int call = -1;
    ub_comm *c = ub_redirect_pending_comm(event, &call);
    if (c && issuing_thread(c)) {
        ub_sched_unexpected_wait(c, what, call);
        ub_redirect_wait_submitted(event, waiter);
    } else if (c) {
        ub_redirect_wait_event(event, what);
    }
    ub_state_unlock();
}

void ub_cuda_event_sync(cudaEvent_t event)
{
    if (scheduling())
        consume_event(event, NULL, "cudaEventSynchronize");
    if (watching())
        ub_warmup_event_host_wait(event, false);
}

/* Lock held: a graph capture begins on stream (why: how), or the stream joins one: what is
 * deferred on it goes out first, outside the capture, and the stream's own order covers it again
 * (a capture severs a stream from its earlier work; a deferred call issued inside it would put
 * the private stream into the graph). */
static void capture_begins(cudaStream_t stream, const char *why, const char *what) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    ub_comm *c = ub_redirect_stream_unissued(stream);
    if (c && issuing_thread(c))
        ub_comm_deviates(c, why);
    if (c)
        ub_redirect_wait_stream(stream, what);
    char failure[300];
    ub_comm *unsettled = ub_redirect_capture_begins(stream, failure, sizeof failure);
    /* The capture would not wait for the deferred calls' blocks: the application hears of it
     * from its next call on the communicator (and the capture's own calls fail alike when the
     * CUDA error is the context's). */
    if (unsettled)
        ub_sched_fail(unsettled, ncclUnhandledCudaError, failure);
}

void ub_cuda_stream_wait(cudaStream_t stream, cudaEvent_t event)
{
    /* A wait on an event recorded in a capture joins the waiting stream to that capture
     * (PyTorch's NCCL stream joins a capture begun on the compute stream so): for usbyte the
     * capture begins on it here, before the wait takes effect. */
    bool joins = ub_capture_event(event) && !ub_capture_stream(stream);
    if (scheduling()) {
        if (joins && ub_sched_stream_listed(stream)) {
            ub_state_lock();
            capture_begins(stream, "a stream with deferred calls joins a graph capture", "cudaStreamWaitEvent");
            ub_state_unlock();
        }
        ub_redirect_stream_work(stream);
        consume_event(event, stream, "cudaStreamWaitEvent");
    }
    /* The warm-up's probe stream would join the capture too. */
    if (watching() && !joins && !ub_capture_stream(stream))
        ub_warmup_stream_wait(stream, event);
}

void ub_cuda_stream_host_wait(cudaStream_t stream, bool poll)
{
    if (scheduling() && !poll && ub_sched_stream_listed(stream)) {
        ub_state_lock();
        ub_comm *c = ub_redirect_stream_unissued(stream);
        if (c && issuing_thread(c))
            ub_sched_unexpected_wait(c, "cudaStreamSynchronize", -1);
        else if (c)
            ub_redirect_wait_stream(stream, "cudaStreamSynchronize");
        ub_state_unlock();
    }
    if (watching())
        ub_warmup_stream_host_wait(stream, poll);
}

cudaError_t ub_cuda_stream_host_waited(cudaStream_t stream, bool poll, cudaError_t r)
{
    return scheduling() ? ub_redirect_stream_waited(stream, poll, r) : r;
}

/* The device waits for every communicator's deferred calls of the moment that other threads
 * issue (they issue them); this thread's own stay deferred, the device has not been given them. */
static void device_wait_scheduled(void)
{
    ub_state_lock();
    int n;
    /* The table is read again at each step: a wait releases the lock meanwhile. */
    for (int i = 0; i < (ub_state_all_comms(&n), n); i++) {
        ub_comm *c = ub_state_all_comms(&n)[i];
        uint64_t target;
        if (!c->handle || atomic_load(&c->ending) || !(target = ub_sched_unissued(c)))
            continue;
        if (issuing_thread(c))
            ub_sched_unexpected_wait(c, "cudaDeviceSynchronize", -1);
        else
            ub_redirect_wait_comm(c, target, "cudaDeviceSynchronize");
    }
    ub_state_unlock();
}

void ub_cuda_device_wait(void)
{
    if (scheduling())
        device_wait_scheduled();
    if (watching())
        ub_warmup_device_wait();
}

void ub_cuda_capture_begin(cudaStream_t stream)
{
    if (!scheduling() || !ub_sched_stream_listed(stream))
        return;
    ub_state_lock();
    capture_begins(stream, "graph capture begins on a stream with deferred calls", "cudaStreamBeginCapture");
    ub_state_unlock();
}

void ub_cuda_stream_destroyed(cudaStream_t stream)
{
    if (ub_state_in_child())
        return;
    ub_state_lock();
    ub_stream *st = ub_stream_get(stream, NULL);
    if (st) {
        if (st->comm)
            ub_warmup_file_ready(st->comm, st);
        /* Deferred calls on it still complete: their blocks wait on readiness events recorded
         * on it already. */
        ub_redirect_stream_gone(st);
        ub_stream_forget(st);
    }
    ub_state_unlock();
}

void ub_cuda_event_destroyed(cudaEvent_t event)
{
    if (ub_state_in_child())
        return;
    ub_state_lock();
    ub_event *e = ub_event_get(event, false);
    if (e) {
        ub_redirect_event_gone(e);
        ub_event_forget(e);
    }
    ub_state_unlock();
}
