/* The emulated CUDA runtime: events (binding at call time, never-recorded events, query,
 * synchronize, elapsed time, when a record is stamped, flags and invalid handles). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>
#include <cuda_runtime_api.h>

#include "../emu_internal.h"
#include "../testing/queues.h"
#include "../testing/sync.h"

#define CHECK(call) assert_int_equal((call), cudaSuccess)

/* A wait binds to the record that is the event's latest when cudaStreamWaitEvent is called:
 * re-recording the event afterwards must not delay (or release) the waiter. */
static void test_wait_binds_to_record_at_call_time(void **state)
{
    (void)state;
    cudaStream_t a, b, c;
    CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&c, cudaStreamNonBlocking));
    cudaEvent_t e;
    CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    struct gate g1 = GATE_INIT, g2 = GATE_INIT, b_done = GATE_INIT, c_done = GATE_INIT;

    CHECK(cudaLaunchHostFunc(a, gate_host_fn, &g1));
    CHECK(cudaEventRecord(e, a));                     /* record 1: after g1 */
    CHECK(cudaStreamWaitEvent(b, e, 0));              /* binds to record 1 */
    CHECK(cudaLaunchHostFunc(b, gate_open_fn, &b_done));
    CHECK(cudaLaunchHostFunc(a, gate_host_fn, &g2));
    CHECK(cudaEventRecordWithFlags(e, a, cudaEventRecordDefault));   /* record 2: after g2 */
    CHECK(cudaStreamWaitEvent(c, e, 0));              /* binds to record 2 */
    CHECK(cudaLaunchHostFunc(c, gate_open_fn, &c_done));

    assert_int_equal(cudaEventQuery(e), cudaErrorNotReady);
    assert_int_equal(cudaStreamQuery(b), cudaErrorNotReady);
    gate_open(&g1);
    /* Record 1 completes: b is released although the event's latest record (2) is pending. */
    assert_true(gate_wait(&b_done));
    assert_int_equal(cudaEventQuery(e), cudaErrorNotReady);
    assert_false(gate_is_open(&c_done));
    assert_int_equal(cudaStreamQuery(c), cudaErrorNotReady);
    gate_open(&g2);
    assert_true(gate_wait(&c_done));
    CHECK(cudaEventSynchronize(e));
    CHECK(cudaEventQuery(e));
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaEventDestroy(e));
    CHECK(cudaStreamDestroy(a));
    CHECK(cudaStreamDestroy(b));
    CHECK(cudaStreamDestroy(c));
}

/* A record made after the wait call never releases a waiter bound to an earlier record:
 * here the earlier record is still blocked, the later one completes at once. */
static void test_later_record_does_not_release_waiter(void **state)
{
    (void)state;
    cudaStream_t a, idle, b;
    CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&idle, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
    cudaEvent_t e;
    CHECK(cudaEventCreate(&e));
    struct gate g = GATE_INIT, later_done = GATE_INIT;
    CHECK(cudaLaunchHostFunc(a, gate_host_fn, &g));
    CHECK(cudaEventRecord(e, a));
    CHECK(cudaStreamWaitEvent(b, e, 0));
    CHECK(cudaEventRecord(e, idle));                  /* completes immediately */
    CHECK(cudaLaunchHostFunc(idle, gate_open_fn, &later_done));
    assert_true(gate_wait(&later_done));
    CHECK(cudaEventSynchronize(e));                   /* the latest record is done... */
    assert_int_equal(cudaStreamQuery(b), cudaErrorNotReady);   /* ...but b waits for the first */
    gate_open(&g);
    CHECK(cudaStreamSynchronize(b));
    CHECK(cudaEventDestroy(e));
    CHECK(cudaStreamDestroy(a));
    CHECK(cudaStreamDestroy(idle));
    CHECK(cudaStreamDestroy(b));
}

static void test_never_recorded_event_is_complete(void **state)
{
    (void)state;
    cudaEvent_t e, other;
    CHECK(cudaEventCreate(&e));
    CHECK(cudaEventCreate(&other));
    CHECK(cudaEventQuery(e));
    CHECK(cudaEventSynchronize(e));
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    struct gate ran = GATE_INIT;
    CHECK(cudaStreamWaitEvent(s, e, 0));
    CHECK(cudaLaunchHostFunc(s, gate_open_fn, &ran));
    assert_true(gate_wait(&ran));
    CHECK(cudaEventRecord(other, s));
    CHECK(cudaEventSynchronize(other));
    float ms;
    assert_int_equal(cudaEventElapsedTime(&ms, e, other), cudaErrorInvalidResourceHandle);
    CHECK(cudaEventDestroy(e));
    CHECK(cudaEventDestroy(other));
    CHECK(cudaStreamDestroy(s));
}

