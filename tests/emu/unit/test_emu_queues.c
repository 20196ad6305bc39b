/* The emulator's hardware queues (CUDA_DEVICE_MAX_CONNECTIONS): the number of queues and what
 * a bad value gives, round-robin assignment of streams, head-of-line blocking of a wait, and
 * queue deadlocks (found by usbyteEmuQueueDeadlocks and named by the SIGUSR2 hang dump).
 *
 * The variable is read once per process, so every case runs in a child process (this binary
 * run again with "--child CASE") that gets the variable in its environment. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "../emu_internal.h"
#include "../testing/sync.h"

/* ---- in the child: each case returns 0, or prints what failed to stderr and returns 1 ---- */

#define REQUIRE(cond)                                                                   \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            fprintf(stderr, "child: %s:%d: failed: %s\n", __FILE__, __LINE__, #cond);  \
            return 1;                                                                   \
        }                                                                               \
    } while (0)
#define REQUIRE_OK(call) REQUIRE((call) == cudaSuccess)
#define REQUIRE_CU(call) REQUIRE((call) == CUDA_SUCCESS)

static unsigned long long stream_id(cudaStream_t s)
{
    unsigned long long id = 0;
    cudaStreamGetId(s, &id);
    return id;
}

static CUdeviceptr dptr(void *p)
{
    return (CUdeviceptr)(uintptr_t)p;
}

/* What usbyteEmuQueueDeadlocks writes, read back through a memfd; returns its count. */
static int deadlocks(char *buf, size_t size)
{
    int fd = memfd_create("deadlocks", 0);
    if (fd < 0)
        return -100;
    int n = usbyteEmuQueueDeadlocks(fd);
    memset(buf, 0, size);
    if (pread(fd, buf, size - 1, 0) < 0)
        n = -101;
    close(fd);
    return n;
}

/* The stream dump, read back through a memfd. */
static void dump(char *buf, size_t size)
{
    int fd = memfd_create("dump", 0);
    memset(buf, 0, size);
    if (fd < 0)
        return;
    usbyteEmuDumpStreams(fd);
    if (pread(fd, buf, size - 1, 0) < 0)
        buf[0] = '\0';
    close(fd);
}

/* Polls the dump until it contains `want` (a worker publishes its activity as it starts to
 * wait); false after the deadline. */
static bool dump_shows(const char *want, char *buf, size_t size)
{
    time_t give_up = time(NULL) + EMU_TEST_DEADLINE_S;
    for (;;) {
        dump(buf, size);
        if (strstr(buf, want) != NULL)
            return true;
        if (time(NULL) >= give_up)
            return false;
        sched_yield();
    }
}

/* Prints the number of queues. */
static int child_count(void)
{
    int n = usbyteEmuQueueCount();
    /* Read once: a later change does not count. */
    setenv("CUDA_DEVICE_MAX_CONNECTIONS", n == 5 ? "6" : "5", 1);
    cudaStream_t s;
    REQUIRE_OK(cudaStreamCreate(&s));
    REQUIRE(usbyteEmuQueueCount() == n);
    printf("queues %d\n", n);
    return 0;
}

/* Queue 0 is the legacy stream's; the k-th other stream (created, per-thread default, or a
 * recycled object made anew) gets queue k mod N. */
static int child_round_robin(void)
{
    int n = usbyteEmuQueueCount();
    REQUIRE(n >= 2);
    REQUIRE(usbyteEmuStreamQueue(NULL) == 0);
    REQUIRE(usbyteEmuStreamQueue(cudaStreamLegacy) == 0);
    cudaStream_t s[40];
    for (int k = 1; k <= n + 1; k++) {
        REQUIRE_OK(cudaStreamCreateWithFlags(&s[k], k % 2 ? cudaStreamNonBlocking : cudaStreamDefault));
        REQUIRE(usbyteEmuStreamQueue(s[k]) == k % n);
    }
    /* The (n+1)-th stream shares the first one's queue. */
    REQUIRE(usbyteEmuStreamQueue(s[n + 1]) == usbyteEmuStreamQueue(s[1]));
    /* This thread's per-thread default stream is made on first use: the next in turn. */
    REQUIRE(usbyteEmuStreamQueue(cudaStreamPerThread) == (n + 2) % n);
    /* A destroyed and drained stream's object is recycled as a new stream: the next queue. */
    REQUIRE_OK(cudaStreamSynchronize(s[1]));
    REQUIRE_OK(cudaStreamDestroy(s[1]));
    cudaStream_t again;
    REQUIRE_OK(cudaStreamCreate(&again));
    REQUIRE(usbyteEmuStreamQueue(again) == (n + 3) % n);
    printf("round robin over %d queues\n", n);
    return 0;
}

