/* Every way work reaches a stream (tests/emu/testing/stream_work.h), on the emulator: each call
 * is accepted, runs in stream order (not before the work ahead of it on the stream) and does its
 * work; CUPTI reports it with its domain, callback id and name, and a runtime call reports the
 * driver function it goes through inside its own enter/exit pair, on the calling thread.  Then
 * what CUDA refuses, the emulator refuses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../testing/stream_work.h"
#include "../testing/sync.h"

#define CHECK(call) assert_int_equal((call), cudaSuccess)

struct seen {
    CUpti_CallbackDomain domain;
    CUpti_CallbackId cbid;
    CUpti_ApiCallbackSite site;
    char name[64];
    pthread_t thread;
};

static struct seen log_[16];
static int n_log;
static CUpti_SubscriberHandle sub;

static void CUPTIAPI on_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *cbdata)
{
    (void)userdata;
    const CUpti_CallbackData *d = cbdata;
    if (n_log == (int)(sizeof log_ / sizeof log_[0]))
        return;
    struct seen *s = &log_[n_log++];
    *s = (struct seen){domain, cbid, d->callbackSite, "", pthread_self()};
    snprintf(s->name, sizeof s->name, "%s", d->functionName);
}

static int setup(void **state)
{
    (void)state;
    return sw_subscribe(&sub, on_callback);
}

static int teardown(void **state)
{
    (void)state;
    return cuptiUnsubscribe(sub) == CUPTI_SUCCESS ? 0 : -1;
}

static void hold(void *arg)
{
    gate_wait(arg);
}

static void expect_entry(int i, CUpti_CallbackDomain domain, uint32_t cbid, CUpti_ApiCallbackSite site, const char *kind)
{
    if (log_[i].domain != domain || log_[i].cbid != cbid || log_[i].site != site)
        fail_msg("%s: callback %d is domain %d id %u site %d (%s), expected domain %d id %u site %d", kind, i,
                 log_[i].domain, log_[i].cbid, log_[i].site, log_[i].name, domain, cbid, site);
    if (!pthread_equal(log_[i].thread, pthread_self()))
        fail_msg("%s: callback %d not on the calling thread", kind, i);
}

/* Each kind on a stream held back by a gate: reported as CUPTI does, not run before the gate
 * opens, run once it does. */
static void test_every_kind(void **state)
{
    (void)state;
    for (int i = 0; i < SW_N_KINDS; i++) {
        const struct sw_kind *k = &sw_kinds[i];
        struct stream_work w;
        assert_int_equal(sw_init(&w, (unsigned char)(0x11 + i)), 0);
        cudaStream_t s;
        CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        struct gate g = GATE_INIT;
        CHECK(cudaLaunchHostFunc(s, hold, &g));
        n_log = 0;
        int rc = k->issue(&w, s);
        if (rc != 0)
            fail_msg("%s (%s) returned %d", k->id, k->name, rc);
        int expected = k->nested ? 4 : 2;
        if (n_log != expected)
            fail_msg("%s: %d callbacks, expected %d", k->id, n_log, expected);
        CUpti_CallbackDomain domain = k->domain == SW_RUNTIME ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API;
        expect_entry(0, domain, k->cbid, CUPTI_API_ENTER, k->id);
        expect_entry(expected - 1, domain, k->cbid, CUPTI_API_EXIT, k->id);
        assert_string_equal(log_[0].name, k->name);
        if (k->nested) {
            expect_entry(1, CUPTI_CB_DOMAIN_DRIVER_API, k->nested, CUPTI_API_ENTER, k->id);
            expect_entry(2, CUPTI_CB_DOMAIN_DRIVER_API, k->nested, CUPTI_API_EXIT, k->id);
        }
        unsigned char *out = sw_out(&w, k), want[SW_BUF] = {0};
        memset(want, w.v, SW_BYTES);
        if (out[0] != 0)
            fail_msg("%s ran before the work ahead of it on the stream", k->id);
        gate_open(&g);
        CHECK(cudaStreamSynchronize(s));
        if (memcmp(out, want, SW_BUF) != 0)
            fail_msg("%s: the %d bytes written are not %d times 0x%02x followed by zeros", k->id, SW_BUF, SW_BYTES, w.v);
        CHECK(cudaStreamDestroy(s));
    }
}

