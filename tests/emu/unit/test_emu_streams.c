/* The emulated CUDA runtime: streams, host functions, device synchronization, the legacy and
 * per-thread default streams, and the private enqueue interface. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <cuda_runtime_api.h>

#include "../emu_internal.h"
#include "../testing/queues.h"
#include "../testing/sync.h"

/* The _ptsz entry points, as a program built with CUDA_API_PER_THREAD_DEFAULT_STREAM calls them. */
#include "usbyte/cuda_exports.h"

#define CHECK(call) assert_int_equal((call), cudaSuccess)

/* ---- FIFO order ---- */
struct order_log {
    pthread_mutex_t mu;
    int items[64];
    int n;
};

struct order_item {
    struct order_log *log;
    int value;
};

static void log_append(void *arg)
{
    struct order_item *it = arg;
    pthread_mutex_lock(&it->log->mu);
    it->log->items[it->log->n++] = it->value;
    pthread_mutex_unlock(&it->log->mu);
}

static void test_fifo_order(void **state)
{
    (void)state;
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    struct gate g = GATE_INIT;
    struct order_log log = {PTHREAD_MUTEX_INITIALIZER, {0}, 0};
    struct order_item items[32];
    /* Everything queues behind a closed gate, so the order is the queue's, not luck. */
    CHECK(cudaLaunchHostFunc(s, gate_host_fn, &g));
    for (int i = 0; i < 32; i++) {
        items[i] = (struct order_item){&log, i};
        if (i % 2)
            CHECK(usbyteEmuStreamEnqueue(s, log_append, &items[i], "log append"));
        else
            CHECK(cudaLaunchHostFunc(s, log_append, &items[i]));
    }
    assert_int_equal(cudaStreamQuery(s), cudaErrorNotReady);
    gate_open(&g);
    CHECK(cudaStreamSynchronize(s));
    assert_int_equal(cudaStreamQuery(s), cudaSuccess);
    assert_int_equal(log.n, 32);
    for (int i = 0; i < 32; i++)
        assert_int_equal(log.items[i], i);
    CHECK(cudaStreamDestroy(s));
}

/* ---- concurrency: two streams that each need the other to progress ---- */
struct handshake {
    struct gate a_reached, b_reached;
};

static void a_side(void *arg)
{
    struct handshake *h = arg;
    gate_open(&h->a_reached);
    gate_wait(&h->b_reached);
}

static void b_side(void *arg)
{
    struct handshake *h = arg;
    gate_wait(&h->a_reached);
    gate_open(&h->b_reached);
}

static void test_streams_run_concurrently(void **state)
{
    (void)state;
    cudaStream_t a, b;
    CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
    CHECK(cudaStreamCreate(&b));
    struct handshake h = {GATE_INIT, GATE_INIT};
    struct gate done_a = GATE_INIT, done_b = GATE_INIT;
    CHECK(cudaLaunchHostFunc(a, a_side, &h));
    CHECK(cudaLaunchHostFunc(a, gate_open_fn, &done_a));
    CHECK(cudaLaunchHostFunc(b, b_side, &h));
    CHECK(cudaLaunchHostFunc(b, gate_open_fn, &done_b));
    assert_true(gate_wait(&done_a));
    assert_true(gate_wait(&done_b));
    CHECK(cudaStreamDestroy(a));
    CHECK(cudaStreamDestroy(b));
}

/* ---- host functions run on the stream's worker, never on the caller ---- */
struct thread_probe {
    pthread_t seen;
};

static void record_thread(void *arg)
{
    ((struct thread_probe *)arg)->seen = pthread_self();
}

static void test_host_function_runs_on_worker(void **state)
{
    (void)state;
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    struct thread_probe p1, p2;
    CHECK(cudaLaunchHostFunc(s, record_thread, &p1));
    CHECK(cudaLaunchHostFunc(s, record_thread, &p2));
    CHECK(cudaStreamSynchronize(s));
    assert_false(pthread_equal(p1.seen, pthread_self()));
    assert_true(pthread_equal(p1.seen, p2.seen));
    assert_int_equal(cudaLaunchHostFunc(s, NULL, NULL), cudaErrorInvalidValue);
    CHECK(cudaStreamDestroy(s));
}

