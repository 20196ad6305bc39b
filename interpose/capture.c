/* The captures usbyte sees (capture.h): which streams record into a capture, and which events
 * were recorded in one (a stream that waits on such an event joins that capture).  A capture is
 * named by its origin stream.  Small tables under their own lock: captures are rare and short,
 * and the wrappers look here only while one is live. */
#include <pthread.h>

#include "capture.h"
#include "hooks.h"
#include "runtime.h"

#define CAPTURE_STREAMS 256
#define CAPTURE_EVENTS 1024

atomic_int ub_capture_live;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct { cudaStream_t stream, origin; } streams[CAPTURE_STREAMS];
static int n_streams;
static struct { cudaEvent_t event; cudaStream_t origin; } events[CAPTURE_EVENTS];
static int n_events;
static bool warned;

/* With mu held. */
static int stream_index(cudaStream_t s)
{
    for (int i = 0; i < n_streams; i++)
        if (streams[i].stream == s)
            return i;
    return -1;
}

static int event_index(cudaEvent_t e)
{
    for (int i = 0; i < n_events; i++)
        if (events[i].event == e)
            return i;
    return -1;
}

static void add_stream(cudaStream_t s, cudaStream_t origin)
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
    pthread_mutex_lock(&mu);
    add_stream(stream, stream);
    pthread_mutex_unlock(&mu);
}

void ub_capture_ended(cudaStream_t stream)
{
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    /* Whatever EndCapture returned: the stream's status says whether the capture is over (an
     * invalidated or unjoined capture ends too; a call from the wrong thread ends nothing). */
    if (ub_cuda.cudaStreamIsCapturing && UB_CUDA(ub_cuda.cudaStreamIsCapturing(stream, &st)) == cudaSuccess &&
        st != cudaStreamCaptureStatusNone)
        return;
    pthread_mutex_lock(&mu);
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
    pthread_mutex_unlock(&mu);
}

void ub_capture_recorded(cudaEvent_t event, cudaStream_t stream, unsigned flags)
{
    if (atomic_load_explicit(&ub_capture_live, memory_order_relaxed) == 0)
        return;
    pthread_mutex_lock(&mu);
    int s = stream_index(stream), e = event_index(event);
    if (e >= 0)
        events[e] = events[--n_events];   /* recorded anew */
    /* An external record is a node of the graph: the event is not a captured event. */
    if (s >= 0 && !(flags & cudaEventRecordExternal) && n_events < CAPTURE_EVENTS) {
        events[n_events].event = event;
        events[n_events++].origin = streams[s].origin;
    }
    pthread_mutex_unlock(&mu);
}

void ub_capture_waited(cudaStream_t stream, cudaEvent_t event)
{
    if (atomic_load_explicit(&ub_capture_live, memory_order_relaxed) == 0)
        return;
    pthread_mutex_lock(&mu);
    int e = event_index(event);
    if (e >= 0)
        add_stream(stream, events[e].origin);   /* joins the event's capture */
    pthread_mutex_unlock(&mu);
}

bool ub_capture_event(cudaEvent_t event)
{
    if (atomic_load_explicit(&ub_capture_live, memory_order_relaxed) == 0)
        return false;
    pthread_mutex_lock(&mu);
    bool found = event_index(event) >= 0;
    pthread_mutex_unlock(&mu);
    return found;
}

bool ub_capture_stream(cudaStream_t stream)
{
    if (atomic_load_explicit(&ub_capture_live, memory_order_relaxed) == 0)
        return false;
    pthread_mutex_lock(&mu);
    bool found = stream_index(stream) >= 0;
    pthread_mutex_unlock(&mu);
    return found;
}
