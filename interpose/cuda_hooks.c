/* The CUDA hooks behind the wrappers (hooks.h): each dispatches to the warm-up's observation of
 * producers and consumers while some communicator profiles (ub_cuda_tracking), and to schedule
 * mode's completion while some communicator runs a plan (ub_sched_live).  A blocking wait on
 * deferred work is resolved here: on the thread that issues the communicator's calls it is a
 * flush point (defer.c), on any other thread a host wait until the issuing thread issues the
 * work (redirect.c). */
#include <pthread.h>

#include "capture.h"
#include "defer.h"
#include "hooks.h"
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

/* A blocking wait on a pending event returns once the event is recorded. */
static void consume_event(cudaEvent_t event, const char *what)
{
    if (!atomic_load_explicit(&ub_events_pending, memory_order_relaxed))
        return;
    ub_state_lock();
    ub_comm *c = ub_redirect_pending_comm(event);
    if (c && issuing_thread(c))
        ub_sched_consumer_flush(c, what);
    if (c)
        ub_redirect_wait_event(event, what);
    ub_state_unlock();
}

void ub_cuda_event_sync(cudaEvent_t event)
{
    if (scheduling())
        consume_event(event, "cudaEventSynchronize");
    if (watching())
        ub_warmup_event_host_wait(event, false);
}

void ub_cuda_stream_wait(cudaStream_t stream, cudaEvent_t event)
{
    if (scheduling()) {
        ub_redirect_stream_work(stream);
        consume_event(event, "cudaStreamWaitEvent");
    }
    if (watching() && !ub_capture_stream(stream))
        ub_warmup_stream_wait(stream, event);
}

void ub_cuda_stream_host_wait(cudaStream_t stream, bool poll)
{
    if (scheduling() && !poll && ub_sched_stream_listed(stream)) {
        ub_state_lock();
        ub_comm *c = ub_redirect_stream_unissued(stream);
        if (c && issuing_thread(c))
            ub_sched_consumer_flush(c, "cudaStreamSynchronize");
        if (c)
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

/* Every communicator's deferred calls of the moment are issued before the device waits: this
 * thread's by a flush, the others' by their issuing threads. */
static void device_wait_scheduled(void)
{
    ub_state_lock();
    int n;
    /* The table is read again at each step: a flush or a wait releases the lock meanwhile. */
    for (int i = 0; i < (ub_state_all_comms(&n), n); i++) {
        ub_comm *c = ub_state_all_comms(&n)[i];
        if (!c->handle || atomic_load(&c->ending) || !ub_sched_unissued(c))
            continue;
        if (issuing_thread(c))
            ub_sched_consumer_flush(c, "cudaDeviceSynchronize");
        uint64_t target = ub_sched_unissued(c);
        if (target)
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
    ub_comm *c = ub_redirect_stream_unissued(stream);
    if (c && issuing_thread(c))
        ub_sched_deviation(c, "graph capture begins on a stream with deferred calls");
    if (c)
        ub_redirect_wait_stream(stream, "cudaStreamBeginCapture");
    ub_redirect_capture_begins(stream);
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