/* ---- cudaDeviceSynchronize waits for every stream ---- */
struct flags3 {
    struct gate gates[3];
    int done[3];
};

struct flag_ref {
    struct flags3 *f;
    int i;
};

static void set_done(void *arg)
{
    struct flag_ref *r = arg;
    r->f->done[r->i] = 1;   /* read by the test only after cudaDeviceSynchronize */
}

static void *open_gates_later(void *arg)
{
    struct flags3 *f = arg;
    for (int i = 0; i < 3; i++)
        gate_open(&f->gates[i]);
    return NULL;
}

static void test_device_synchronize_waits_for_all(void **state)
{
    (void)state;
    cudaStream_t s[2];
    CHECK(cudaStreamCreate(&s[0]));
    CHECK(cudaStreamCreateWithFlags(&s[1], cudaStreamNonBlocking));
    cudaStream_t targets[3] = {s[0], s[1], cudaStreamPerThread};
    struct flags3 f = {{GATE_INIT, GATE_INIT, GATE_INIT}, {0, 0, 0}};
    struct flag_ref refs[3];
    for (int i = 0; i < 3; i++) {
        refs[i] = (struct flag_ref){&f, i};
        CHECK(cudaLaunchHostFunc(targets[i], gate_host_fn, &f.gates[i]));
        CHECK(cudaLaunchHostFunc(targets[i], set_done, &refs[i]));
    }
    pthread_t opener;
    assert_int_equal(pthread_create(&opener, NULL, open_gates_later, &f), 0);
    CHECK(cudaDeviceSynchronize());
    for (int i = 0; i < 3; i++)
        assert_int_equal(f.done[i], 1);
    pthread_join(opener, NULL);
    CHECK(cudaStreamDestroy(s[0]));
    CHECK(cudaStreamDestroy(s[1]));
}

/* ---- the legacy default stream's implicit synchronization ---- */
struct legacy_probe {
    int blocking_done;
    int seen_by_legacy;
};

static void mark_blocking_done(void *arg)
{
    ((struct legacy_probe *)arg)->blocking_done = 1;
}

static void legacy_reads(void *arg)
{
    struct legacy_probe *p = arg;
    p->seen_by_legacy = p->blocking_done;
}

static void test_legacy_stream_waits_for_blocking_streams(void **state)
{
    (void)state;
    cudaStream_t blocking, nonblocking;
    CHECK(cudaStreamCreate(&blocking));
    CHECK(cudaStreamCreateWithFlags(&nonblocking, cudaStreamNonBlocking));
    struct gate g = GATE_INIT, nb_ran = GATE_INIT;
    struct legacy_probe p = {0, 0};
    CHECK(cudaLaunchHostFunc(blocking, gate_host_fn, &g));
    CHECK(cudaLaunchHostFunc(blocking, mark_blocking_done, &p));
    CHECK(cudaLaunchHostFunc(NULL, legacy_reads, &p));
    /* A non-blocking stream is not held back by the legacy stream's pending work. */
    CHECK(cudaLaunchHostFunc(nonblocking, gate_open_fn, &nb_ran));
    assert_true(gate_wait(&nb_ran));
    assert_int_equal(cudaStreamQuery(cudaStreamLegacy), cudaErrorNotReady);
    gate_open(&g);
    CHECK(cudaStreamSynchronize(NULL));
    assert_int_equal(p.seen_by_legacy, 1);

    /* And a blocking stream waits for earlier legacy work. */
    struct gate g2 = GATE_INIT;
    struct legacy_probe q = {0, 0};
    CHECK(cudaLaunchHostFunc(cudaStreamLegacy, gate_host_fn, &g2));
    CHECK(cudaLaunchHostFunc(cudaStreamLegacy, mark_blocking_done, &q));
    CHECK(cudaLaunchHostFunc(blocking, legacy_reads, &q));
    assert_int_equal(cudaStreamQuery(blocking), cudaErrorNotReady);
    gate_open(&g2);
    CHECK(cudaStreamSynchronize(blocking));
    assert_int_equal(q.seen_by_legacy, 1);
    CHECK(cudaStreamDestroy(blocking));
    CHECK(cudaStreamDestroy(nonblocking));
}

