/* The calling thread's NCCL groups (interpose/group.c): the depth, the queue of work that must
 * follow the launch of the open groups (order, copied data, capacity, per thread, an action that
 * queues another), and the early launch that ends and reopens the groups (the real ncclGroupEnd
 * and ncclGroupStart called depth times; a failure is returned and noted for the application's
 * outermost ncclGroupEnd, a call with the global lock held stops the process).  The real NCCL
 * functions are this test's own. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../../interpose/group.h"
#include "../../../interpose/guard.h"
#include "../../../interpose/nccl_list.h"
#include "../../../interpose/state.h"
#include "../../../interpose/tables.h"

ub_nccl_real ub_nccl; /* resolve.c's table: here, the fakes below */

static int ends, starts;
static char calls[64];  /* 'E' per GroupEnd, 'S' per GroupStart, in order */
static ncclResult_t end_result;

static ncclResult_t fake_group_end(void)
{
    calls[ends + starts] = 'E';
    ends++;
    return end_result;
}

static ncclResult_t fake_group_start(void)
{
    calls[ends + starts] = 'S';
    starts++;
    return ncclSuccess;
}

/* What the life cycle does after the outermost ncclGroupEnd (ub_group_ended): takes the queue and
 * runs each entry. */
static void run_after_launch(void)
{
    ub_after_launch queued[UB_MAX_AFTER_LAUNCH];
    for (int i = 0, n = ub_group_take_after_launch(queued); i < n; i++)
        queued[i].fn(queued[i].data);
}

static int setup(void **state)
{
    (void)state;
    ub_nccl.GroupEnd = fake_group_end;
    ub_nccl.GroupStart = fake_group_start;
    ends = starts = 0;
    end_result = ncclSuccess;
    memset(calls, 0, sizeof calls);
    while (ub_group_leave() > 0)
        ;
    run_after_launch();
    return 0;
}

static void test_depth(void **state)
{
    (void)state;
    assert_int_equal(ub_thread_group_depth(), 0);
    assert_false(ub_thread_in_group());
    ub_group_enter();
    ub_group_enter();
    assert_int_equal(ub_thread_group_depth(), 2);
    assert_true(ub_thread_in_group());
    assert_int_equal(ub_group_leave(), 1);
    assert_int_equal(ub_group_leave(), 0);
    /* An ncclGroupEnd without its start (NCCL refuses it) leaves the depth at 0. */
    assert_int_equal(ub_group_leave(), 0);
    assert_false(ub_thread_in_group());
}

static int ran[8], n_ran;

static void record(const void *data)
{
    int v;
    memcpy(&v, data, sizeof v);
    ran[n_ran++] = v;
}

static void test_after_launch_order_and_copy(void **state)
{
    (void)state;
    n_ran = 0;
    ub_group_enter();
    for (int v = 1; v <= 3; v++) {
        int x = 10 * v;
        assert_true(ub_group_after_launch(record, &x, sizeof x));
        x = -1; /* the queue holds a copy */
    }
    assert_true(ub_group_pending());
    ub_group_leave();
    run_after_launch();
    assert_false(ub_group_pending());
    assert_int_equal(n_ran, 3);
    assert_int_equal(ran[0], 10);
    assert_int_equal(ran[1], 20);
    assert_int_equal(ran[2], 30);
    run_after_launch(); /* nothing left: nothing runs again */
    assert_int_equal(n_ran, 3);
}

static void nothing(const void *data) { (void)data; }

static void test_after_launch_capacity(void **state)
{
    (void)state;
    unsigned char big[49] = {0};
    assert_false(ub_group_after_launch(nothing, big, sizeof big)); /* 48 bytes at most */
    assert_true(ub_group_after_launch(nothing, big, 48));
    int n = 1;
    while (ub_group_after_launch(nothing, big, 1))
        n++;
    assert_int_equal(n, 64);
    run_after_launch();
    assert_true(ub_group_after_launch(nothing, big, 1)); /* room again */
    run_after_launch();
}

