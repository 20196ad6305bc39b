/* A program built with CUDA_API_PER_THREAD_DEFAULT_STREAM (as some frameworks are): the headers
 * turn its calls into the _ptsz/_ptds entry points, stream 0 means the calling thread's own
 * default stream, and CUPTI reports the _ptsz callback ids.  Linking this test is itself the
 * check that the stand-in exports every entry point such a program needs. */
#define CUDA_API_PER_THREAD_DEFAULT_STREAM 1

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <cuda_runtime_api.h>
#include <cupti.h>

#include "../testing/queues.h"
#include "../testing/sync.h"

#define CHECK(call) assert_int_equal((call), cudaSuccess)

/* Two host threads, each enqueuing on "stream 0": with per-thread default streams they are two
 * streams, so each can wait for the other's progress.  On one shared stream this deadlocks. */
struct pair {
    struct gate first_reached, second_reached, done[2];
};

static void first_side(void *arg)
{
    struct pair *p = arg;
    gate_open(&p->first_reached);
    gate_wait(&p->second_reached);
}

static void second_side(void *arg)
{
    struct pair *p = arg;
    gate_wait(&p->first_reached);
    gate_open(&p->second_reached);
}

static void *second_thread(void *arg)
{
    struct pair *p = arg;
    if (cudaLaunchHostFunc(0, second_side, p) != cudaSuccess ||
        cudaLaunchHostFunc(0, gate_open_fn, &p->done[1]) != cudaSuccess ||
        cudaStreamSynchronize(0) != cudaSuccess)
        return arg;
    return NULL;
}

static void test_stream_zero_is_per_thread(void **state)
{
    (void)state;
    struct pair p = {GATE_INIT, GATE_INIT, {GATE_INIT, GATE_INIT}};
    CHECK(cudaLaunchHostFunc(0, first_side, &p));
    CHECK(cudaLaunchHostFunc(0, gate_open_fn, &p.done[0]));
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, second_thread, &p), 0);
    assert_true(gate_wait(&p.done[0]));
    void *failed;
    pthread_join(t, &failed);
    assert_null(failed);
    assert_true(gate_is_open(&p.done[1]));
    CHECK(cudaStreamSynchronize(0));
    CHECK(cudaStreamQuery(0));
}

static CUpti_CallbackId last_cbid;
static char last_name[64];

static void CUPTIAPI remember(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *cbdata)
{
    (void)userdata;
    (void)domain;
    const CUpti_CallbackData *d = cbdata;
    if (d->callbackSite == CUPTI_API_EXIT) {
        last_cbid = cbid;
        snprintf(last_name, sizeof last_name, "%s", d->functionName);
    }
}

static void test_ptsz_entry_points_and_callbacks(void **state)
{
    (void)state;
    CUpti_SubscriberHandle sub;
    assert_int_equal(cuptiSubscribe(&sub, remember, NULL), CUPTI_SUCCESS);
    assert_int_equal(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API), CUPTI_SUCCESS);
    char *d;
    char host[32] = "per-thread";
    CHECK(cudaMalloc((void **)&d, sizeof host));
    CHECK(cudaMemcpyAsync(d, host, sizeof host, cudaMemcpyHostToDevice, 0));
    assert_int_equal(last_cbid, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000);
    assert_string_equal(last_name, "cudaMemcpyAsync_ptsz");
    CHECK(cudaMemsetAsync(d, 'x', 3, 0));
    assert_int_equal(last_cbid, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000);
    cudaEvent_t e;
    CHECK(cudaEventCreate(&e));
    CHECK(cudaEventRecord(e, 0));
    assert_int_equal(last_cbid, CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_ptsz_v7000);
    CHECK(cudaEventRecordWithFlags(e, 0, 0));
    assert_int_equal(last_cbid, CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_ptsz_v11010);
    CHECK(cudaStreamWaitEvent(0, e, 0));
    assert_int_equal(last_cbid, CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_ptsz_v7000);
    CHECK(cudaStreamSynchronize(0));
    assert_int_equal(last_cbid, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000);
    char back[32];
    CHECK(cudaMemcpy(back, d, sizeof back, cudaMemcpyDeviceToHost));
    assert_int_equal(last_cbid, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000);
    assert_memory_equal(back, "xxx-thread", 11);
    CHECK(cudaMemset(d, 0, 4));
    assert_int_equal(last_cbid, CUPTI_RUNTIME_TRACE_CBID_cudaMemset_ptds_v7000);
    assert_int_equal(cuptiUnsubscribe(sub), CUPTI_SUCCESS);

    unsigned flags = 99;
    int prio = 99;
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusActive;
    CHECK(cudaStreamGetFlags(0, &flags));
    CHECK(cudaStreamGetPriority(0, &prio));
    CHECK(cudaStreamIsCapturing(0, &st));
    assert_int_equal(st, cudaStreamCaptureStatusNone);
    CHECK(cudaStreamGetCaptureInfo(0, &st, NULL, NULL, NULL, NULL, NULL));
    CHECK(cudaEventSynchronize(e));
    CHECK(cudaEventDestroy(e));
    CHECK(cudaFree(d));
}

int main(void)
{
    emu_test_own_queues();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stream_zero_is_per_thread),
        cmocka_unit_test(test_ptsz_entry_points_and_callbacks),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    return emu_test_queues_were_own() ? failed : failed + 1;
}