/* G (held by a host function) records event E; A waits for E; B shares A's queue when the
 * queues are few, C never does.  C runs at once; B runs only once A's wait is satisfied when
 * it shares A's queue, at once otherwise.  Streams are made so that with 3 queues
 * G = queue 1, A = 2, C = 0, (spare) = 1, B = 2. */
static int child_head_of_line(void)
{
    cudaStream_t g, a, c, spare, b;
    REQUIRE_OK(cudaStreamCreateWithFlags(&g, cudaStreamNonBlocking));
    REQUIRE_OK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
    REQUIRE_OK(cudaStreamCreateWithFlags(&c, cudaStreamNonBlocking));
    REQUIRE_OK(cudaStreamCreateWithFlags(&spare, cudaStreamNonBlocking));
    REQUIRE_OK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
    bool shared = usbyteEmuStreamQueue(a) == usbyteEmuStreamQueue(b);
    REQUIRE(usbyteEmuStreamQueue(c) != usbyteEmuStreamQueue(a) && usbyteEmuStreamQueue(c) != usbyteEmuStreamQueue(g));
    REQUIRE(usbyteEmuStreamQueue(g) != usbyteEmuStreamQueue(a));

    static struct gate hold = GATE_INIT, b_ran = GATE_INIT, c_ran = GATE_INIT;
    cudaEvent_t e;
    REQUIRE_OK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    REQUIRE_OK(cudaLaunchHostFunc(g, gate_host_fn, &hold));
    REQUIRE_OK(cudaEventRecord(e, g));
    REQUIRE_OK(cudaStreamWaitEvent(a, e, 0));
    REQUIRE_OK(cudaLaunchHostFunc(b, gate_open_fn, &b_ran));
    REQUIRE_OK(cudaLaunchHostFunc(c, gate_open_fn, &c_ran));

    REQUIRE(gate_wait(&c_ran));
    char buf[8192];
    if (shared) {
        /* B's host function waits for its turn behind A's wait. */
        char want[160];
        snprintf(want, sizeof want, "] stream %llu non-blocking queue %d depth 1: cudaLaunchHostFunc: waiting for its turn in queue %d\n",
                 stream_id(b), usbyteEmuStreamQueue(b), usbyteEmuStreamQueue(b));
        if (!dump_shows(want, buf, sizeof buf)) {
            fprintf(stderr, "child: dump lacks \"%s\":\n%s", want, buf);
            return 1;
        }
        REQUIRE(!gate_is_open(&b_ran));
        REQUIRE(cudaStreamQuery(b) == cudaErrorNotReady);
    } else {
        REQUIRE(gate_wait(&b_ran));
    }
    /* Held back, not deadlocked: opening the gate releases everything. */
    REQUIRE(deadlocks(buf, sizeof buf) == 0);
    gate_open(&hold);
    REQUIRE(gate_wait(&b_ran));
    REQUIRE_OK(cudaDeviceSynchronize());
    REQUIRE_OK(cudaEventDestroy(e));
    printf("%s\n", shared ? "shared: held back" : "separate: ran");
    return 0;
}

/* Prints the deadlock lines of usbyteEmuQueueDeadlocks, raises SIGUSR2 (the launcher's hang
 * dump) when `dump_too`, and exits with the deadlock in place (as a hung job is killed). */
static int report_and_exit(const char *buf, int found, bool dump_too)
{
    printf("deadlocks %d\n%s", found, buf);
    fflush(stdout);
    if (dump_too)
        raise(SIGUSR2);
    return 0;
}

/* A waits for a value that B writes, the write submitted after the wait: with A and B in one
 * queue the write can never begin.  With separate queues the write releases the wait. */