static void requeue(const void *data)
{
    record(data);
    int again = 99;
    if (n_ran == 1)
        assert_true(ub_group_after_launch(record, &again, sizeof again));
}

static void test_action_queues_another(void **state)
{
    (void)state;
    n_ran = 0;
    int x = 7;
    assert_true(ub_group_after_launch(requeue, &x, sizeof x));
    run_after_launch();
    assert_int_equal(n_ran, 1); /* the one it queued waits for the next launch */
    assert_true(ub_group_pending());
    run_after_launch();
    assert_int_equal(n_ran, 2);
    assert_int_equal(ran[1], 99);
    assert_false(ub_group_pending());
}

static void *other_thread(void *arg)
{
    int *seen = arg;
    seen[0] = ub_thread_group_depth();
    seen[1] = ub_group_pending();
    return NULL;
}

static void test_per_thread(void **state)
{
    (void)state;
    int x = 1, seen[2] = {-1, -1};
    ub_group_enter();
    assert_true(ub_group_after_launch(nothing, &x, sizeof x));
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, other_thread, seen), 0);
    pthread_join(t, NULL);
    assert_int_equal(seen[0], 0);
    assert_int_equal(seen[1], 0);
    assert_int_equal(ub_thread_group_depth(), 1);
    assert_true(ub_group_pending());
}

static void test_split(void **state)
{
    (void)state;
    ub_group_split_begin(3);
    ub_group_split_end(3);
    assert_string_equal(calls, "EEESSS");
    ub_group_split_begin(0);
    ub_group_split_end(0);
    assert_int_equal(ends + starts, 6);
}

/* Runs fn in a child and returns its termination signal (0: it exited). */
static int signal_of(void (*fn)(void))
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(2); /* the diagnostic line is not this test's output */
        fn();
        _exit(0);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    return WIFSIGNALED(st) ? WTERMSIG(st) : 0;
}

static void split_with_lock_held(void)
{
    ub_holds_state_lock = true;
    ub_group_split_begin(1);
}

static void split_normally(void) { ub_group_split_begin(1); }

static void test_split_lock_held_stops_the_process(void **state)
{
    (void)state;
    /* A real NCCL call with the global lock held is the runtime's bug: one line, then abort. */
    assert_int_equal(signal_of(split_with_lock_held), SIGABRT);
    assert_int_equal(signal_of(split_normally), 0);
}

static void test_split_failure_reaches_the_group_end(void **state)
{
    (void)state;
    /* The application's group of depth 2 ended early, and NCCL fails it: the failure is returned
     * (never an abort), and the application's own outermost ncclGroupEnd returns it once. */
    ub_group_enter();
    ub_group_enter();
    end_result = ncclRemoteError;
    assert_int_equal(ub_group_split_begin(2), ncclRemoteError);
    assert_string_equal(calls, "E"); /* stopped at the failure */
    end_result = ncclSuccess;
    assert_int_equal(ub_group_split_end(2), ncclSuccess);
    ub_group_leave();
    assert_int_equal(ub_group_result(ncclSuccess), ncclSuccess); /* an inner end: not yet */
    ub_group_leave();
    assert_int_equal(ub_group_result(ncclSuccess), ncclRemoteError);
    assert_int_equal(ub_group_result(ncclSuccess), ncclSuccess); /* forgotten */
    /* The real end's own failure comes first. */
    ub_group_note_error(ncclUnhandledCudaError);
    assert_int_equal(ub_group_result(ncclInvalidUsage), ncclInvalidUsage);
    assert_int_equal(ub_group_result(ncclSuccess), ncclSuccess);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_depth, setup),
        cmocka_unit_test_setup(test_after_launch_order_and_copy, setup),
        cmocka_unit_test_setup(test_after_launch_capacity, setup),
        cmocka_unit_test_setup(test_action_queues_another, setup),
        cmocka_unit_test_setup(test_per_thread, setup),
        cmocka_unit_test_setup(test_split, setup),
        cmocka_unit_test_setup(test_split_lock_held_stops_the_process, setup),
        cmocka_unit_test_setup(test_split_failure_reaches_the_group_end, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
