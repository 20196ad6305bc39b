/* The emulated CUPTI callback API: subscription rules, enabling, and the enter/exit callbacks
 * of the runtime functions usbyte watches, with their parameter structs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>

#include "../testing/sync.h"

#define CHECK(call) assert_int_equal((call), cudaSuccess)
#define CUPTI_CHECK(call) assert_int_equal((call), CUPTI_SUCCESS)

struct seen {
    CUpti_CallbackDomain domain;
    CUpti_CallbackId cbid;
    CUpti_ApiCallbackSite site;
    char name[64];
    uint32_t correlation_id;
    uint64_t *correlation_data;
    CUcontext context;
    const char *symbol;
    int has_return;
    int return_value;
    unsigned char params[128];
};

static struct seen log_[64];

/* The size of the parameter struct CUPTI's headers define for each call this test makes. */
static size_t params_size(CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
        switch (cbid) {
        case CUPTI_DRIVER_TRACE_CBID_cuStreamWriteValue64_v2: return sizeof(cuStreamWriteValue64_v2_params);
        case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue32_v2: return sizeof(cuStreamWaitValue32_v2_params);
        default: return 0;
        }
    }
    switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020: return sizeof(cudaMemcpyAsync_v3020_params);
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020: return sizeof(cudaMemcpy_v3020_params);
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020: return sizeof(cudaMemsetAsync_v3020_params);
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchHostFunc_v10000: return sizeof(cudaLaunchHostFunc_v10000_params);
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020: return sizeof(cudaEventRecord_v3020_params);
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_v11010: return sizeof(cudaEventRecordWithFlags_v11010_params);
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020: return sizeof(cudaStreamWaitEvent_v3020_params);
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000: return sizeof(cudaLaunchKernel_v7000_params);
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020: return sizeof(cudaStreamSynchronize_v3020_params);
    default: return 0;
    }
}
static int n_log;

static void CUPTIAPI on_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *cbdata)
{
    const CUpti_CallbackData *d = cbdata;
    assert_ptr_equal(userdata, &n_log);
    if (n_log == (int)(sizeof log_ / sizeof log_[0]))
        return;
    struct seen *s = &log_[n_log++];
    s->domain = domain;
    s->cbid = cbid;
    s->site = d->callbackSite;
    snprintf(s->name, sizeof s->name, "%s", d->functionName);
    s->correlation_id = d->correlationId;
    s->correlation_data = d->correlationData;
    s->context = d->context;
    s->symbol = d->symbolName;
    s->has_return = d->functionReturnValue != NULL;
    s->return_value = s->has_return ? *(const int *)d->functionReturnValue : -1;
    memset(s->params, 0, sizeof s->params);
    size_t size = params_size(domain, cbid);
    if (size > 0) {
        assert_non_null(d->functionParams);
        memcpy(s->params, d->functionParams, size);
    }
    /* The subscriber may keep per-call data between enter and exit. */
    if (d->callbackSite == CUPTI_API_ENTER)
        *d->correlationData = 0x5eed0000u + d->correlationId;
    else
        assert_int_equal(*d->correlationData, 0x5eed0000u + d->correlationId);
}

static CUpti_SubscriberHandle sub;

static int setup(void **state)
{
    (void)state;
    n_log = 0;
    return cuptiSubscribe(&sub, on_callback, &n_log) == CUPTI_SUCCESS ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return cuptiUnsubscribe(sub) == CUPTI_SUCCESS ? 0 : -1;
}

/* Checks that log_[first] and log_[first+1] are the enter/exit pair of one call. */
static const struct seen *expect_pair(int first, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const char *name,
                                      int result)
{
    assert_true(n_log >= first + 2);
    const struct seen *in = &log_[first], *out = &log_[first + 1];
    assert_int_equal(in->domain, domain);
    assert_int_equal(out->domain, domain);
    assert_int_equal(in->cbid, cbid);
    assert_int_equal(out->cbid, cbid);
    assert_int_equal(in->site, CUPTI_API_ENTER);
    assert_int_equal(out->site, CUPTI_API_EXIT);
    assert_string_equal(in->name, name);
    assert_string_equal(out->name, name);
    assert_int_equal(in->correlation_id, out->correlation_id);
    assert_true(in->correlation_id != 0);
    assert_ptr_equal(in->correlation_data, out->correlation_data);
    assert_non_null(in->context);
    assert_null(in->symbol);
    assert_false(in->has_return);
    assert_true(out->has_return);
    assert_int_equal(out->return_value, result);
    assert_memory_equal(in->params, out->params, sizeof in->params);
    return in;
}