static int child_value_wait(void)
{
    cudaStream_t a, b;
    REQUIRE_OK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
    REQUIRE_OK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
    uint64_t *word;
    REQUIRE_OK(cudaMalloc((void **)&word, sizeof *word));
    REQUIRE_OK(cudaMemset(word, 0, sizeof *word));
    REQUIRE_CU(cuStreamWaitValue64((CUstream)a, dptr(word), 5, CU_STREAM_WAIT_VALUE_GEQ));
    char buf[4096];
    /* A wait for a write nobody has submitted yet is no queue deadlock. */
    REQUIRE(deadlocks(buf, sizeof buf) == 0);
    REQUIRE_CU(cuStreamWriteValue64((CUstream)b, dptr(word), 5, CU_STREAM_WRITE_VALUE_DEFAULT));
    printf("streams %llu %llu queues %d %d word %p\n", stream_id(a), stream_id(b), usbyteEmuStreamQueue(a),
           usbyteEmuStreamQueue(b), (void *)word);
    int found = deadlocks(buf, sizeof buf);
    if (usbyteEmuStreamQueue(a) == usbyteEmuStreamQueue(b)) {
        REQUIRE(found == 1);
        /* The dump is taken once B's worker waits for its turn. */
        char want[160], seen[8192];
        snprintf(want, sizeof want, "] stream %llu non-blocking queue %d depth 1: cuStreamWriteValue64 %p = 5: waiting for its turn",
                 stream_id(b), usbyteEmuStreamQueue(b), (void *)word);
        if (!dump_shows(want, seen, sizeof seen)) {
            fprintf(stderr, "child: dump lacks \"%s\":\n%s", want, seen);
            return 1;
        }
        return report_and_exit(buf, found, true);
    }
    REQUIRE(found == 0);
    REQUIRE_OK(cudaStreamSynchronize(a));
    REQUIRE(__atomic_load_n(word, __ATOMIC_ACQUIRE) == 5);
    REQUIRE(deadlocks(buf, sizeof buf) == 0);
    REQUIRE_OK(cudaDeviceSynchronize());
    REQUIRE_OK(cudaFree(word));
    printf("deadlocks 0\ncompleted\n");
    return 0;
}

/* A cycle through two queues: X waits for a value that Y writes after waiting for event E,
 * which Z records behind X.  Each stream alone would get through (nothing waits for work
 * submitted later on its own stream); with 2 queues X and Z share one, and Y's queue is
 * another: X's wait holds Z's record, which holds Y's wait, which holds the write. */
static int child_cycle(void)
{
    cudaStream_t x, y, z;
    REQUIRE_OK(cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking));
    REQUIRE_OK(cudaStreamCreateWithFlags(&y, cudaStreamNonBlocking));
    REQUIRE_OK(cudaStreamCreateWithFlags(&z, cudaStreamNonBlocking));
    uint32_t *word;
    REQUIRE_OK(cudaMalloc((void **)&word, sizeof *word));
    REQUIRE_OK(cudaMemset(word, 0, sizeof *word));
    cudaEvent_t e;
    REQUIRE_OK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    REQUIRE_CU(cuStreamWaitValue32((CUstream)x, dptr(word), 1, CU_STREAM_WAIT_VALUE_EQ));
    REQUIRE_OK(cudaEventRecord(e, z));
    REQUIRE_OK(cudaStreamWaitEvent(y, e, 0));
    REQUIRE_CU(cuStreamWriteValue32((CUstream)y, dptr(word), 1, CU_STREAM_WRITE_VALUE_DEFAULT));
    printf("streams %llu %llu %llu queues %d %d %d word %p\n", stream_id(x), stream_id(y), stream_id(z),
           usbyteEmuStreamQueue(x), usbyteEmuStreamQueue(y), usbyteEmuStreamQueue(z), (void *)word);
    char buf[4096];
    int found = deadlocks(buf, sizeof buf);
    if (usbyteEmuStreamQueue(x) == usbyteEmuStreamQueue(z) && usbyteEmuStreamQueue(x) != usbyteEmuStreamQueue(y)) {
        REQUIRE(found == 2);
        /* And it is held: Z's record waits for its turn behind X's wait. */
        char want[160], seen[8192];
        snprintf(want, sizeof want, "] stream %llu non-blocking queue %d depth 1: cudaEventRecord event 1: waiting for its turn",
                 stream_id(z), usbyteEmuStreamQueue(z));
        if (!dump_shows(want, seen, sizeof seen)) {
            fprintf(stderr, "child: dump lacks \"%s\":\n%s", want, seen);
            return 1;
        }
        return report_and_exit(buf, found, false);
    }
    REQUIRE(found == 0);
    REQUIRE_OK(cudaDeviceSynchronize());
    REQUIRE(__atomic_load_n(word, __ATOMIC_ACQUIRE) == 1);
    REQUIRE_OK(cudaEventDestroy(e));
    REQUIRE_OK(cudaFree(word));
    printf("deadlocks 0\ncompleted\n");
    return 0;
}

