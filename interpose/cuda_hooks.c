/* The CUDA hooks behind the wrappers (hooks.h): each dispatches to the warm-up's observation of
 * producers and consumers while some communicator profiles (ub_cuda_tracking), and to schedule
 * mode's redirection and host waits while some communicator runs a plan (ub_sched_live). */
#include "hooks.h"
#include "redirect.h"
#include "state.h"

static bool watching(void) { return !ub_state_in_child() && atomic_load(&ub_cuda_tracking) != 0; }
static bool scheduling(void) { return !ub_state_in_child() && atomic_load(&ub_sched_live) != 0; }

bool ub_cuda_event_record_redirect(cudaEvent_t event, cudaStream_t stream, cudaError_t *r)
{
    return scheduling() && ub_redirect_record(event, stream, r);
}

void ub_cuda_event_recorded(cudaEvent_t event, cudaStream_t stream)
{
    if (watching())
        ub_warmup_event_recorded(event, stream);
}

void ub_cuda_stream_wait(cudaStream_t stream, cudaEvent_t event)
{
    if (watching())
        ub_warmup_stream_wait(stream, event);
}

void ub_cuda_event_host_wait(cudaEvent_t event, bool poll)
{
    if (scheduling())
        ub_redirect_event_wait(event, poll);
    if (watching())
        ub_warmup_event_host_wait(event, poll);
}

void ub_cuda_stream_host_wait(cudaStream_t stream, bool poll)
{
    if (scheduling())
        ub_redirect_stream_wait(stream, poll);
    if (watching())
        ub_warmup_stream_host_wait(stream, poll);
}

cudaError_t ub_cuda_stream_host_waited(cudaStream_t stream, bool poll, cudaError_t r)
{
    return scheduling() ? ub_redirect_stream_waited(stream, poll, r) : r;
}

void ub_cuda_device_wait(void)
{
    if (scheduling())
        ub_redirect_device_wait();
    if (watching())
        ub_warmup_device_wait();
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
         * on it already, and its completion streams stay with the communicator. */
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
    if (e)
        ub_event_forget(e);
    ub_state_unlock();
}
