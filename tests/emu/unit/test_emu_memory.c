/* The emulated CUDA runtime: the tracking allocator, copies and memsets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cuda_runtime_api.h>

#include "../emu_internal.h"
#include "../testing/sync.h"

#define CHECK(call) assert_int_equal((call), cudaSuccess)

static void test_malloc_free_and_valid_ranges(void **state)
{
    (void)state;
    void *d = NULL, *h = NULL;
    CHECK(cudaMalloc(&d, 1000));
    assert_non_null(d);
    assert_int_equal((uintptr_t)d % 256, 0);
    assert_true(usbyteEmuValidRange(d, 1000));
    assert_true(usbyteEmuValidRange((char *)d + 999, 1));
    assert_false(usbyteEmuValidRange((char *)d + 999, 2));
    assert_false(usbyteEmuValidRange((char *)d + 1000, 1));
    assert_false(usbyteEmuValidRange(NULL, 1));
    int local;
    assert_false(usbyteEmuValidRange(&local, sizeof local));
    CHECK(cudaMallocHost(&h, 64));
    assert_true(usbyteEmuValidRange(h, 64));
    assert_int_equal(cudaFree((char *)d + 8), cudaErrorInvalidValue);   /* not an allocation's start */
    assert_int_equal(cudaFree(&local), cudaErrorInvalidValue);
    assert_int_equal(cudaFree(h), cudaErrorInvalidValue);                /* host memory: cudaFreeHost */
    CHECK(cudaFree(d));
    assert_false(usbyteEmuValidRange(d, 1));
    CHECK(cudaFreeHost(h));
    CHECK(cudaFree(NULL));
    void *z = &local;
    CHECK(cudaMalloc(&z, 0));
    assert_null(z);
    assert_int_equal(cudaMalloc(NULL, 8), cudaErrorInvalidValue);
    (void)cudaGetLastError();
}

static void test_copies_round_trip(void **state)
{
    (void)state;
    enum { N = 4096 };
    static unsigned char src[N], dst[N];
    for (int i = 0; i < N; i++)
        src[i] = (unsigned char)(i * 7 + 1);
    void *d1, *d2, *pinned;
    CHECK(cudaMalloc(&d1, N));
    CHECK(cudaMalloc(&d2, N));
    CHECK(cudaMallocHost(&pinned, N));
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    CHECK(cudaMemcpyAsync(d1, src, N, cudaMemcpyHostToDevice, s));
    CHECK(cudaMemcpyAsync(d2, d1, N, cudaMemcpyDeviceToDevice, s));
    CHECK(cudaMemsetAsync(d1, 0xAB, N / 2, s));
    CHECK(cudaMemcpyAsync(pinned, d2, N, cudaMemcpyDefault, s));
    CHECK(cudaStreamSynchronize(s));
    assert_memory_equal(pinned, src, N);
    CHECK(cudaMemcpy(dst, d1, N, cudaMemcpyDeviceToHost));
    for (int i = 0; i < N / 2; i++)
        assert_int_equal(dst[i], 0xAB);
    assert_memory_equal(dst + N / 2, src + N / 2, N / 2);
    CHECK(cudaMemset(d2, 0, N));
    CHECK(cudaMemcpy(dst, d2, N, cudaMemcpyDeviceToHost));
    for (int i = 0; i < N; i++)
        assert_int_equal(dst[i], 0);
    /* Pinned host memory counts as device-accessible in copies. */
    CHECK(cudaMemcpy(pinned, src, N, cudaMemcpyHostToDevice));
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFree(d1));
    CHECK(cudaFree(d2));
    CHECK(cudaFreeHost(pinned));
}

/* A copy on a stream happens in stream order: behind a gate it has not happened yet. */
static void test_async_copy_is_stream_ordered(void **state)
{
    (void)state;
    int *d;
    CHECK(cudaMalloc((void **)&d, sizeof *d));
    CHECK(cudaMemset(d, 0, sizeof *d));
    int one = 1, out = 0;
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    struct gate g = GATE_INIT;
    CHECK(cudaLaunchHostFunc(s, gate_host_fn, &g));
    CHECK(cudaMemcpyAsync(d, &one, sizeof one, cudaMemcpyHostToDevice, s));
    assert_int_equal(*d, 0);
    gate_open(&g);
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaMemcpy(&out, d, sizeof out, cudaMemcpyDeviceToHost));
    assert_int_equal(out, 1);
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFree(d));
}