/* ---- per-thread default streams ---- */
struct ptds_probe {
    struct thread_probe legacy, ptsz, other_thread;
};

static void *use_per_thread_stream(void *arg)
{
    struct thread_probe *p = arg;
    if (cudaLaunchHostFunc(cudaStreamPerThread, record_thread, p) != cudaSuccess ||
        cudaStreamSynchronize(cudaStreamPerThread) != cudaSuccess)
        return arg;
    return NULL;
}

static void test_per_thread_default_stream(void **state)
{
    (void)state;
    struct ptds_probe p;
    CHECK(cudaLaunchHostFunc(NULL, record_thread, &p.legacy));
    CHECK(cudaLaunchHostFunc_ptsz(NULL, record_thread, &p.ptsz));
    CHECK(cudaStreamSynchronize_ptsz(NULL));
    CHECK(cudaStreamSynchronize(NULL));
    pthread_t t;
    void *failed;
    assert_int_equal(pthread_create(&t, NULL, use_per_thread_stream, &p.other_thread), 0);
    pthread_join(t, &failed);
    assert_null(failed);
    /* Three different workers: the legacy stream and one per-thread stream per host thread. */
    assert_false(pthread_equal(p.legacy.seen, p.ptsz.seen));
    assert_false(pthread_equal(p.ptsz.seen, p.other_thread.seen));
    assert_false(pthread_equal(p.legacy.seen, p.other_thread.seen));
}

/* ---- stream attributes and capture status ---- */
static void test_stream_attributes(void **state)
{
    (void)state;
    int least, greatest;
    CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    assert_true(greatest < least);
    cudaStream_t s;
    CHECK(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, greatest));
    unsigned flags;
    int prio;
    CHECK(cudaStreamGetFlags(s, &flags));
    CHECK(cudaStreamGetPriority(s, &prio));
    assert_int_equal(flags, cudaStreamNonBlocking);
    assert_int_equal(prio, greatest);
    assert_int_equal(cudaStreamCreateWithFlags(&s, 0x80), cudaErrorInvalidValue);

    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusActive;
    CHECK(cudaStreamIsCapturing(s, &st));
    assert_int_equal(st, cudaStreamCaptureStatusNone);
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    CHECK(cudaStreamIsCapturing(s, &st));
    assert_int_equal(st, cudaStreamCaptureStatusActive);
    unsigned long long id = 0;
    CHECK(cudaStreamGetCaptureInfo(s, &st, &id, NULL, NULL, NULL, NULL));
    assert_int_equal(st, cudaStreamCaptureStatusActive);
    assert_true(id != 0);
    cudaGraph_t g;
    CHECK(cudaStreamEndCapture(s, &g));
    CHECK(cudaGraphDestroy(g));
    CHECK(cudaStreamGetCaptureInfo(s, &st, NULL, NULL, NULL, NULL, NULL));
    assert_int_equal(st, cudaStreamCaptureStatusNone);
    CHECK(cudaStreamIsCapturing(NULL, &st));
    assert_int_equal(st, cudaStreamCaptureStatusNone);
    CHECK(cudaStreamDestroy(s));
}

/* ---- invalid handles and the error state ---- */
static void test_invalid_stream_handles(void **state)
{
    (void)state;
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    CHECK(cudaStreamDestroy(s));
    assert_int_equal(cudaStreamQuery(s), cudaErrorInvalidResourceHandle);
    assert_int_equal(cudaStreamSynchronize(s), cudaErrorInvalidResourceHandle);
    assert_int_equal(cudaLaunchHostFunc(s, record_thread, NULL), cudaErrorInvalidResourceHandle);
    assert_int_equal(cudaStreamDestroy(s), cudaErrorInvalidResourceHandle);
    assert_int_equal(cudaStreamDestroy(NULL), cudaErrorInvalidResourceHandle);
    int bogus;
    assert_int_equal(cudaStreamQuery((cudaStream_t)&bogus), cudaErrorInvalidResourceHandle);
    assert_int_equal(usbyteEmuStreamEnqueue((cudaStream_t)&bogus, record_thread, NULL, "x"),
                     cudaErrorInvalidResourceHandle);
}