/* The legacy stream's implicit wait for a blocking stream S is at the head of queue 0, S's
 * value wait at the head of queue 1, and the write that would release S is on T, behind the
 * implicit wait in queue 0 (2 queues: S = queue 1, T = queue 0). */
static int child_legacy(void)
{
    cudaStream_t s, t;
    REQUIRE_OK(cudaStreamCreate(&s));
    REQUIRE_OK(cudaStreamCreateWithFlags(&t, cudaStreamNonBlocking));
    REQUIRE(usbyteEmuStreamQueue(s) == 1 && usbyteEmuStreamQueue(t) == 0);
    uint64_t *word;
    REQUIRE_OK(cudaMalloc((void **)&word, sizeof *word));
    REQUIRE_OK(cudaMemset(word, 0, sizeof *word));
    REQUIRE_CU(cuStreamWaitValue64((CUstream)s, dptr(word), 1, CU_STREAM_WAIT_VALUE_GEQ));
    static struct gate ran = GATE_INIT;
    REQUIRE_OK(cudaLaunchHostFunc(NULL, gate_open_fn, &ran));
    REQUIRE_CU(cuStreamWriteValue64((CUstream)t, dptr(word), 1, CU_STREAM_WRITE_VALUE_DEFAULT));
    printf("streams %llu %llu %llu\n", stream_id(cudaStreamLegacy), stream_id(s), stream_id(t));
    char buf[4096];
    int found = deadlocks(buf, sizeof buf);
    REQUIRE(found == 2);
    /* And it is held: T's write waits for its turn behind the implicit wait. */
    char want[160], seen[8192];
    snprintf(want, sizeof want, "] stream %llu non-blocking queue 0 depth 1: cuStreamWriteValue64 %p = 1: waiting for its turn",
             stream_id(t), (void *)word);
    if (!dump_shows(want, seen, sizeof seen)) {
        fprintf(stderr, "child: dump lacks \"%s\":\n%s", want, seen);
        return 1;
    }
    REQUIRE(!gate_is_open(&ran));
    return report_and_exit(buf, found, false);
}

