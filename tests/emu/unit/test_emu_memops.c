/* The emulated driver API: stream memory operations (cuStreamWaitValue32/64,
 * cuStreamWriteValue32/64) blocking and releasing streams, and the entry points around them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "../emu_internal.h"
#include "../testing/queues.h"
#include "../testing/sync.h"

#define CHECK(call) assert_int_equal((call), cudaSuccess)
#define CU_CHECK(call) assert_int_equal((call), CUDA_SUCCESS)

static CUdeviceptr dptr(void *p)
{
    return (CUdeviceptr)(uintptr_t)p;
}

/* An event recorded on A after A waits for a counter stays incomplete until another stream
 * writes the counter, even though that write is issued after the event was recorded and is
 * itself held back by a gate the test controls (A and B in separate hardware queues: in one,
 * this deadlocks, which test_emu_queues checks). */
static void test_event_waits_for_write_issued_later(void **state)
{
    (void)state;
    uint64_t *counter;
    CHECK(cudaMalloc((void **)&counter, sizeof *counter));
    CHECK(cudaMemset(counter, 0, sizeof *counter));
    cudaStream_t a, b;
    CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
    cudaEvent_t done;
    CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));

    CU_CHECK(cuStreamWaitValue64((CUstream)a, dptr(counter), 1, CU_STREAM_WAIT_VALUE_GEQ));
    CHECK(cudaEventRecord(done, a));
    struct gate write_gate = GATE_INIT, b_reached_write = GATE_INIT;
    CHECK(cudaLaunchHostFunc(b, gate_open_fn, &b_reached_write));
    CHECK(cudaLaunchHostFunc(b, gate_host_fn, &write_gate));
    CU_CHECK(cuStreamWriteValue64((CUstream)b, dptr(counter), 1, CU_STREAM_WRITE_VALUE_DEFAULT));

    assert_true(gate_wait(&b_reached_write));
    assert_int_equal(cudaEventQuery(done), cudaErrorNotReady);
    assert_int_equal(cudaStreamQuery(a), cudaErrorNotReady);

    /* Where A waits is visible in the hang dump. */
    int fd = memfd_create("dump", 0);
    assert_true(fd >= 0);
    char buf[8192] = {0};
    char expect[96];
    snprintf(expect, sizeof expect, "cuStreamWaitValue64 %p >= 1 (now 0)", (void *)counter);
    /* The worker publishes its activity as it starts waiting: poll the dump until it shows. */
    time_t give_up = time(NULL) + EMU_TEST_DEADLINE_S;
    while (strstr(buf, expect) == NULL && time(NULL) < give_up) {
        assert_int_equal(ftruncate(fd, 0), 0);
        assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
        usbyteEmuDumpStreams(fd);
        memset(buf, 0, sizeof buf);
        assert_true(pread(fd, buf, sizeof buf - 1, 0) > 0);
        if (strstr(buf, expect) == NULL)
            sched_yield();
    }
    close(fd);
    if (strstr(buf, expect) == NULL)
        fail_msg("dump lacks \"%s\":\n%s", expect, buf);

    assert_int_equal(cudaEventQuery(done), cudaErrorNotReady);
    gate_open(&write_gate);
    CHECK(cudaEventSynchronize(done));
    assert_int_equal(__atomic_load_n(counter, __ATOMIC_ACQUIRE), 1);
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaEventDestroy(done));
    CHECK(cudaStreamDestroy(a));
    CHECK(cudaStreamDestroy(b));
    CHECK(cudaFree(counter));
}

struct condition_case {
    const char *name;
    int is64;
    unsigned flags;
    uint64_t initial, wait_for, not_enough, enough;
};