/* Busy work of a known minimum duration on the worker (measured, not slept). */
static void spin_2ms(void *arg)
{
    (void)arg;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do
        clock_gettime(CLOCK_MONOTONIC, &t);
    while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 2000000L);
}

static void test_query_synchronize_elapsed(void **state)
{
    (void)state;
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    cudaEvent_t start, end, untimed;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreateWithFlags(&end, cudaEventBlockingSync));
    CHECK(cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming));
    struct gate g = GATE_INIT;
    CHECK(cudaLaunchHostFunc(s, gate_host_fn, &g));
    CHECK(cudaEventRecord(start, s));
    CHECK(cudaLaunchHostFunc(s, spin_2ms, NULL));
    CHECK(cudaEventRecord(end, s));
    CHECK(cudaEventRecord(untimed, s));
    float ms = -1;
    assert_int_equal(cudaEventQuery(start), cudaErrorNotReady);
    assert_int_equal(cudaEventQuery(end), cudaErrorNotReady);
    assert_int_equal(cudaEventElapsedTime(&ms, start, end), cudaErrorNotReady);
    gate_open(&g);
    CHECK(cudaEventSynchronize(end));
    CHECK(cudaEventQuery(start));
    CHECK(cudaEventElapsedTime(&ms, start, end));
    assert_true(ms >= 2.0f);
    assert_true(ms < 10000.0f);
    CHECK(cudaEventSynchronize(untimed));
    assert_int_equal(cudaEventElapsedTime(&ms, start, untimed), cudaErrorInvalidResourceHandle);
    assert_int_equal(cudaEventElapsedTime(&ms, untimed, end), cudaErrorInvalidResourceHandle);
    assert_int_equal(cudaEventElapsedTime(NULL, start, end), cudaErrorInvalidValue);
    CHECK(cudaEventDestroy(start));
    CHECK(cudaEventDestroy(end));
    CHECK(cudaEventDestroy(untimed));
    CHECK(cudaStreamDestroy(s));
}

static double host_now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* A record is stamped as a GPU stamps it: when the stream got through the work before it (or
 * when the host recorded it, if later), never when the emulator's worker thread got round to
 * it.  Two records with nothing between them carry the same time exactly, however the worker
 * thread is scheduled (a worker descheduled between two records on a loaded machine made them
 * milliseconds apart). */
static void test_records_stamped_when_stream_reached_them(void **state)
{
    (void)state;
    cudaStream_t a, b, idle1, idle2;
    CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&idle1, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&idle2, cudaStreamNonBlocking));
    cudaEvent_t e[6];
    for (int i = 0; i < 6; i++)
        CHECK(cudaEventCreate(&e[i]));
    struct gate g = GATE_INIT;
    CHECK(cudaLaunchHostFunc(a, gate_host_fn, &g));
    CHECK(cudaEventRecord(e[0], a));
    CHECK(cudaEventRecord(e[1], a));          /* nothing between: the same instant */
    CHECK(cudaLaunchHostFunc(a, spin_2ms, NULL));
    CHECK(cudaEventRecord(e[2], a));          /* after 2 ms of work */
    CHECK(cudaStreamWaitEvent(b, e[1], 0));
    CHECK(cudaEventRecord(e[3], b));          /* b goes on once e[1] is done */
    gate_open(&g);
    CHECK(cudaEventSynchronize(e[2]));
    CHECK(cudaEventSynchronize(e[3]));
    float ms = -1;
    CHECK(cudaEventElapsedTime(&ms, e[0], e[1]));
    assert_true(ms == 0.0f);
    CHECK(cudaEventElapsedTime(&ms, e[1], e[2]));
    assert_true(ms >= 2.0f);
    CHECK(cudaEventElapsedTime(&ms, e[1], e[3]));
    assert_true(ms >= 0.0f);

    /* On an idle stream the record is stamped when the host records it. */
    double t0 = host_now_ms();
    CHECK(cudaEventRecord(e[4], idle1));
    double t1 = host_now_ms();
    spin_2ms(NULL);
    double t2 = host_now_ms();
    CHECK(cudaEventRecord(e[5], idle2));
    double t3 = host_now_ms();
    CHECK(cudaEventSynchronize(e[4]));
    CHECK(cudaEventSynchronize(e[5]));
    CHECK(cudaEventElapsedTime(&ms, e[4], e[5]));
    assert_true(ms >= (float)(t2 - t1) - 1e-3f);
    assert_true(ms <= (float)(t3 - t0) + 1e-3f);

    for (int i = 0; i < 6; i++)
        CHECK(cudaEventDestroy(e[i]));
    CHECK(cudaStreamDestroy(a));
    CHECK(cudaStreamDestroy(b));
    CHECK(cudaStreamDestroy(idle1));
    CHECK(cudaStreamDestroy(idle2));
}

