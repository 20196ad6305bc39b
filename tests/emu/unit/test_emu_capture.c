/* The emulated runtime's stream capture (tests/emu/cudart/capture.c): work on a capturing stream
 * is recorded, not run, and runs at each launch of the graph; each rule CUDA documents for
 * capture (forbidden queries and synchronizations, the capture modes, cross-stream capture and
 * its join back to the origin, external event nodes, the legacy stream) fails as CUDA fails and
 * invalidates the capture where CUDA does; and an event records only on a stream of its own
 * device. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <cuda_runtime_api.h>

#include "../emu_internal.h"
#include "../testing/sync.h"

#include "usbyte/cuda_exports.h"

#define CHECK(call) assert_int_equal((call), cudaSuccess)

static void add_one(void *arg)
{
    __atomic_add_fetch((int *)arg, 1, __ATOMIC_SEQ_CST);
}

static int load(const int *x)
{
    return __atomic_load_n(x, __ATOMIC_SEQ_CST);
}

static cudaStream_t new_stream(void)
{
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    return s;
}

/* Ends the capture on s expecting `want`, with no graph unless it succeeded. */
static cudaGraph_t end_expect(cudaStream_t s, cudaError_t want)
{
    cudaGraph_t g = (cudaGraph_t)0x1;
    assert_int_equal(cudaStreamEndCapture(s, &g), want);
    if (want != cudaSuccess)
        assert_null(g);
    else
        assert_non_null(g);
    cudaGetLastError();
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusActive;
    CHECK(cudaStreamIsCapturing(s, &st));
    assert_int_equal(st, cudaStreamCaptureStatusNone);
    return g;
}

static void expect_status(cudaStream_t s, enum cudaStreamCaptureStatus want)
{
    enum cudaStreamCaptureStatus st;
    CHECK(cudaStreamIsCapturing(s, &st));
    assert_int_equal(st, want);
}

/* Captured work does not run; the graph runs it at every launch, copies, memsets and host
 * functions in their captured order. */
static void test_captured_work_runs_at_each_launch(void **state)
{
    (void)state;
    cudaStream_t s = new_stream();
    int *buf, count = 0;
    CHECK(cudaMalloc((void **)&buf, 2 * sizeof(int)));
    CHECK(cudaMemset(buf, 0, 2 * sizeof(int)));
    int seven = 7;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    expect_status(s, cudaStreamCaptureStatusActive);
    CHECK(cudaMemsetAsync(buf, 0xff, sizeof(int), s));
    CHECK(cudaMemcpyAsync(buf + 1, &seven, sizeof(int), cudaMemcpyHostToDevice, s));
    CHECK(cudaLaunchHostFunc(s, add_one, &count));
    cudaGraph_t g = end_expect(s, cudaSuccess);
    CHECK(cudaStreamSynchronize(s));
    assert_int_equal(count, 0);   /* recorded, not run */
    assert_int_equal(buf[0], 0);
    assert_int_equal(buf[1], 0);
    cudaGraphExec_t e;
    CHECK(cudaGraphInstantiate(&e, g, 0));
    CHECK(cudaGraphDestroy(g));   /* the executable graph keeps its own nodes */
    for (int i = 1; i <= 3; i++) {
        CHECK(cudaGraphLaunch(e, s));
        CHECK(cudaStreamSynchronize(s));
        assert_int_equal(load(&count), i);
        assert_int_equal(buf[0], -1);
        assert_int_equal(buf[1], 7);
        buf[0] = buf[1] = 0;
    }
    CHECK(cudaGraphExecDestroy(e));
    CHECK(cudaFree(buf));
    CHECK(cudaStreamDestroy(s));
}

/* Synchronizing or querying a capturing stream, or an event recorded in a capture, is refused
 * and invalidates the capture: its later work fails, EndCapture returns no graph. */
static void test_sync_and_query_invalidate(void **state)
{
    (void)state;
    cudaStream_t s = new_stream();
    int count = 0;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    assert_int_equal(cudaStreamSynchronize(s), cudaErrorStreamCaptureUnsupported);
    expect_status(s, cudaStreamCaptureStatusInvalidated);
    assert_int_equal(cudaLaunchHostFunc(s, add_one, &count), cudaErrorStreamCaptureInvalidated);
    end_expect(s, cudaErrorStreamCaptureInvalidated);

    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    assert_int_equal(cudaStreamQuery(s), cudaErrorStreamCaptureUnsupported);
    end_expect(s, cudaErrorStreamCaptureInvalidated);

    cudaEvent_t ev;
    CHECK(cudaEventCreate(&ev));
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK(cudaEventRecord(ev, s));
    assert_int_equal(cudaEventQuery(ev), cudaErrorCapturedEvent);
    end_expect(s, cudaErrorStreamCaptureInvalidated);

    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK(cudaEventRecord(ev, s));
    assert_int_equal(cudaEventSynchronize(ev), cudaErrorCapturedEvent);
    end_expect(s, cudaErrorStreamCaptureInvalidated);
    /* Once the capture ended, the event is an ordinary one again. */
    CHECK(cudaEventQuery(ev));

    /* An event recorded outside the capture may be queried during it. */
    CHECK(cudaEventRecord(ev, s));
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    assert_int_not_equal(cudaEventSynchronize(ev), cudaErrorCapturedEvent);
    cudaGraph_t g = end_expect(s, cudaSuccess);
    CHECK(cudaGraphDestroy(g));

    /* The device encompasses the capture whatever the mode. */
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    assert_int_equal(cudaDeviceSynchronize(), cudaErrorStreamCaptureUnsupported);
    end_expect(s, cudaErrorStreamCaptureInvalidated);
    CHECK(cudaEventDestroy(ev));
    CHECK(cudaStreamDestroy(s));
}