/* cudaMemcpyBatchAsync: every copy done in stream order as one operation; CUDA's refusals. */
static void test_batch_copy(void **state)
{
    (void)state;
    cudaStream_t s;
    assert_int_equal(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    unsigned char *d;
    assert_int_equal(cudaMalloc((void **)&d, 4096), cudaSuccess);
    unsigned char host[3][100];
    for (int i = 0; i < 3; i++)
        memset(host[i], 'a' + i, sizeof host[i]);
    void *dsts[3] = {d, d + 1000, d + 2000};
    const void *srcs[3] = {host[0], host[1], host[2]};
    size_t sizes[3] = {100, 50, 100};
    struct cudaMemcpyAttributes attr = {.srcAccessOrder = cudaMemcpySrcAccessOrderStream};
    size_t first = 0;
    assert_int_equal(cudaMemcpyBatchAsync(dsts, srcs, sizes, 3, &attr, &first, 1, s), cudaSuccess);
    /* Back to the host through a second batch, behind the first on the stream. */
    unsigned char back[3][100];
    memset(back, 0, sizeof back);
    void *bdst[3] = {back[0], back[1], back[2]};
    const void *bsrc[3] = {d, d + 1000, d + 2000};
    assert_int_equal(cudaMemcpyBatchAsync(bdst, bsrc, sizes, 3, &attr, &first, 1, s), cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(s), cudaSuccess);
    assert_memory_equal(back[0], host[0], 100);
    assert_memory_equal(back[1], host[1], 50);
    assert_int_equal(back[1][50], 0);
    assert_memory_equal(back[2], host[2], 100);
    /* Refused: no copies, an unknown access order, an index list not starting at 0, the legacy
     * stream, a zero size. */
    assert_int_equal(cudaMemcpyBatchAsync(dsts, srcs, sizes, 0, &attr, &first, 1, s), cudaErrorInvalidValue);
    struct cudaMemcpyAttributes bad = {.srcAccessOrder = cudaMemcpySrcAccessOrderInvalid};
    assert_int_equal(cudaMemcpyBatchAsync(dsts, srcs, sizes, 3, &bad, &first, 1, s), cudaErrorInvalidValue);
    size_t one = 1;
    assert_int_equal(cudaMemcpyBatchAsync(dsts, srcs, sizes, 3, &attr, &one, 1, s), cudaErrorInvalidValue);
    assert_int_equal(cudaMemcpyBatchAsync(dsts, srcs, sizes, 3, &attr, &first, 1, NULL), cudaErrorInvalidValue);
    size_t zero[3] = {100, 0, 100};
    assert_int_equal(cudaMemcpyBatchAsync(dsts, srcs, zero, 3, &attr, &first, 1, s), cudaErrorInvalidValue);
    assert_int_equal(cudaStreamSynchronize(s), cudaSuccess);
    assert_int_equal(cudaFree(d), cudaSuccess);
    assert_int_equal(cudaStreamDestroy(s), cudaSuccess);
}

static void test_unknown_pointers_rejected(void **state)
{
    (void)state;
    enum { N = 256 };
    static char host[N];
    void *d;
    CHECK(cudaMalloc(&d, N));
    assert_int_equal(cudaMemcpy(host, host + 1, 8, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
    assert_int_equal(cudaMemcpy(host, host + 1, 8, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
    assert_int_equal(cudaMemcpyAsync(d, host, N, cudaMemcpyDeviceToDevice, NULL), cudaErrorInvalidValue);
    assert_int_equal(cudaMemcpyAsync(d, host, N + 1, cudaMemcpyHostToDevice, NULL), cudaErrorInvalidValue);
    assert_int_equal(cudaMemcpyAsync((char *)d + 1, host, N, cudaMemcpyHostToDevice, NULL), cudaErrorInvalidValue);
    assert_int_equal(cudaMemcpyAsync(d, host, 8, (enum cudaMemcpyKind)17, NULL), cudaErrorInvalidMemcpyDirection);
    assert_int_equal(cudaMemsetAsync(host, 0, 8, NULL), cudaErrorInvalidValue);
    assert_int_equal(cudaMemsetAsync(d, 0, N + 1, NULL), cudaErrorInvalidValue);
    assert_int_equal(cudaGetLastError(), cudaErrorInvalidValue);
    CHECK(cudaMemcpy(host, host + 1, 8, cudaMemcpyHostToHost));
    CHECK(cudaMemcpyAsync(d, host, 0, cudaMemcpyHostToDevice, NULL));
    cudaStream_t dead;
    CHECK(cudaStreamCreate(&dead));
    CHECK(cudaStreamDestroy(dead));
    assert_int_equal(cudaMemcpyAsync(d, host, 8, cudaMemcpyHostToDevice, dead), cudaErrorInvalidResourceHandle);
    CHECK(cudaFree(d));
    (void)cudaGetLastError();
}

/* cudaFree waits for the device, as on a GPU: pending work may still use the memory. */
static void *open_after_free_started(void *arg)
{
    gate_open(arg);
    return NULL;
}

static void test_free_waits_for_pending_work(void **state)
{
    (void)state;
    enum { N = 1024 };
    static char host[N];
    void *d;
    CHECK(cudaMalloc(&d, N));
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    struct gate g = GATE_INIT;
    CHECK(cudaLaunchHostFunc(s, gate_host_fn, &g));
    CHECK(cudaMemcpyAsync(host, d, N, cudaMemcpyDeviceToHost, s));
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, open_after_free_started, &g), 0);
    CHECK(cudaFree(d));   /* under ASan a free before the copy would be a use-after-free */
    assert_int_equal(cudaStreamQuery(s), cudaSuccess);
    pthread_join(t, NULL);
    CHECK(cudaStreamDestroy(s));
}

/* A bad pointer is rejected at once, even while the device is busy. */
static void test_bad_free_does_not_wait(void **state)
{
    (void)state;
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    struct gate g = GATE_INIT;
    CHECK(cudaLaunchHostFunc(s, gate_host_fn, &g));
    int local;
    assert_int_equal(cudaFree(&local), cudaErrorInvalidValue);
    assert_int_equal(cudaFreeHost(&local), cudaErrorInvalidValue);
    assert_int_equal(cudaStreamQuery(s), cudaErrorNotReady);
    gate_open(&g);
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaStreamDestroy(s));
    (void)cudaGetLastError();
}

/* Each device holds USBYTE_EMU_DEVICE_MEM_MB (64 here, set in main before the first allocation):
 * cudaMemGetInfo counts what is left (sizes rounded to 256 bytes), an allocation past it fails
 * with cudaErrorMemoryAllocation, another device has its own, and cudaFree gives it back. */
static void test_device_capacity(void **state)
{
    (void)state;
    size_t free0, total, free1;
    CHECK(cudaSetDevice(0));
    CHECK(cudaMemGetInfo(&free0, &total));
    assert_int_equal(total, (size_t)64 << 20);
    void *a, *b, *c;
    CHECK(cudaMalloc(&a, 1000));
    CHECK(cudaMemGetInfo(&free1, &total));
    assert_int_equal(free0 - free1, 1024);
    assert_int_equal(cudaMalloc(&b, free1 + 1), cudaErrorMemoryAllocation);
    (void)cudaGetLastError();
    CHECK(cudaMalloc(&b, free1 - 4096));
    assert_int_equal(cudaMalloc(&c, 8192), cudaErrorMemoryAllocation);
    (void)cudaGetLastError();
    CHECK(cudaSetDevice(1));
    CHECK(cudaMalloc(&c, 8192)); /* device 1 has its own */
    CHECK(cudaFree(c));
    CHECK(cudaSetDevice(0));
    CHECK(cudaFree(b));
    CHECK(cudaFree(a));
    CHECK(cudaMemGetInfo(&free1, &total));
    assert_int_equal(free1, free0);
}

int main(void)
{
    setenv("USBYTE_EMU_DEVICE_MEM_MB", "64", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_device_capacity),
        cmocka_unit_test(test_malloc_free_and_valid_ranges),
        cmocka_unit_test(test_copies_round_trip),
        cmocka_unit_test(test_async_copy_is_stream_ordered),
        cmocka_unit_test(test_batch_copy),
        cmocka_unit_test(test_unknown_pointers_rejected),
        cmocka_unit_test(test_free_waits_for_pending_work),
        cmocka_unit_test(test_bad_free_does_not_wait),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