/* Destroying an event (or its stream) with a record pending is allowed: the record still
 * completes and waits bound to it are released. */
static void test_destroy_with_pending_record(void **state)
{
    (void)state;
    cudaStream_t a, b;
    CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
    cudaEvent_t e;
    CHECK(cudaEventCreate(&e));
    struct gate g = GATE_INIT, b_done = GATE_INIT;
    CHECK(cudaLaunchHostFunc(a, gate_host_fn, &g));
    CHECK(cudaEventRecord(e, a));
    CHECK(cudaStreamWaitEvent(b, e, 0));
    CHECK(cudaLaunchHostFunc(b, gate_open_fn, &b_done));
    CHECK(cudaEventDestroy(e));
    CHECK(cudaStreamDestroy(a));
    assert_int_equal(cudaStreamQuery(b), cudaErrorNotReady);
    gate_open(&g);
    assert_true(gate_wait(&b_done));
    CHECK(cudaStreamSynchronize(b));
    CHECK(cudaStreamDestroy(b));
}

static void test_event_flags_and_invalid_handles(void **state)
{
    (void)state;
    cudaEvent_t e;
    assert_int_equal(cudaEventCreateWithFlags(&e, 0x40), cudaErrorInvalidValue);
    assert_int_equal(cudaEventCreateWithFlags(&e, cudaEventInterprocess), cudaErrorInvalidValue);
    CHECK(cudaEventCreateWithFlags(&e, cudaEventInterprocess | cudaEventDisableTiming));
    assert_int_equal(cudaEventRecordWithFlags(e, NULL, 0x10), cudaErrorInvalidValue);
    CHECK(cudaEventRecordWithFlags(e, NULL, cudaEventRecordExternal));
    CHECK(cudaEventSynchronize(e));
    assert_int_equal(cudaStreamWaitEvent(NULL, e, 0x10), cudaErrorInvalidValue);
    CHECK(cudaEventDestroy(e));
    assert_int_equal(cudaEventQuery(e), cudaErrorInvalidResourceHandle);
    assert_int_equal(cudaEventSynchronize(e), cudaErrorInvalidResourceHandle);
    assert_int_equal(cudaEventRecord(e, NULL), cudaErrorInvalidResourceHandle);
    assert_int_equal(cudaStreamWaitEvent(NULL, e, 0), cudaErrorInvalidResourceHandle);
    assert_int_equal(cudaEventDestroy(e), cudaErrorInvalidResourceHandle);
    assert_int_equal(cudaEventQuery(NULL), cudaErrorInvalidResourceHandle);
    assert_int_equal(cudaEventCreate(NULL), cudaErrorInvalidValue);

    cudaStream_t dead;
    CHECK(cudaStreamCreate(&dead));
    CHECK(cudaStreamDestroy(dead));
    CHECK(cudaEventCreate(&e));
    assert_int_equal(cudaEventRecord(e, dead), cudaErrorInvalidResourceHandle);
    CHECK(cudaEventQuery(e));   /* a failed record leaves the event as it was */
    assert_int_equal(cudaStreamWaitEvent(dead, e, 0), cudaErrorInvalidResourceHandle);
    CHECK(cudaEventDestroy(e));
    (void)cudaGetLastError();
}

int main(void)
{
    emu_test_own_queues();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wait_binds_to_record_at_call_time),
        cmocka_unit_test(test_later_record_does_not_release_waiter),
        cmocka_unit_test(test_never_recorded_event_is_complete),
        cmocka_unit_test(test_query_synchronize_elapsed),
        cmocka_unit_test(test_records_stamped_when_stream_reached_them),
        cmocka_unit_test(test_destroy_with_pending_record),
        cmocka_unit_test(test_event_flags_and_invalid_handles),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    return emu_test_queues_were_own() ? failed : failed + 1;
}