static int child_main(const char *name)
{
    alarm(EMU_TEST_DEADLINE_S * 2);   /* a case that hangs is killed, and the parent fails */
    setvbuf(stdout, NULL, _IOLBF, 0);
    static const struct {
        const char *name;
        int (*fn)(void);
    } cases[] = {
        {"count", child_count}, {"round-robin", child_round_robin}, {"head-of-line", child_head_of_line},
        {"value-wait", child_value_wait}, {"cycle", child_cycle}, {"legacy", child_legacy},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (strcmp(cases[i].name, name) == 0)
            return cases[i].fn();
    fprintf(stderr, "child: unknown case %s\n", name);
    return 2;
}

/* ---- in the parent ---- */

struct child {
    int status;       /* exit status, or 128 + signal */
    pid_t pid;
    char out[8192], err[8192];
};

static void read_all(int fd, char *buf, size_t size)
{
    size_t n = 0;
    ssize_t r;
    while (n + 1 < size && (r = read(fd, buf + n, size - 1 - n)) > 0)
        n += (size_t)r;
    buf[n] = '\0';
}

/* Runs CASE in a child with CUDA_DEVICE_MAX_CONNECTIONS=connections (NULL: unset) and, when
 * launched, USBYTE_EMU_LAUNCHED=1 (the SIGUSR2 dump).  The outputs are small: they fit the
 * pipes until the child has exited. */
static void run_case(const char *name, const char *connections, bool launched, struct child *c)
{
    int out[2], err[2];
    assert_int_equal(pipe(out), 0);
    assert_int_equal(pipe(err), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(out[1], 1);
        dup2(err[1], 2);
        close(out[0]);
        close(out[1]);
        close(err[0]);
        close(err[1]);
        if (connections)
            setenv("CUDA_DEVICE_MAX_CONNECTIONS", connections, 1);
        else
            unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
        if (launched)
            setenv("USBYTE_EMU_LAUNCHED", "1", 1);
        else
            unsetenv("USBYTE_EMU_LAUNCHED");
        execl("/proc/self/exe", "test_emu_queues", "--child", name, (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    close(err[1]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    read_all(out[0], c->out, sizeof c->out);
    read_all(err[0], c->err, sizeof c->err);
    close(out[0]);
    close(err[0]);
    c->pid = pid;
    c->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (c->status != 0)
        fail_msg("case %s with CUDA_DEVICE_MAX_CONNECTIONS=%s: exit %d\nstdout:\n%s\nstderr:\n%s", name,
                 connections ? connections : "(unset)", c->status, c->out, c->err);
}

static int count_lines(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

#define WARNING "usbyte emulator: CUDA_DEVICE_MAX_CONNECTIONS"

static void test_count_default_and_bad_values(void **state)
{
    (void)state;
    static const struct {
        const char *value;   /* NULL: unset */
        int queues;
        const char *warning; /* NULL: none */
    } cases[] = {
        {NULL, 8, NULL},
        {"1", 1, NULL},
        {"32", 32, NULL},
        {"8", 8, NULL},
        {"0", 1, WARNING "=0 is outside 1..32; using 1\n"},
        {"-3", 1, WARNING "=-3 is outside 1..32; using 1\n"},
        {"33", 32, WARNING "=33 is outside 1..32; using 32\n"},
        {"abc", 8, WARNING "='abc' is not a number; using the default 8\n"},
        {"4x", 8, WARNING "='4x' is not a number; using the default 8\n"},
        {"", 8, WARNING "='' is not a number; using the default 8\n"},
    };
    struct child c;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run_case("count", cases[i].value, false, &c);
        char want[32];
        snprintf(want, sizeof want, "queues %d\n", cases[i].queues);
        if (strcmp(c.out, want) != 0)
            fail_msg("CUDA_DEVICE_MAX_CONNECTIONS=%s: got \"%s\", want \"%s\"", cases[i].value ? cases[i].value : "(unset)",
                     c.out, want);
        if (cases[i].warning ? strcmp(c.err, cases[i].warning) != 0 : c.err[0] != '\0')
            fail_msg("CUDA_DEVICE_MAX_CONNECTIONS=%s: stderr \"%s\", want \"%s\"",
                     cases[i].value ? cases[i].value : "(unset)", c.err, cases[i].warning ? cases[i].warning : "");
        assert_int_equal(count_lines(c.err, "\n"), cases[i].warning ? 1 : 0);
    }
}

static void test_round_robin(void **state)
{
    (void)state;
    static const char *const values[] = {"3", NULL, "2", "32"};
    struct child c;
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++)
        run_case("round-robin", values[i], false, &c);
    assert_string_equal(c.out, "round robin over 32 queues\n");
}

static void test_head_of_line_blocking(void **state)
{
    (void)state;
    struct child c;
    run_case("head-of-line", "3", false, &c);
    assert_string_equal(c.out, "shared: held back\n");
    run_case("head-of-line", "32", false, &c);
    assert_string_equal(c.out, "separate: ran\n");
}

/* Parses the child's "streams A B queues QA QB word P" line. */
static void value_wait_streams(const struct child *c, unsigned long long *a, unsigned long long *b, int *qa, int *qb,
                               void **word)
{
    assert_int_equal(sscanf(c->out, "streams %llu %llu queues %d %d word %p", a, b, qa, qb, word), 5);
}

static void test_value_wait_deadlocks_in_one_queue(void **state)
{
    (void)state;
    struct child c;
    run_case("value-wait", "1", true, &c);
    unsigned long long a, b;
    int qa, qb;
    void *word;
    value_wait_streams(&c, &a, &b, &qa, &qb, &word);
    assert_int_equal(qa, 0);
    assert_int_equal(qb, 0);
    char want[256];
    snprintf(want, sizeof want,
             "[pid %d] queue 0: stream %llu's cuStreamWaitValue64(%p >= 5) blocks the queue; the write of 5 that would "
             "release it is queued behind it on stream %llu (same queue): deadlock\n",
             (int)c.pid, a, word, b);
    if (strstr(c.out, "deadlocks 1\n") == NULL || strstr(c.out, want) == NULL)
        fail_msg("query output lacks \"%s\":\n%s", want, c.out);
    /* The hang dump (SIGUSR2 under emu-run) says the same after the stream lines, which show
     * B's write waiting for its turn, and the line saying what holds the queue. */
    char waiting[160], head[160];
    snprintf(waiting, sizeof waiting, "] stream %llu non-blocking queue 0 depth 1: cuStreamWriteValue64 %p = 5: waiting for its turn in queue 0\n",
             b, word);
    snprintf(head, sizeof head, "[pid %d] queue 0: stream %llu's cuStreamWaitValue64 %p >= 5 first, 2 ops not begun\n",
             (int)c.pid, a, word);
    const char *const lines[] = {want, waiting, head};
    for (int i = 0; i < 3; i++)
        if (strstr(c.err, lines[i]) == NULL)
            fail_msg("hang dump lacks \"%s\":\n%s", lines[i], c.err);
}

static void test_value_wait_completes_in_separate_queues(void **state)
{
    (void)state;
    static const char *const values[] = {"32", NULL, "2"};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        struct child c;
        run_case("value-wait", values[i], true, &c);
        unsigned long long a, b;
        int qa, qb;
        void *word;
        value_wait_streams(&c, &a, &b, &qa, &qb, &word);
        assert_int_not_equal(qa, qb);
        if (strstr(c.out, "deadlocks 0\ncompleted\n") == NULL)
            fail_msg("with CUDA_DEVICE_MAX_CONNECTIONS=%s:\n%s", values[i] ? values[i] : "(unset)", c.out);
    }
}

static void test_cycle_through_two_queues(void **state)
{
    (void)state;
    struct child c;
    run_case("cycle", "2", false, &c);
    unsigned long long x, y, z;
    int qx, qy, qz;
    void *word;
    assert_int_equal(sscanf(c.out, "streams %llu %llu %llu queues %d %d %d word %p", &x, &y, &z, &qx, &qy, &qz, &word), 7);
    assert_int_equal(qx, 1);
    assert_int_equal(qy, 0);
    assert_int_equal(qz, 1);
    char want[2][320];
    snprintf(want[0], sizeof want[0],
             "] queue 0: stream %llu's cudaStreamWaitEvent(event 1) blocks the queue; the record of event 1 that would "
             "release it is queued on stream %llu in queue 1, behind stream %llu's cuStreamWaitValue32(%p == 1): deadlock\n",
             y, z, x, word);
    snprintf(want[1], sizeof want[1],
             "] queue 1: stream %llu's cuStreamWaitValue32(%p == 1) blocks the queue; the write of 1 that would release "
             "it is queued on stream %llu in queue 0, behind stream %llu's cudaStreamWaitEvent(event 1): deadlock\n",
             x, word, y, y);
    for (int i = 0; i < 2; i++)
        if (strstr(c.out, "deadlocks 2\n") == NULL || strstr(c.out, want[i]) == NULL)
            fail_msg("lacks \"%s\":\n%s", want[i], c.out);
    /* With a queue each, the same submissions complete. */
    run_case("cycle", "32", false, &c);
    if (strstr(c.out, "deadlocks 0\ncompleted\n") == NULL)
        fail_msg("with 32 queues:\n%s", c.out);
}

static void test_legacy_implicit_wait_in_a_cycle(void **state)
{
    (void)state;
    struct child c;
    run_case("legacy", "2", false, &c);
    unsigned long long legacy, s, t;
    assert_int_equal(sscanf(c.out, "streams %llu %llu %llu", &legacy, &s, &t), 3);
    char want[2][320];
    snprintf(want[0], sizeof want[0],
             "] queue 0: stream %llu's implicit wait for stream %llu op 1 blocks the queue; op 1 that would release it "
             "is queued on stream %llu at the head of queue 1, itself a blocked cuStreamWaitValue64(",
             legacy, s, s);
    snprintf(want[1], sizeof want[1],
             "] queue 1: stream %llu's cuStreamWaitValue64(", s);
    for (int i = 0; i < 2; i++)
        if (strstr(c.out, "deadlocks 2\n") == NULL || strstr(c.out, want[i]) == NULL)
            fail_msg("lacks \"%s\":\n%s", want[i], c.out);
    char tail[160];
    snprintf(tail, sizeof tail, " >= 1) blocks the queue; the write of 1 that would release it is queued on stream %llu in queue 0, behind stream %llu's implicit wait for stream %llu op 1: deadlock\n",
             t, legacy, s);
    if (strstr(c.out, tail) == NULL)
        fail_msg("lacks \"%s\":\n%s", tail, c.out);
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[1], "--child") == 0)
        return child_main(argv[2]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_count_default_and_bad_values),
        cmocka_unit_test(test_round_robin),
        cmocka_unit_test(test_head_of_line_blocking),
        cmocka_unit_test(test_value_wait_deadlocks_in_one_queue),
        cmocka_unit_test(test_value_wait_completes_in_separate_queues),
        cmocka_unit_test(test_cycle_through_two_queues),
        cmocka_unit_test(test_legacy_implicit_wait_in_a_cycle),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