/* Potentially unsafe calls (cudaMalloc) under each mode of the capture and of the caller. */
struct unsafe_call {
    enum cudaStreamCaptureMode thread_mode;
    cudaError_t result;
};

static void *malloc_from_thread(void *arg)
{
    struct unsafe_call *u = arg;
    enum cudaStreamCaptureMode m = u->thread_mode;
    CHECK(cudaThreadExchangeStreamCaptureMode(&m));
    assert_int_equal(m, cudaStreamCaptureModeGlobal);   /* every thread starts in global mode */
    void *p = NULL;
    u->result = cudaMalloc(&p, 64);
    if (u->result == cudaSuccess)
        CHECK(cudaFree(p));
    cudaGetLastError();
    return NULL;
}

static cudaError_t other_thread_malloc(enum cudaStreamCaptureMode thread_mode)
{
    struct unsafe_call u = {thread_mode, cudaErrorUnknown};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, malloc_from_thread, &u), 0);
    pthread_join(t, NULL);
    return u.result;
}

static void test_capture_modes(void **state)
{
    (void)state;
    cudaStream_t s = new_stream();
    void *p;
    /* Global: another thread in global mode may not make an unsafe call... */
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    assert_int_equal(other_thread_malloc(cudaStreamCaptureModeGlobal), cudaErrorStreamCaptureUnsupported);
    end_expect(s, cudaErrorStreamCaptureInvalidated);
    /* ...one that swapped to relaxed (or thread-local) may. */
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK(other_thread_malloc(cudaStreamCaptureModeRelaxed));
    CHECK(other_thread_malloc(cudaStreamCaptureModeThreadLocal));
    /* The capturing thread itself may not, unless it swaps to relaxed. */
    enum cudaStreamCaptureMode m = cudaStreamCaptureModeRelaxed;
    CHECK(cudaThreadExchangeStreamCaptureMode(&m));
    CHECK(cudaMalloc(&p, 64));
    CHECK(cudaFree(p));
    CHECK(cudaThreadExchangeStreamCaptureMode(&m));
    assert_int_equal(m, cudaStreamCaptureModeRelaxed);
    cudaGraph_t g = end_expect(s, cudaSuccess);
    CHECK(cudaGraphDestroy(g));
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    assert_int_equal(cudaMalloc(&p, 64), cudaErrorStreamCaptureUnsupported);
    end_expect(s, cudaErrorStreamCaptureInvalidated);
    /* Thread-local: other threads are not concerned; the capturing thread is. */
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    CHECK(other_thread_malloc(cudaStreamCaptureModeGlobal));
    assert_int_equal(cudaMalloc(&p, 64), cudaErrorStreamCaptureUnsupported);
    end_expect(s, cudaErrorStreamCaptureInvalidated);
    /* Relaxed: nobody is prohibited. */
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    CHECK(cudaMalloc(&p, 64));
    CHECK(cudaFree(p));
    CHECK(other_thread_malloc(cudaStreamCaptureModeGlobal));
    g = end_expect(s, cudaSuccess);
    CHECK(cudaGraphDestroy(g));
    /* EndCapture of a non-relaxed capture from another thread, and bad arguments. */
    assert_int_equal(cudaStreamBeginCapture(s, (enum cudaStreamCaptureMode)7), cudaErrorInvalidValue);
    assert_int_equal(cudaStreamBeginCapture(cudaStreamLegacy, cudaStreamCaptureModeGlobal),
                     cudaErrorStreamCaptureUnsupported);
    assert_int_equal(cudaStreamEndCapture(s, &g), cudaErrorIllegalState);
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    assert_int_equal(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaErrorIllegalState);
    g = end_expect(s, cudaSuccess);
    CHECK(cudaGraphDestroy(g));
    cudaGetLastError();
    CHECK(cudaStreamDestroy(s));
}