/* What CUDA refuses. */
static void test_refusals(void **state)
{
    (void)state;
    struct stream_work w;
    assert_int_equal(sw_init(&w, 7), 0);
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    /* Launches: empty or too large blocks, too large cooperative grids, no function. */
    assert_int_equal(cudaLaunchKernel(SW_KERNEL, (dim3){0, 1, 1}, SW_ONE, w.args, 0, s), cudaErrorInvalidConfiguration);
    assert_int_equal(cudaLaunchKernel(SW_KERNEL, SW_ONE, (dim3){1025, 1, 1}, w.args, 0, s), cudaErrorInvalidConfiguration);
    assert_int_equal(cudaLaunchCooperativeKernel(SW_KERNEL, (dim3){100000, 1, 1}, SW_ONE, w.args, 0, s),
                     cudaErrorCooperativeLaunchTooLarge);
    assert_int_equal(cudaLaunchKernel(SW_KERNEL, (dim3){100000, 1, 1}, SW_ONE, w.args, 0, s), cudaSuccess);
    cudaLaunchAttribute coop = {.id = cudaLaunchAttributeCooperative, .val.cooperative = 1};
    cudaLaunchConfig_t c = {(dim3){100000, 1, 1}, SW_ONE, 0, s, &coop, 1};
    assert_int_equal(cudaLaunchKernelExC(&c, SW_KERNEL, w.args), cudaErrorCooperativeLaunchTooLarge);
    c.attrs = NULL;
    assert_int_equal(cudaLaunchKernelExC(&c, SW_KERNEL, w.args), cudaErrorInvalidValue);
    assert_int_equal(cudaLaunchKernelExC(NULL, SW_KERNEL, w.args), cudaErrorInvalidValue);
    assert_int_equal(cuLaunchKernel(NULL, 1, 1, 1, 1, 1, 1, 0, (CUstream)s, w.args, NULL), CUDA_ERROR_INVALID_HANDLE);
    assert_int_equal(cuLaunchKernel(SW_CUFN, 1, 1, 1, 2048, 1, 1, 0, (CUstream)s, w.args, NULL), CUDA_ERROR_INVALID_VALUE);
    void *extra[] = {CU_LAUNCH_PARAM_END};
    assert_int_equal(cuLaunchKernel(SW_CUFN, 1, 1, 1, 1, 1, 1, 0, (CUstream)s, w.args, extra), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuLaunchCooperativeKernel(SW_CUFN, 100000, 1, 1, 1, 1, 1, 0, (CUstream)s, w.args),
                     CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
    /* Copies: a pitch below the width, memory outside any allocation, arrays, a bad device. */
    assert_int_equal(cudaMemcpy2DAsync(w.dst, 8, w.src, 16, 16, 4, cudaMemcpyDeviceToDevice, s), cudaErrorInvalidPitchValue);
    assert_int_equal(cudaMemcpy2DAsync(w.dst, 64, w.src, 64, 64, 4, cudaMemcpyDeviceToDevice, s), cudaErrorInvalidValue);
    assert_int_equal(cudaMemcpyPeerAsync(w.dst, 99, w.src, 0, 16, s), cudaErrorInvalidDevice);
    struct cudaMemcpy3DParms p = sw_3d(&w);
    p.srcArray = (cudaArray_t)(uintptr_t)1;
    assert_int_equal(cudaMemcpy3DAsync(&p, s), cudaErrorNotSupported);
    p = sw_3d(&w);
    p.dstPtr.ysize = 1;   /* slices closer than the rows copied */
    assert_int_equal(cudaMemcpy3DAsync(&p, s), cudaErrorInvalidPitchValue);
    unsigned char on_stack[16];   /* never inside an allocation, whatever the allocator's layout */
    assert_int_equal(cuMemcpyHtoDAsync_v2(SW_DPTR(on_stack), w.hsrc, 16, (CUstream)s), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuMemcpyPeerAsync(SW_DPTR(w.dst), NULL, SW_DPTR(w.src), NULL, 16, (CUstream)s),
                     CUDA_ERROR_INVALID_CONTEXT);
    CUDA_MEMCPY2D m = {.srcMemoryType = CU_MEMORYTYPE_ARRAY, .dstMemoryType = CU_MEMORYTYPE_DEVICE,
                       .dstDevice = SW_DPTR(w.dst), .dstPitch = 16, .WidthInBytes = 16, .Height = 1};
    assert_int_equal(cuMemcpy2DAsync_v2(&m, (CUstream)s), CUDA_ERROR_NOT_SUPPORTED);
    /* Memsets: misaligned wider elements, a pitch below the width. */
    assert_int_equal(cuMemsetD16Async(SW_DPTR(w.dst + 1), 1, 4, (CUstream)s), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuMemsetD32Async(SW_DPTR(w.dst + 2), 1, 4, (CUstream)s), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cudaMemset2DAsync(w.dst, 8, 1, 16, 2, s), cudaErrorInvalidPitchValue);
    /* Host functions, callbacks and graphs: no function, flags, a handle that is not one. */
    assert_int_equal(cuLaunchHostFunc((CUstream)s, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuStreamAddCallback((CUstream)s, sw_fill_cu_callback, &w, 1), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cudaGraphLaunch((cudaGraphExec_t)(uintptr_t)&w, s), cudaErrorInvalidResourceHandle);
    assert_int_equal(cuGraphLaunch((CUgraphExec)(uintptr_t)&w, (CUstream)s), CUDA_ERROR_INVALID_HANDLE);
    /* A stream that is not one. */
    assert_int_equal(cudaMemcpyAsync(w.dst, w.src, 16, cudaMemcpyDeviceToDevice, (cudaStream_t)(uintptr_t)&w),
                     cudaErrorInvalidResourceHandle);
    assert_int_equal(cuMemsetD8Async(SW_DPTR(w.dst), 1, 4, (CUstream)(uintptr_t)&w), CUDA_ERROR_INVALID_HANDLE);
    CHECK(cudaStreamSynchronize(s));
    assert_int_equal(cudaGetLastError(), cudaErrorInvalidResourceHandle);   /* the last refusal above */
    CHECK(cudaStreamDestroy(s));
}

/* A graph launch runs its nodes in the order they were added, as one stream operation that
 * outlives the executable graph. */
static int order[4], n_order;
static void mark(void *arg)
{
    order[n_order++] = (int)(intptr_t)arg;
}

static void test_graph_order(void **state)
{
    (void)state;
    cudaGraph_t g;
    cudaGraphNode_t a, b;
    CHECK(cudaGraphCreate(&g, 0));
    struct cudaHostNodeParams pa = {mark, (void *)(intptr_t)1}, pb = {mark, (void *)(intptr_t)2};
    CHECK(cudaGraphAddHostNode(&a, g, NULL, 0, &pa));
    CHECK(cudaGraphAddHostNode(&b, g, &a, 1, &pb));
    cudaGraph_t other;
    cudaGraphNode_t c;
    CHECK(cudaGraphCreate(&other, 0));
    assert_int_equal(cudaGraphAddHostNode(&c, other, &a, 1, &pb), cudaErrorInvalidValue);   /* a is g's */
    cudaGraphExec_t e;
    CHECK(cudaGraphInstantiate(&e, g, 0));
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    struct gate gt = GATE_INIT;
    CHECK(cudaLaunchHostFunc(s, hold, &gt));
    n_order = 0;
    CHECK(cudaGraphLaunch(e, s));
    CHECK(cudaGraphLaunch(e, s));
    CHECK(cudaGraphExecDestroy(e));
    assert_int_equal(cudaGraphLaunch(e, s), cudaErrorInvalidResourceHandle);
    gate_open(&gt);
    CHECK(cudaStreamSynchronize(s));
    assert_int_equal(n_order, 4);
    assert_int_equal(order[0], 1);
    assert_int_equal(order[1], 2);
    assert_int_equal(order[2], 1);
    assert_int_equal(order[3], 2);
    CHECK(cudaGraphDestroy(g));
    CHECK(cudaGraphDestroy(other));
    assert_int_equal(cudaGraphDestroy(g), cudaErrorInvalidValue);
    CHECK(cudaStreamDestroy(s));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_kind),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_graph_order),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
