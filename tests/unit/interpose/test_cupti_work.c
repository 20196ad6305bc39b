/* usbyte's list of CUPTI callbacks of stream-ordered work (interpose/cupti_work.h) against every
 * way a program puts work on a stream (tests/emu/testing/stream_work.h), on the emulator, whose
 * CUPTI reports each call with its domain, id and params struct as the real one does: each call,
 * and the driver function a runtime call reports inside its own, is in the list, with the stream
 * the call was given and the right kind (compute or copy). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../../../interpose/cupti_work.h"
#include "../../emu/testing/stream_work.h"

struct seen {
    CUpti_CallbackDomain domain;
    CUpti_CallbackId cbid;
    char name[64];
    cudaStream_t stream;
    ub_work_kind kind;
};

static struct seen log_[8];
static int n_log;
static CUpti_SubscriberHandle sub;

/* What the list makes of each enter callback, read while the params are valid (in the callback). */
static void CUPTIAPI on_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *cbdata)
{
    (void)userdata;
    const CUpti_CallbackData *d = cbdata;
    if (d->callbackSite != CUPTI_API_ENTER || n_log == (int)(sizeof log_ / sizeof log_[0]))
        return;
    struct seen *s = &log_[n_log++];
    s->domain = domain;
    s->cbid = cbid;
    snprintf(s->name, sizeof s->name, "%s", d->functionName);
    s->stream = ub_cupti_work_stream(domain, cbid, d->functionParams, &s->kind);
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

/* Kernels, graphs, host functions and stream callbacks are compute; the rest copies. */
static bool is_compute(const char *id)
{
    static const char *const compute[] = {"launch", "coop", "graph", "host", "callback"};
    for (size_t i = 0; i < sizeof compute / sizeof compute[0]; i++)
        if (strstr(id, compute[i]))
            return true;
    return false;
}

static void test_every_kind_is_watched(void **state)
{
    (void)state;
    cudaStream_t s;
    assert_int_equal(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    for (int i = 0; i < SW_N_KINDS; i++) {
        const struct sw_kind *k = &sw_kinds[i];
        struct stream_work w;
        assert_int_equal(sw_init(&w, (unsigned char)(1 + i)), 0);
        n_log = 0;
        assert_int_equal(k->issue(&w, s), 0);
        int n = n_log;
        assert_int_equal(cudaStreamSynchronize(s), cudaSuccess);
        assert_int_equal(n, k->nested ? 2 : 1);
        ub_work_kind want = is_compute(k->id) ? UB_WORK_COMPUTE : UB_WORK_COPY;
        for (int j = 0; j < n; j++) {
            if (log_[j].kind == UB_WORK_NONE)
                fail_msg("%s: %s (domain %d, id %u) is not in interpose/cupti_work.h", k->id, log_[j].name,
                         log_[j].domain, log_[j].cbid);
            if (log_[j].stream != s)
                fail_msg("%s: %s's stream read as %p, the call's is %p", k->id, log_[j].name, (void *)log_[j].stream,
                         (void *)s);
            if (log_[j].kind != want)
                fail_msg("%s: %s is listed as %s", k->id, log_[j].name,
                         log_[j].kind == UB_WORK_COMPUTE ? "compute" : "a copy");
        }
    }
    assert_int_equal(cudaStreamDestroy(s), cudaSuccess);
}

/* Calls that put no work on a stream are not in the list. */
static void test_other_calls_are_not(void **state)
{
    (void)state;
    cudaStream_t s;
    cudaEvent_t e;
    assert_int_equal(cudaStreamCreate(&s), cudaSuccess);
    assert_int_equal(cudaEventCreate(&e), cudaSuccess);
    n_log = 0;
    assert_int_equal(cudaEventRecord(e, s), cudaSuccess);
    assert_int_equal(cudaStreamWaitEvent(s, e, 0), cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(s), cudaSuccess);
    assert_int_equal(n_log, 3);
    for (int j = 0; j < n_log; j++)
        if (log_[j].kind != UB_WORK_NONE)
            fail_msg("%s is listed as stream-ordered work", log_[j].name);
    assert_int_equal(cudaEventDestroy(e), cudaSuccess);
    assert_int_equal(cudaStreamDestroy(s), cudaSuccess);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_kind_is_watched),
        cmocka_unit_test(test_other_calls_are_not),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