static void test_last_error_sticky_and_not(void **state)
{
    (void)state;
    (void)cudaGetLastError();
    assert_int_equal(cudaSetDevice(1000), cudaErrorInvalidDevice);
    assert_int_equal(cudaPeekAtLastError(), cudaErrorInvalidDevice);
    assert_int_equal(cudaPeekAtLastError(), cudaErrorInvalidDevice);
    assert_int_equal(cudaGetLastError(), cudaErrorInvalidDevice);
    assert_int_equal(cudaGetLastError(), cudaSuccess);
    assert_string_equal(cudaGetErrorName(cudaErrorInvalidResourceHandle), "cudaErrorInvalidResourceHandle");
    assert_string_equal(cudaGetErrorString(cudaErrorNotReady), "device not ready");

    usbyteEmuSetStickyError(cudaErrorIllegalAddress);
    cudaStream_t s;
    assert_int_equal(cudaStreamCreate(&s), cudaErrorIllegalAddress);
    assert_int_equal(cudaGetLastError(), cudaErrorIllegalAddress);
    assert_int_equal(cudaGetLastError(), cudaErrorIllegalAddress);
    usbyteEmuSetStickyError(cudaSuccess);
    assert_int_equal(cudaGetLastError(), cudaSuccess);
}

static void test_versions_and_devices(void **state)
{
    (void)state;
    int v = 0, n = 0, d = -1;
    CHECK(cudaRuntimeGetVersion(&v));
    assert_int_equal(v, 13000);
    CHECK(cudaDriverGetVersion(&v));
    assert_int_equal(v, 13000);
    CHECK(cudaGetDeviceCount(&n));
    assert_true(n >= 1);
    CHECK(cudaSetDevice(n - 1));
    CHECK(cudaGetDevice(&d));
    assert_int_equal(d, n - 1);
    CHECK(cudaSetDevice(0));
    struct cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    assert_true(prop.totalGlobalMem > 0);
    assert_int_equal(prop.warpSize, 32);
    assert_int_equal(cudaGetDeviceProperties(&prop, n), cudaErrorInvalidDevice);
    (void)cudaGetLastError();
}

/* ---- the hang dump shows what each worker does ---- */
struct activity_op {
    struct gate reached, release;
};

static void busy_with_activity(void *arg)
{
    struct activity_op *a = arg;
    usbyteEmuSetActivity("waiting for rank 3 in test op #7");
    gate_open(&a->reached);
    gate_wait(&a->release);
}

static void test_dump_streams_shows_activity(void **state)
{
    (void)state;
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    struct activity_op a = {GATE_INIT, GATE_INIT};
    struct gate g = GATE_INIT;
    CHECK(usbyteEmuStreamEnqueue(s, busy_with_activity, &a, "test op #7"));
    CHECK(cudaLaunchHostFunc(s, gate_host_fn, &g));
    assert_true(gate_wait(&a.reached));
    int fd = memfd_create("dump", 0);
    assert_true(fd >= 0);
    usbyteEmuDumpStreams(fd);
    char buf[8192] = {0};
    assert_true(pread(fd, buf, sizeof buf - 1, 0) > 0);
    close(fd);
    unsigned long long id;
    CHECK(cudaStreamGetId(s, &id));
    char expect[128];
    snprintf(expect, sizeof expect, "] stream %llu non-blocking queue %d depth 2: waiting for rank 3 in test op #7\n", id,
             usbyteEmuStreamQueue(s));
    if (strstr(buf, expect) == NULL)
        fail_msg("dump lacks \"%s\":\n%s", expect, buf);
    gate_open(&a.release);
    gate_open(&g);
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaStreamDestroy(s));
}

/* ---- process-level behaviour, checked in child processes of this test binary ---- */

/* Child: a stream blocked inside an op, then SIGUSR2 (as emu-run sends on a timeout). */
static int child_sigusr2(void)
{
    cudaStream_t s;
    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess)
        return 2;
    struct activity_op a = {GATE_INIT, GATE_INIT};
    if (usbyteEmuStreamEnqueue(s, busy_with_activity, &a, "test op #7") != cudaSuccess || !gate_wait(&a.reached))
        return 3;
    raise(SIGUSR2);
    gate_open(&a.release);
    return cudaStreamSynchronize(s) == cudaSuccess ? 0 : 4;
}