struct end_args {
    cudaStream_t s;
    cudaError_t r;
    cudaGraph_t g;
};

static void *end_from_thread(void *arg)
{
    struct end_args *a = arg;
    a->r = cudaStreamEndCapture(a->s, &a->g);
    return NULL;
}

static void test_end_from_another_thread(void **state)
{
    (void)state;
    cudaStream_t s = new_stream();
    struct end_args a = {s, cudaErrorUnknown, NULL};
    pthread_t t;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    assert_int_equal(pthread_create(&t, NULL, end_from_thread, &a), 0);
    pthread_join(t, NULL);
    assert_int_equal(a.r, cudaErrorStreamCaptureWrongThread);
    cudaGraph_t g = end_expect(s, cudaSuccess);
    CHECK(cudaGraphDestroy(g));
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    assert_int_equal(pthread_create(&t, NULL, end_from_thread, &a), 0);
    pthread_join(t, NULL);
    CHECK(a.r);
    CHECK(cudaGraphDestroy(a.g));
    CHECK(cudaStreamDestroy(s));
}

/* Cross-stream capture: a wait on a captured event joins the waiting stream; it must be joined
 * back before EndCapture; its work is part of the graph. */
static void test_cross_stream_capture(void **state)
{
    (void)state;
    cudaStream_t origin = new_stream(), side = new_stream();
    cudaEvent_t fork, join;
    CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    CHECK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
    int count = 0;

    CHECK(cudaStreamBeginCapture(origin, cudaStreamCaptureModeGlobal));
    CHECK(cudaEventRecord(fork, origin));
    CHECK(cudaStreamWaitEvent(side, fork, 0));
    expect_status(side, cudaStreamCaptureStatusActive);
    CHECK(cudaLaunchHostFunc(side, add_one, &count));
    CHECK(cudaEventRecord(join, side));
    CHECK(cudaStreamWaitEvent(origin, join, 0));
    cudaGraph_t g = end_expect(origin, cudaSuccess);
    expect_status(side, cudaStreamCaptureStatusNone);
    assert_int_equal(load(&count), 0);
    cudaGraphExec_t e;
    CHECK(cudaGraphInstantiate(&e, g, 0));
    CHECK(cudaGraphLaunch(e, origin));
    CHECK(cudaStreamSynchronize(origin));
    assert_int_equal(load(&count), 1);
    CHECK(cudaGraphExecDestroy(e));
    CHECK(cudaGraphDestroy(g));

    /* Not joined back: the capture fails. */
    CHECK(cudaStreamBeginCapture(origin, cudaStreamCaptureModeGlobal));
    CHECK(cudaEventRecord(fork, origin));
    CHECK(cudaStreamWaitEvent(side, fork, 0));
    CHECK(cudaLaunchHostFunc(side, add_one, &count));
    end_expect(origin, cudaErrorStreamCaptureUnjoined);
    expect_status(side, cudaStreamCaptureStatusNone);

    /* EndCapture on a joined stream is not the origin's. */
    CHECK(cudaStreamBeginCapture(origin, cudaStreamCaptureModeGlobal));
    CHECK(cudaEventRecord(fork, origin));
    CHECK(cudaStreamWaitEvent(side, fork, 0));
    cudaGraph_t none;
    assert_int_equal(cudaStreamEndCapture(side, &none), cudaErrorStreamCaptureUnmatched);
    end_expect(origin, cudaErrorStreamCaptureInvalidated);

    /* Two captures may not merge. */
    CHECK(cudaStreamBeginCapture(origin, cudaStreamCaptureModeGlobal));
    CHECK(cudaStreamBeginCapture(side, cudaStreamCaptureModeGlobal));
    CHECK(cudaEventRecord(fork, origin));
    assert_int_equal(cudaStreamWaitEvent(side, fork, 0), cudaErrorStreamCaptureMerge);
    end_expect(side, cudaErrorStreamCaptureInvalidated);
    g = end_expect(origin, cudaSuccess);
    CHECK(cudaGraphDestroy(g));
    CHECK(cudaEventDestroy(fork));
    CHECK(cudaEventDestroy(join));
    CHECK(cudaStreamDestroy(origin));
    CHECK(cudaStreamDestroy(side));
}

/* A non-captured event: a plain wait crosses the capture's boundary (refused, invalidating);
 * with cudaEventWaitExternal it is a node that waits at each launch.  A record with
 * cudaEventRecordExternal is a node that records the event at each launch. */