static const struct condition_case cases[] = {
    {"geq32", 0, CU_STREAM_WAIT_VALUE_GEQ, 0, 5, 4, 7},
    {"geq32 wraps", 0, CU_STREAM_WAIT_VALUE_GEQ, 0xfffffff0u, 0xfffffff8u, 0xfffffff7u, 3},
    {"eq32", 0, CU_STREAM_WAIT_VALUE_EQ, 0, 5, 6, 5},
    {"and32", 0, CU_STREAM_WAIT_VALUE_AND, 0, 0x4, 0x3, 0x6},
    {"nor32", 0, CU_STREAM_WAIT_VALUE_NOR, 0xffffff0fu, 0xf0, 0xffffffffu, 0},
    {"geq32 flush", 0, CU_STREAM_WAIT_VALUE_GEQ | CU_STREAM_WAIT_VALUE_FLUSH, 0, 2, 1, 2},
    {"geq64", 1, CU_STREAM_WAIT_VALUE_GEQ, 0, 1ull << 40, (1ull << 40) - 1, (1ull << 40) + 1},
    {"eq64", 1, CU_STREAM_WAIT_VALUE_EQ, 0, 1ull << 33, 1, 1ull << 33},
    {"and64", 1, CU_STREAM_WAIT_VALUE_AND, 0, 1ull << 50, (1ull << 50) - 1, 1ull << 50},
    {"nor64", 1, CU_STREAM_WAIT_VALUE_NOR, ~0xf0ull, 0xf0, ~0ull, 1ull << 60},
    {"eq64 flush", 1, CU_STREAM_WAIT_VALUE_EQ | CU_STREAM_WAIT_VALUE_FLUSH, 0, 9, 8, 9},
};

static CUresult wait_value(int is64, CUstream s, CUdeviceptr p, uint64_t v, unsigned flags)
{
    return is64 ? cuStreamWaitValue64(s, p, v, flags) : cuStreamWaitValue32(s, p, (cuuint32_t)v, flags);
}

static CUresult write_value(int is64, CUstream s, CUdeviceptr p, uint64_t v, unsigned flags)
{
    return is64 ? cuStreamWriteValue64(s, p, v, flags) : cuStreamWriteValue32(s, p, (cuuint32_t)v, flags);
}

static void test_wait_conditions_block_and_release(void **state)
{
    (void)state;
    uint64_t *word;
    CHECK(cudaMalloc((void **)&word, sizeof *word));
    cudaStream_t waiter, writer;
    CHECK(cudaStreamCreateWithFlags(&waiter, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&writer, cudaStreamNonBlocking));
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct condition_case *c = &cases[i];
        CHECK(cudaMemset(word, 0, sizeof *word));
        CU_CHECK(write_value(c->is64, (CUstream)writer, dptr(word), c->initial, 0));
        CHECK(cudaStreamSynchronize(writer));
        struct gate released = GATE_INIT;
        CU_CHECK(wait_value(c->is64, (CUstream)waiter, dptr(word), c->wait_for, c->flags));
        CHECK(cudaLaunchHostFunc(waiter, gate_open_fn, &released));

        /* A write that does not satisfy the condition wakes the waiter, which waits on. */
        CU_CHECK(write_value(c->is64, (CUstream)writer, dptr(word), c->not_enough, CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER));
        CHECK(cudaStreamSynchronize(writer));
        if (cudaStreamQuery(waiter) != cudaErrorNotReady)
            fail_msg("%s: released by %#llx", c->name, (unsigned long long)c->not_enough);
        assert_false(gate_is_open(&released));

        CU_CHECK(write_value(c->is64, (CUstream)writer, dptr(word), c->enough, 0));
        if (!gate_wait(&released))
            fail_msg("%s: not released by %#llx", c->name, (unsigned long long)c->enough);
        CHECK(cudaStreamSynchronize(waiter));
    }
    /* The 32-bit operations touch only their own word. */
    CHECK(cudaMemset(word, 0xff, sizeof *word));
    CU_CHECK(cuStreamWriteValue32((CUstream)writer, dptr(word), 7, 0));
    CHECK(cudaStreamSynchronize(writer));
    assert_int_equal(((uint32_t *)word)[0], 7);
    assert_int_equal(((uint32_t *)word)[1], 0xffffffffu);
    CHECK(cudaStreamDestroy(waiter));
    CHECK(cudaStreamDestroy(writer));
    CHECK(cudaFree(word));
}

/* A plain host store is noticed too (through the waiter's periodic re-check). */
static void test_host_store_releases_waiter(void **state)
{
    (void)state;
    uint32_t *flag;
    CHECK(cudaMallocHost((void **)&flag, sizeof *flag));
    __atomic_store_n(flag, 0, __ATOMIC_RELEASE);
    CUdeviceptr dflag;
    CU_CHECK(cuMemHostGetDevicePointer(&dflag, flag, 0));
    assert_true(dflag == dptr(flag));
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CU_CHECK(cuStreamWaitValue32((CUstream)s, dflag, 1, CU_STREAM_WAIT_VALUE_EQ));
    assert_int_equal(cudaStreamQuery(s), cudaErrorNotReady);
    __atomic_store_n(flag, 1, __ATOMIC_RELEASE);
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFreeHost(flag));
}