/* Child: exits while a worker is blocked forever and others have queued work. */
static int child_exit_blocked(void)
{
    static struct gate never = GATE_INIT;
    static struct thread_probe unused;
    cudaStream_t s;
    if (cudaStreamCreate(&s) != cudaSuccess || cudaLaunchHostFunc(s, gate_host_fn, &never) != cudaSuccess ||
        cudaLaunchHostFunc(s, record_thread, &unused) != cudaSuccess)
        return 2;
    cudaStream_t idle;
    if (cudaStreamCreate(&idle) != cudaSuccess)
        return 3;
    return 0;
}

/* Runs this binary with argv[1] = mode and the given USBYTE_EMU_LAUNCHED; returns its exit
 * status and what it wrote to stderr. */
static int run_child(const char *mode, const char *launched, char *err, size_t err_size, pid_t *pid_out)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        close(fds[1]);
        if (launched)
            setenv("USBYTE_EMU_LAUNCHED", launched, 1);
        else
            unsetenv("USBYTE_EMU_LAUNCHED");
        execl("/proc/self/exe", "test_emu_streams", mode, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    size_t n = 0;
    ssize_t r;
    while (n + 1 < err_size && (r = read(fds[0], err + n, err_size - 1 - n)) > 0)
        n += (size_t)r;
    err[n] = '\0';
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    *pid_out = pid;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void test_sigusr2_dumps_streams_when_launched(void **state)
{
    (void)state;
    char err[8192];
    pid_t pid;
    assert_int_equal(run_child("--child-sigusr2", "1", err, sizeof err, &pid), 0);
    char expect[128];
    snprintf(expect, sizeof expect, "[pid %d] stream ", (int)pid);
    /* The child's first created stream: queue 1 (queue 0 is the legacy stream's), whatever
     * CUDA_DEVICE_MAX_CONNECTIONS the suite runs under. */
    char line[96];
    snprintf(line, sizeof line, "non-blocking queue %d depth 1: waiting for rank 3 in test op #7\n",
             1 % usbyteEmuQueueCount());
    if (strstr(err, expect) == NULL || strstr(err, line) == NULL)
        fail_msg("SIGUSR2 dump missing or wrong:\n%s", err);
    /* Without the launcher's variable the signal keeps its default action (terminate). */
    assert_int_equal(run_child("--child-sigusr2", NULL, err, sizeof err, &pid), 128 + SIGUSR2);
}

static void test_exit_with_blocked_worker(void **state)
{
    (void)state;
    char err[8192];
    pid_t pid;
    int rc = run_child("--child-exit-blocked", NULL, err, sizeof err, &pid);
    if (rc != 0)
        fail_msg("child exited with %d:\n%s", rc, err);
}

/* ---- fork: the child's streams are its own ---- */
static void set_flag(void *arg)
{
    *(volatile int *)arg = 1;
}

/* In the forked child: every kind of stream it can get runs its work.  Returns 0, or the
 * number of the step that failed; a step that hangs is ended by the alarm (SIGALRM). */
static int child_uses_streams(cudaStream_t inherited)
{
    alarm(EMU_TEST_DEADLINE_S);
    volatile int ran[6] = {0};
    cudaStream_t c, nb, again;
    /* The parent destroyed a stream before the fork: this create must not recycle it. */
    if (cudaStreamCreate(&c) != cudaSuccess || cudaLaunchHostFunc(c, set_flag, (void *)&ran[0]) != cudaSuccess)
        return 1;
    if (cudaStreamSynchronize(c) != cudaSuccess || !ran[0])
        return 2;
    if (cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking) != cudaSuccess ||
        cudaLaunchHostFunc(nb, set_flag, (void *)&ran[1]) != cudaSuccess || cudaStreamSynchronize(nb) != cudaSuccess ||
        !ran[1])
        return 3;
    /* The legacy and per-thread default streams existed in the parent. */
    if (cudaLaunchHostFunc(NULL, set_flag, (void *)&ran[2]) != cudaSuccess || cudaStreamSynchronize(NULL) != cudaSuccess ||
        !ran[2])
        return 4;
    if (cudaLaunchHostFunc(cudaStreamPerThread, set_flag, (void *)&ran[3]) != cudaSuccess ||
        cudaStreamSynchronize(cudaStreamPerThread) != cudaSuccess || !ran[3])
        return 5;
    /* A blocking stream's implicit wait for the legacy stream, and a recycle within the child. */
    if (cudaStreamDestroy(c) != cudaSuccess || cudaStreamCreate(&again) != cudaSuccess ||
        cudaLaunchHostFunc(again, set_flag, (void *)&ran[4]) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess ||
        !ran[4])
        return 6;
    /* Work on the parent's stream is refused instead of queued for a worker that is not here. */
    if (cudaLaunchHostFunc(inherited, set_flag, (void *)&ran[5]) != cudaErrorInitializationError)
        return 7;
    cudaGetLastError();
    return 0;
}