static void test_memcpy_async_params(void **state)
{
    (void)state;
    CUPTI_CHECK(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API));
    void *d;
    char host[64] = "payload";
    CHECK(cudaMalloc(&d, sizeof host));
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    n_log = 0;
    CHECK(cudaMemcpyAsync(d, host, 40, cudaMemcpyHostToDevice, s));
    const struct seen *in = expect_pair(0, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
                                        "cudaMemcpyAsync", cudaSuccess);
    const cudaMemcpyAsync_v3020_params *p = (const void *)in->params;
    assert_ptr_equal(p->dst, d);
    assert_ptr_equal(p->src, host);
    assert_int_equal(p->count, 40);
    assert_int_equal(p->kind, cudaMemcpyHostToDevice);
    assert_ptr_equal(p->stream, s);
    assert_int_equal(n_log, 2);

    /* A failing call is reported too, with its error at exit. */
    n_log = 0;
    assert_int_equal(cudaMemcpyAsync(host, host + 1, 8, cudaMemcpyDeviceToHost, s), cudaErrorInvalidValue);
    expect_pair(0, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, "cudaMemcpyAsync",
                cudaErrorInvalidValue);
    (void)cudaGetLastError();

    n_log = 0;
    CHECK(cudaMemcpy(host, d, 8, cudaMemcpyDeviceToHost));
    in = expect_pair(0, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, "cudaMemcpy", cudaSuccess);
    const cudaMemcpy_v3020_params *q = (const void *)in->params;
    assert_ptr_equal(q->dst, host);
    assert_ptr_equal(q->src, d);
    assert_int_equal(q->count, 8);
    assert_int_equal(q->kind, cudaMemcpyDeviceToHost);

    n_log = 0;
    CHECK(cudaMemsetAsync(d, 7, 16, s));
    in = expect_pair(0, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020, "cudaMemsetAsync",
                     cudaSuccess);
    const cudaMemsetAsync_v3020_params *m = (const void *)in->params;
    assert_ptr_equal(m->devPtr, d);
    assert_int_equal(m->value, 7);
    assert_int_equal(m->count, 16);
    assert_ptr_equal(m->stream, s);
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFree(d));
}

static void nothing(void *arg)
{
    (void)arg;
}

static void emulated_kernel(void **args)
{
    **(int **)args[0] += 1;
}

static void test_launch_and_event_params(void **state)
{
    (void)state;
    CUPTI_CHECK(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API));
    cudaStream_t s, t;
    CHECK(cudaStreamCreate(&s));
    CHECK(cudaStreamCreate(&t));
    cudaEvent_t e;
    CHECK(cudaEventCreate(&e));
    int marker;

    n_log = 0;
    CHECK(cudaLaunchHostFunc(s, nothing, &marker));
    const struct seen *in = expect_pair(0, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchHostFunc_v10000,
                                        "cudaLaunchHostFunc", cudaSuccess);
    const cudaLaunchHostFunc_v10000_params *h = (const void *)in->params;
    assert_ptr_equal(h->stream, s);
    assert_true(h->fn == nothing);
    assert_ptr_equal(h->userData, &marker);

    n_log = 0;
    CHECK(cudaEventRecord(e, s));
    in = expect_pair(0, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020, "cudaEventRecord",
                     cudaSuccess);
    const cudaEventRecord_v3020_params *r = (const void *)in->params;
    assert_ptr_equal(r->event, e);
    assert_ptr_equal(r->stream, s);

    n_log = 0;
    CHECK(cudaEventRecordWithFlags(e, t, cudaEventRecordExternal));
    in = expect_pair(0, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_v11010,
                     "cudaEventRecordWithFlags", cudaSuccess);
    const cudaEventRecordWithFlags_v11010_params *rf = (const void *)in->params;
    assert_ptr_equal(rf->event, e);
    assert_ptr_equal(rf->stream, t);
    assert_int_equal(rf->flags, cudaEventRecordExternal);

    n_log = 0;
    CHECK(cudaStreamWaitEvent(s, e, 0));
    in = expect_pair(0, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020,
                     "cudaStreamWaitEvent", cudaSuccess);
    const cudaStreamWaitEvent_v3020_params *w = (const void *)in->params;
    assert_ptr_equal(w->stream, s);
    assert_ptr_equal(w->event, e);
    assert_int_equal(w->flags, 0);

    int counter = 41;
    int *counter_ptr = &counter;
    void *args[] = {&counter_ptr};
    n_log = 0;
    CHECK(cudaLaunchKernel((const void *)emulated_kernel, (dim3){2, 1, 1}, (dim3){32, 1, 1}, args, 0, s));
    in = expect_pair(0, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, "cudaLaunchKernel",
                     cudaSuccess);
    const cudaLaunchKernel_v7000_params *k = (const void *)in->params;
    assert_ptr_equal(k->func, (const void *)emulated_kernel);
    assert_int_equal(k->gridDim.x, 2);
    assert_int_equal(k->blockDim.x, 32);
    assert_ptr_equal(k->args, args);
    assert_ptr_equal(k->stream, s);
    CHECK(cudaStreamSynchronize(s));
    assert_int_equal(counter, 42);

    CHECK(cudaEventDestroy(e));
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaStreamDestroy(t));
}