static void test_external_events(void **state)
{
    (void)state;
    cudaStream_t s = new_stream(), other = new_stream();
    cudaEvent_t outside, node;
    CHECK(cudaEventCreateWithFlags(&outside, cudaEventDisableTiming));
    CHECK(cudaEventCreateWithFlags(&node, cudaEventDisableTiming));
    CHECK(cudaEventRecord(outside, other));
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    assert_int_equal(cudaStreamWaitEvent(s, outside, 0), cudaErrorStreamCaptureIsolation);
    end_expect(s, cudaErrorStreamCaptureInvalidated);

    int count = 0;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK(cudaStreamWaitEvent(s, outside, cudaEventWaitExternal));
    CHECK(cudaLaunchHostFunc(s, add_one, &count));
    CHECK(cudaEventRecordWithFlags(node, s, cudaEventRecordExternal));
    cudaGraph_t g = end_expect(s, cudaSuccess);
    CHECK(cudaEventQuery(node));   /* an external record node is not a captured event */
    cudaGraphExec_t e;
    CHECK(cudaGraphInstantiate(&e, g, 0));
    /* The launch waits for `outside`, re-recorded behind a closed gate. */
    struct gate gate = GATE_INIT;
    CHECK(cudaLaunchHostFunc(other, gate_host_fn, &gate));
    CHECK(cudaEventRecord(outside, other));
    CHECK(cudaGraphLaunch(e, s));
    assert_int_equal(cudaEventQuery(node), cudaErrorNotReady);   /* recorded anew by the launch */
    assert_int_equal(load(&count), 0);
    gate_open(&gate);
    CHECK(cudaEventSynchronize(node));
    assert_int_equal(load(&count), 1);
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaGraphExecDestroy(e));
    CHECK(cudaGraphDestroy(g));
    CHECK(cudaEventDestroy(outside));
    CHECK(cudaEventDestroy(node));
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaStreamDestroy(other));
}

/* The legacy stream while a blocking stream captures: its use would depend on the capture. */
static void test_legacy_stream(void **state)
{
    (void)state;
    cudaStream_t blocking;
    CHECK(cudaStreamCreate(&blocking));
    CHECK(cudaStreamBeginCapture(blocking, cudaStreamCaptureModeRelaxed));
    enum cudaStreamCaptureStatus st;
    assert_int_equal(cudaStreamIsCapturing(cudaStreamLegacy, &st), cudaErrorStreamCaptureImplicit);
    expect_status(blocking, cudaStreamCaptureStatusActive);   /* a status query invalidates nothing */
    int count = 0;
    assert_int_equal(cudaLaunchHostFunc(cudaStreamLegacy, add_one, &count), cudaErrorStreamCaptureImplicit);
    end_expect(blocking, cudaErrorStreamCaptureInvalidated);
    /* A non-blocking stream's capture leaves the legacy stream alone. */
    cudaStream_t nb = new_stream();
    CHECK(cudaStreamBeginCapture(nb, cudaStreamCaptureModeRelaxed));
    CHECK(cudaLaunchHostFunc(cudaStreamLegacy, add_one, &count));
    CHECK(cudaStreamSynchronize(cudaStreamLegacy));
    assert_int_equal(load(&count), 1);
    cudaGraph_t g = end_expect(nb, cudaSuccess);
    CHECK(cudaGraphDestroy(g));
    CHECK(cudaStreamDestroy(nb));
    CHECK(cudaStreamDestroy(blocking));
}

/* Events belong to the device current at their creation: recording one on a stream of another
 * device is an invalid handle; waiting on another device's event is allowed. */
static void test_event_device(void **state)
{
    (void)state;
    int n;
    CHECK(cudaGetDeviceCount(&n));
    assert_true(n >= 2);
    CHECK(cudaSetDevice(0));
    cudaEvent_t e0;
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaSetDevice(1));
    cudaStream_t s1 = new_stream();
    int dev = -1;
    CHECK(cudaStreamGetDevice(s1, &dev));
    assert_int_equal(dev, 1);
    assert_int_equal(cudaEventRecord(e0, s1), cudaErrorInvalidResourceHandle);
    cudaGetLastError();
    cudaEvent_t e1;
    CHECK(cudaEventCreate(&e1));
    CHECK(cudaEventRecord(e1, s1));
    CHECK(cudaSetDevice(0));
    cudaStream_t s0 = new_stream();
    CHECK(cudaEventRecord(e0, s0));
    CHECK(cudaStreamWaitEvent(s0, e1, 0));
    CHECK(cudaStreamSynchronize(s0));
    CHECK(cudaEventDestroy(e0));
    CHECK(cudaEventDestroy(e1));
    CHECK(cudaStreamDestroy(s0));
    CHECK(cudaStreamDestroy(s1));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_captured_work_runs_at_each_launch),
        cmocka_unit_test(test_sync_and_query_invalidate),
        cmocka_unit_test(test_capture_modes),
        cmocka_unit_test(test_end_from_another_thread),
        cmocka_unit_test(test_cross_stream_capture),
        cmocka_unit_test(test_external_events),
        cmocka_unit_test(test_legacy_stream),
        cmocka_unit_test(test_event_device),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