static void test_memop_errors(void **state)
{
    (void)state;
    uint64_t *word;
    CHECK(cudaMalloc((void **)&word, 16));
    uint64_t local = 0;
    assert_int_equal(cuStreamWaitValue64(NULL, dptr(&local), 1, 0), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuStreamWriteValue32(NULL, dptr(&local), 1, 0), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuStreamWaitValue64(NULL, dptr((char *)word + 4), 1, 0), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuStreamWriteValue32(NULL, dptr((char *)word + 2), 1, 0), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuStreamWaitValue32(NULL, dptr((char *)word + 16), 1, 0), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuStreamWaitValue32(NULL, dptr(word), 1, 0x7), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuStreamWriteValue64(NULL, dptr(word), 1, 0x4), CUDA_ERROR_INVALID_VALUE);
    cudaStream_t dead;
    CHECK(cudaStreamCreate(&dead));
    CHECK(cudaStreamDestroy(dead));
    assert_int_equal(cuStreamWriteValue64((CUstream)dead, dptr(word), 1, 0), CUDA_ERROR_INVALID_HANDLE);
    /* The legacy (NULL) and per-thread streams take memory operations too. */
    CU_CHECK(cuStreamWriteValue64(NULL, dptr(word), 3, 0));
    CU_CHECK(cuStreamWaitValue64(CU_STREAM_PER_THREAD, dptr(word), 3, CU_STREAM_WAIT_VALUE_EQ));
    CHECK(cudaDeviceSynchronize());
    assert_int_equal(*word, 3);
    CHECK(cudaFree(word));
}

static void test_driver_entry_points(void **state)
{
    (void)state;
    CU_CHECK(cuInit(0));
    int v = 0, n = 0;
    CU_CHECK(cuDriverGetVersion(&v));
    assert_int_equal(v, 13000);
    CU_CHECK(cuDeviceGetCount(&n));
    assert_true(n >= 1);
    CUdevice dev;
    CU_CHECK(cuDeviceGet(&dev, 0));
    assert_int_equal(cuDeviceGet(&dev, n), CUDA_ERROR_INVALID_DEVICE);
    int nor = 0;
    CU_CHECK(cuDeviceGetAttribute(&nor, CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR, dev));
    assert_int_equal(nor, 1);
    CUcontext ctx = NULL, primary = NULL;
    CU_CHECK(cuCtxGetCurrent(&ctx));
    assert_non_null(ctx);
    CU_CHECK(cuDevicePrimaryCtxRetain(&primary, dev));
    assert_ptr_equal(ctx, primary);
    CU_CHECK(cuDevicePrimaryCtxRelease(dev));

    CUdeviceptr d;
    CU_CHECK(cuMemAlloc(&d, 64));
    assert_true(usbyteEmuValidRange((void *)(uintptr_t)d, 64));
    unsigned int type = 0;
    CU_CHECK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d));
    assert_int_equal(type, CU_MEMORYTYPE_DEVICE);
    CUdeviceptr back = 0;
    CU_CHECK(cuPointerGetAttribute(&back, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, d + 8));
    assert_true(back == d + 8);
    CUdeviceptr hp;
    assert_int_equal(cuMemHostGetDevicePointer(&hp, (void *)(uintptr_t)d, 0), CUDA_ERROR_INVALID_VALUE);
    CU_CHECK(cuMemFree(d));
    int local;
    assert_int_equal(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, dptr(&local)), CUDA_ERROR_INVALID_VALUE);
    const char *s = NULL;
    CU_CHECK(cuGetErrorName(CUDA_ERROR_INVALID_HANDLE, &s));
    assert_string_equal(s, "CUDA_ERROR_INVALID_HANDLE");
}

int main(void)
{
    emu_test_own_queues();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_event_waits_for_write_issued_later),
        cmocka_unit_test(test_wait_conditions_block_and_release),
        cmocka_unit_test(test_host_store_releases_waiter),
        cmocka_unit_test(test_memop_errors),
        cmocka_unit_test(test_driver_entry_points),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    return emu_test_queues_were_own() ? failed : failed + 1;
}