static void test_enable_single_callback(void **state)
{
    (void)state;
    CUPTI_CHECK(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020));
    uint32_t on = 0;
    CUPTI_CHECK(cuptiGetCallbackState(&on, sub, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020));
    assert_int_equal(on, 1);
    cudaEvent_t e;
    CHECK(cudaEventCreate(&e));
    n_log = 0;
    CHECK(cudaLaunchHostFunc(NULL, nothing, NULL));
    CHECK(cudaStreamSynchronize(NULL));
    assert_int_equal(n_log, 0);
    CHECK(cudaEventRecord(e, NULL));
    assert_int_equal(n_log, 2);
    CUPTI_CHECK(cuptiEnableCallback(0, sub, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020));
    CHECK(cudaEventRecord(e, NULL));
    assert_int_equal(n_log, 2);
    assert_int_equal(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API, 100000), CUPTI_ERROR_INVALID_PARAMETER);
    assert_int_equal(cuptiEnableDomain(1, sub, (CUpti_CallbackDomain)77), CUPTI_ERROR_INVALID_PARAMETER);
    CHECK(cudaEventSynchronize(e));
    CHECK(cudaEventDestroy(e));
}

static void test_driver_domain_memops(void **state)
{
    (void)state;
    CUPTI_CHECK(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API));
    uint64_t *word;
    CHECK(cudaMalloc((void **)&word, sizeof *word));
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    n_log = 0;
    assert_int_equal(cuStreamWriteValue64((CUstream)s, (CUdeviceptr)(uintptr_t)word, 9, 0), CUDA_SUCCESS);
    const struct seen *in = expect_pair(0, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuStreamWriteValue64_v2,
                                        "cuStreamWriteValue64_v2", CUDA_SUCCESS);
    const cuStreamWriteValue64_v2_params *p = (const void *)in->params;
    assert_ptr_equal(p->stream, s);
    assert_true(p->addr == (CUdeviceptr)(uintptr_t)word);
    assert_int_equal(p->value, 9);
    n_log = 0;
    assert_int_equal(cuStreamWaitValue32((CUstream)s, (CUdeviceptr)(uintptr_t)word, 9, CU_STREAM_WAIT_VALUE_EQ), CUDA_SUCCESS);
    expect_pair(0, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue32_v2, "cuStreamWaitValue32_v2",
                CUDA_SUCCESS);
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFree(word));
}

static void test_one_subscriber_at_a_time(void **state)
{
    (void)state;
    CUpti_SubscriberHandle other;
    assert_int_equal(cuptiSubscribe(&other, on_callback, NULL), CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
    const char *text = NULL;
    CUPTI_CHECK(cuptiGetResultString(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, &text));
    assert_string_equal(text, "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED");
    CUPTI_CHECK(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API));
    CUPTI_CHECK(cuptiUnsubscribe(sub));
    n_log = 0;
    CHECK(cudaLaunchHostFunc(NULL, nothing, NULL));
    CHECK(cudaStreamSynchronize(NULL));
    assert_int_equal(n_log, 0);
    assert_int_equal(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API), CUPTI_ERROR_INVALID_PARAMETER);
    /* A new subscription starts with nothing enabled. */
    CUpti_SubscriberParams named = {CUpti_SubscriberParams_STRUCT_SIZE, "first tool", NULL, 0};
    CUPTI_CHECK(cuptiSubscribe_v2(&sub, on_callback, &n_log, &named));
    CHECK(cudaLaunchHostFunc(NULL, nothing, NULL));
    assert_int_equal(n_log, 0);
    CHECK(cudaStreamSynchronize(NULL));
    /* The one turned away learns who holds CUPTI, by the name CUPTI gives it. */
    char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = "";
    CUpti_SubscriberParams second = {CUpti_SubscriberParams_STRUCT_SIZE, "second tool", holder, sizeof holder};
    assert_int_equal(cuptiSubscribe_v2(&other, on_callback, NULL, &second), CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
    assert_string_equal(holder, "CUPTI for first tool");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_memcpy_async_params, setup, teardown),
        cmocka_unit_test_setup_teardown(test_launch_and_event_params, setup, teardown),
        cmocka_unit_test_setup_teardown(test_enable_single_callback, setup, teardown),
        cmocka_unit_test_setup_teardown(test_driver_domain_memops, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_subscriber_at_a_time, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
