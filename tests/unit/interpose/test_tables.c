/* The tables' note that a communicator passes its calls through (interpose/tables.c), which lets
 * a collective on it skip the lock: it holds for the thread that noted it, for that communicator,
 * until anything in the tables changes (a state moved, a failure, a record created or
 * forgotten), and never for a communicator whose record a new one reuses.  And what the way in
 * answers of a call: in schedule mode, its stream's record and whether a capture holds it. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../../interpose/capture.h"
#include "../../../interpose/cuda_list.h"
#include "../../../interpose/guard.h"
#include "../../../interpose/nccl_list.h"
#include "../../../interpose/state.h"
#include "../../../interpose/tables.h"

ub_cuda_real ub_cuda; /* resolve.c's tables: unused here */
ub_nccl_real ub_nccl;

#define H(x) ((ncclComm_t)(uintptr_t)(x))

/* A record in pass-through, noted by this thread (lock held). */
static ub_comm *passing(ncclComm_t handle)
{
    ub_comm *c = ub_comm_create(handle, 0, 2, 0);
    assert_non_null(c);
    ub_comm_set_state(c, UB_COMM_PASS_THROUGH, "test");
    ub_state_note_passing_through(c);
    return c;
}

/* A collective's way in (lock not held): true when it goes through without the lock. */
static bool passes(ncclComm_t handle)
{
    ub_call_lookup at;
    if (!ub_state_lock_call(handle, NULL, &at))
        return true;
    ub_state_unlock();
    return false;
}

static void test_holds_until_a_change(void **state)
{
    (void)state;
    ub_state_lock();
    ub_comm *b = ub_comm_create(H(0xb0), 0, 2, 0), *a = passing(H(0xa0));
    ub_state_unlock();
    assert_true(passes(H(0xa0)));
    assert_false(passes(H(0xb0))); /* another communicator */
    assert_false(passes(NULL));
    ub_state_lock();
    ub_comm_set_state(b, UB_COMM_PROFILE, "another record moved");
    ub_state_unlock();
    assert_false(passes(H(0xa0)));
    ub_state_lock();
    ub_state_note_passing_through(a);
    ub_state_unlock();
    assert_true(passes(H(0xa0)));
    ub_state_lock();
    ub_comm_set_failed(a, ncclSystemError, "a failure to answer");
    ub_state_unlock();
    assert_false(passes(H(0xa0)));
    ub_state_lock();
    ub_state_note_passing_through(a);
    ub_comm_create(H(0xc0), 0, 2, 0);
    ub_state_unlock();
    assert_false(passes(H(0xa0))); /* a new record */
}

static void test_forgotten_handle_reused(void **state)
{
    (void)state;
    ub_state_lock();
    ub_comm *d = passing(H(0xd0));
    ub_state_unlock();
    assert_true(passes(H(0xd0)));
    ub_state_lock();
    ub_comm_forget(d);
    ub_state_unlock();
    assert_false(passes(H(0xd0)));
    ub_state_lock();
    ub_comm *again = ub_comm_create(H(0xd0), 0, 2, 0); /* NCCL gave the address to a new communicator */
    assert_int_equal(again->state, UB_COMM_DETECT);
    ub_state_unlock();
    assert_false(passes(H(0xd0)));
}

static void *other_thread(void *arg)
{
    return (void *)(uintptr_t)passes((ncclComm_t)arg);
}

static void test_per_thread(void **state)
{
    (void)state;
    ub_state_lock();
    passing(H(0xe0));
    ub_state_unlock();
    assert_true(passes(H(0xe0)));
    pthread_t t;
    void *seen = (void *)1;
    assert_int_equal(pthread_create(&t, NULL, other_thread, H(0xe0)), 0);
    assert_int_equal(pthread_join(t, &seen), 0);
    assert_null(seen);
}

#define S(x) ((cudaStream_t)(uintptr_t)(x))

/* A scheduled call's way in answers its stream's record and the capture on it; other states
 * neither (their calls ask where they need them). */
static void test_way_in_answers_the_stream(void **state)
{
    (void)state;
    ub_state_lock();
    ub_comm *c = ub_comm_create(H(0xf0), 0, 2, 0);
    ub_stream *st = ub_stream_get(S(0x51), c);
    ub_state_unlock();
    ub_call_lookup at;
    assert_true(ub_state_lock_call(H(0xf0), S(0x51), &at));
    assert_ptr_equal(at.comm, c);
    assert_null(at.stream); /* detecting */
    ub_comm_set_state(c, UB_COMM_SCHEDULE, "test");
    ub_state_unlock();
    assert_true(ub_state_lock_call(H(0xf0), S(0x51), &at));
    assert_ptr_equal(at.stream, st);
    assert_false(at.capturing);
    ub_state_unlock();
    assert_true(ub_state_lock_call(H(0xf0), S(0x52), &at));
    assert_null(at.stream); /* a stream without a record yet */
    ub_state_unlock();
    ub_capture_begun(S(0x51));
    assert_true(ub_state_lock_call(H(0xf0), S(0x51), &at));
    assert_true(at.capturing);
    ub_state_unlock();
    assert_true(ub_state_lock_call(H(0xf1), S(0x51), &at));
    assert_null(at.comm);
    ub_state_unlock();
    ub_comm *adopted = ub_state_lock_adopted(H(0xf1), 1, 2, 0);
    assert_non_null(adopted);
    assert_int_equal(adopted->rank, 1);
    ub_state_unlock();
    assert_ptr_equal(ub_state_lock_adopted(H(0xf1), 0, 2, 0), adopted); /* made meanwhile: kept */
    ub_state_unlock();
}

/* A failed check leaves its test at once: the lock must not stay held for the next one. */
static int unlock_if_held(void **state)
{
    (void)state;
    if (ub_holds_state_lock)
        ub_state_unlock();
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_holds_until_a_change, unlock_if_held),
        cmocka_unit_test_teardown(test_forgotten_handle_reused, unlock_if_held),
        cmocka_unit_test_teardown(test_per_thread, unlock_if_held),
        cmocka_unit_test_teardown(test_way_in_answers_the_stream, unlock_if_held),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