static void test_streams_in_forked_child(void **state)
{
    (void)state;
#if defined(__SANITIZE_THREAD__)
    /* ThreadSanitizer cannot follow a thread started in the child of a multi-threaded process
     * (it stops it: "dup thread with used id"), which is what this test does on purpose. */
    print_message("skipped under ThreadSanitizer: threads started after a multi-threaded fork\n");
    skip();
#endif
    cudaStream_t dead, kept;
    int ran = 0;
    CHECK(cudaStreamCreate(&dead));
    CHECK(cudaStreamCreate(&kept));
    CHECK(cudaLaunchHostFunc(NULL, set_flag, &ran));
    CHECK(cudaLaunchHostFunc(cudaStreamPerThread, set_flag, &ran));
    CHECK(cudaStreamSynchronize(dead));
    CHECK(cudaDeviceSynchronize());
    /* Drained and destroyed: the next create in this process takes this object. */
    CHECK(cudaStreamDestroy(dead));
    pid_t pid = fork();
    if (pid == 0)
        exit(child_uses_streams(kept));   /* exit(): the emulator's destructors run in the child */
    assert_true(pid > 0);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (WIFSIGNALED(status))
        fail_msg("child killed by signal %d (%s)", WTERMSIG(status),
                 WTERMSIG(status) == SIGALRM ? "hung" : "crashed");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("child failed at step %d", WEXITSTATUS(status));
    /* The parent's own streams still work after the fork (the table's lock was released). */
    cudaStream_t after;
    ran = 0;
    CHECK(cudaStreamCreate(&after));
    CHECK(cudaLaunchHostFunc(after, set_flag, &ran));
    CHECK(cudaLaunchHostFunc(kept, set_flag, &ran));
    CHECK(cudaStreamSynchronize(after));
    CHECK(cudaStreamSynchronize(kept));
    assert_int_equal(ran, 1);
    CHECK(cudaStreamDestroy(after));
    CHECK(cudaStreamDestroy(kept));
}

int main(int argc, char **argv)
{
    emu_test_own_queues();
    if (argc > 1 && strcmp(argv[1], "--child-sigusr2") == 0)
        return child_sigusr2();
    if (argc > 1 && strcmp(argv[1], "--child-exit-blocked") == 0)
        return child_exit_blocked();

    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fifo_order),
        cmocka_unit_test(test_streams_run_concurrently),
        cmocka_unit_test(test_host_function_runs_on_worker),
        cmocka_unit_test(test_device_synchronize_waits_for_all),
        cmocka_unit_test(test_legacy_stream_waits_for_blocking_streams),
        cmocka_unit_test(test_per_thread_default_stream),
        cmocka_unit_test(test_stream_attributes),
        cmocka_unit_test(test_invalid_stream_handles),
        cmocka_unit_test(test_last_error_sticky_and_not),
        cmocka_unit_test(test_versions_and_devices),
        cmocka_unit_test(test_dump_streams_shows_activity),
        cmocka_unit_test(test_sigusr2_dumps_streams_when_launched),
        cmocka_unit_test(test_exit_with_blocked_worker),
        cmocka_unit_test(test_streams_in_forked_child),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    return emu_test_queues_were_own() ? failed : failed + 1;
}
