/* The captures usbyte sees (capture.h): which streams record into a capture, and which events
 * were recorded in one (a stream that waits on such an event joins that capture).  A capture is
 * named by its origin stream.  Small tables under their own lock: captures are rare and short,
 * and the wrappers look here only while one is live. */
#include "capture.h"
#include "lock_contract.h"
#include "log.h"

#define CAPTURE_STREAMS 256
#define CAPTURE_EVENTS 1024

atomic_int ub_capture_live;

/* Taken with the global lock held or not, never the other way round; nothing else is taken while
 * it is held (lock_contract.h). */
static ub_mutex capture_mutex UB_ACQUIRED_AFTER(ub_state_mutex) = UB_MUTEX_INITIALIZER;
static struct { cudaStream_t stream, origin; } streams[CAPTURE_STREAMS] UB_GUARDED_BY(capture_mutex);
static int n_streams UB_GUARDED_BY(capture_mutex);
static struct { cudaEvent_t event; cudaStream_t origin; } events[CAPTURE_EVENTS] UB_GUARDED_BY(capture_mutex);
static int n_events UB_GUARDED_BY(capture_mutex);
static bool warned UB_GUARDED_BY(capture_mutex);

static int stream_index(cudaStream_t s) UB_REQUIRES(capture_mutex)
{
    for (int i = 0; i < n_streams; i++)
        if (streams[i].stream == s)
            return i;
    return -1;
}

static int event_index(cudaEvent_t e) UB_REQUIRES(capture_mutex)
{
    for (int i = 0; i < n_events; i++)
        if (events[i].event == e)
            return i;
    return -1;
}

static void add_stream(cudaStream_t s, cudaStream_t origin) UB_REQUIRES(capture_mutex)
{
    if (stream_index(s) >= 0)
        return;
    if (n_streams == CAPTURE_STREAMS) {
        if (!warned)
            ub_warn("more than %d streams capture at once: usbyte may make calls on the others", CAPTURE_STREAMS);
        warned = true;
        return;
    }
    streams[n_streams].stream = s;
    streams[n_streams++].origin = origin;
    atomic_store(&ub_capture_live, n_streams);
}

void ub_capture_begun(cudaStream_t stream)
{
    ub_mutex_lock(&capture_mutex);
    add_stream(stream, stream);
    ub_mutex_unlock(&capture_mutex);
}

void ub_capture_ended(cudaStream_t stream)
{
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    /* Whatever EndCapture returned: the stream's status says whether the capture is over (an
     * invalidated or unjoined capture ends too; a call from the wrong thread ends nothing). */
    if (ub_cuda.cudaStreamIsCapturing && UB_CUDA(ub_cuda.cudaStreamIsCapturing(stream, &st)) == cudaSuccess &&
        st != cudaStreamCaptureStatusNone)
        return;
    ub_mutex_lock(&capture_mutex);
    int i = stream_index(stream);
    cudaStream_t origin = i >= 0 ? streams[i].origin : stream;
    for (int k = 0; k < n_streams;)
        if (streams[k].origin == origin)
            streams[k] = streams[--n_streams];
        else
            k++;
    for (int k = 0; k < n_events;)
        if (events[k].origin == origin)
            events[k] = events[--n_events];
        else
            k++;
    atomic_store(&ub_capture_live, n_streams);
    ub_mutex_unlock(&capture_mutex);
}

void ub_capture_recorded(cudaEvent_t event, cudaStream_t stream, unsigned flags)
{
    if (atomic_load_explicit(&ub_capture_live, memory_order_relaxed) == 0)
        return;
    ub_mutex_lock(&capture_mutex);
    int s = stream_index(stream), e = event_index(event);
    if (e >= 0)
        events[e] = events[--n_events];   /* recorded anew */
    /* An external record is a node of the graph: the event is not a captured event. */
    if (s >= 0 && !(flags & cudaEventRecordExternal) && n_events < CAPTURE_EVENTS) {
        events[n_events].event = event;
        events[n_events++].origin = streams[s].origin;
    }
    ub_mutex_unlock(&capture_mutex);
}

void ub_capture_waited(cudaStream_t stream, cudaEvent_t event)
{
    if (atomic_load_explicit(&ub_capture_live, memory_order_relaxed) == 0)
        return;
    ub_mutex_lock(&capture_mutex);
    int e = event_index(event);
    if (e >= 0)
        add_stream(stream, events[e].origin);   /* joins the event's capture */
    ub_mutex_unlock(&capture_mutex);
}

bool ub_capture_event(cudaEvent_t event)
{
    if (atomic_load_explicit(&ub_capture_live, memory_order_relaxed) == 0)
        return false;
    ub_mutex_lock(&capture_mutex);
    bool found = event_index(event) >= 0;
    ub_mutex_unlock(&capture_mutex);
    return found;
}

bool ub_capture_stream(cudaStream_t stream)
{
    if (atomic_load_explicit(&ub_capture_live, memory_order_relaxed) == 0)
        return false;
    ub_mutex_lock(&capture_mutex);
    bool found = stream_index(stream) >= 0;
    ub_mutex_unlock(&capture_mutex);
    return found;
}
