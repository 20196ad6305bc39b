/* The redirection's tables (interpose/redirect.c): the list of streams that carried deferred calls
 * (the CUDA wrappers' lock-free check) and the pending-event table, on the runtime's real tables
 * (tables.c) with fake real CUDA functions that log what is recorded where:
 *  - a stream is listed once its first call is deferred, and unlisted when its communicator ends;
 *  - an event recorded behind deferred calls not yet issued is pending (a query says not ready),
 *    and is recorded on the private stream, in block-value order, right after the block that
 *    completes it is issued; stream completion covers the stream's whole prefix, call completion
 *    only the latest call;
 *  - after other work on the stream, a pending event gets a progress event and is recorded on the
 *    completion stream behind it and behind the block;
 *  - re-recording or destroying a pending event drops it; an ended communicator records its
 *    pending events on their own streams; a record behind a block that CUDA refuses is returned
 *    and leaves the event pending;
 *  - the issuing thread's wait on a pending event (a wait the plan did not expect) waits, on a
 *    stream or on the host, only for events recorded now after submitted work (the stream's
 *    progress and the blocks issued), and the event stays pending. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../../interpose/cuda_list.h"
#include "../../../interpose/nccl_list.h"
#include "../../../interpose/redirect.h"
#include "../../../interpose/state.h"
#include "../../../interpose/tables.h"

ub_cuda_real ub_cuda; /* resolve.c's tables: here, the fakes below */
ub_nccl_real ub_nccl;

#define H(x) ((void *)(uintptr_t)(x))
static cudaStream_t const PRIV = H(0x100), APP = H(0x200), APP2 = H(0x300);

/* Every record and stream wait, in order: "R ev stream" / "W stream ev". */
typedef struct {
    char kind;
    void *a, *b;
} logged_call;
static logged_call logged[64];
static int n_logged;
static uintptr_t next_handle = 0x1000;

/* The record of this event fails (a CUDA error), once set. */
static cudaEvent_t failing_record;

static cudaError_t fake_record(cudaEvent_t ev, cudaStream_t s)
{
    if (ev && ev == failing_record)
        return cudaErrorLaunchFailure;
    logged[n_logged++] = (logged_call){'R', ev, s};
    return cudaSuccess;
}

static cudaError_t fake_wait(cudaStream_t s, cudaEvent_t ev, unsigned flags)
{
    (void)flags;
    logged[n_logged++] = (logged_call){'W', s, ev};
    return cudaSuccess;
}

static cudaError_t fake_event_create(cudaEvent_t *ev, unsigned flags)
{
    (void)flags;
    *ev = H(next_handle++);
    return cudaSuccess;
}

static cudaError_t fake_stream_create(cudaStream_t *s, unsigned flags)
{
    (void)flags;
    *s = H(next_handle++);
    return cudaSuccess;
}

static cudaError_t fake_sync(cudaEvent_t ev)
{
    logged[n_logged++] = (logged_call){'S', ev, NULL};
    return cudaSuccess;
}

static cudaError_t fake_query(cudaEvent_t ev)
{
    (void)ev;
    return cudaErrorNotReady;
}

static cudaError_t fake_destroy(cudaEvent_t ev)
{
    (void)ev;
    return cudaSuccess;
}

static cudaError_t fake_stream_destroy(cudaStream_t s)
{
    (void)s;
    return cudaSuccess;
}

static ub_comm *comm;
static uintptr_t next_comm = 0x10;

/* A communicator following a plan (device -1: no device switch), its private stream PRIV. */
static int setup(void **state)
{
    (void)state;
    ub_cuda.cudaEventRecord = fake_record;
    ub_cuda.cudaStreamWaitEvent = fake_wait;
    ub_cuda.cudaEventCreateWithFlags = fake_event_create;
    ub_cuda.cudaStreamCreateWithFlags = fake_stream_create;
    ub_cuda.cudaEventQuery = fake_query;
    ub_cuda.cudaEventSynchronize = fake_sync;
    ub_cuda.cudaEventDestroy = fake_destroy;
    ub_cuda.cudaStreamDestroy = fake_stream_destroy;
    n_logged = 0;
    ub_state_lock();
    comm = ub_comm_create(H(next_comm++), 0, 2, -1);
    ub_state_unlock();
    assert_non_null(comm);
    comm->sched.ready = true;
    comm->sched.stream_semantics = true;
    comm->sched.priv = PRIV;
    comm->sched.issued = 0;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    ub_state_lock();
    ub_redirect_end(comm, true);
    ub_comm_forget(comm);
    ub_state_unlock();
    assert_int_equal(atomic_load(&ub_events_pending), 0);
    return 0;
}

/* Call k deferred on stream s, completing with block values (stream, call). */
static void defer(cudaStream_t s, int k, uint64_t stream_value, uint64_t call_value)
{
    ub_state_lock();
    ub_stream *st = ub_stream_get(s, comm);
    assert_non_null(st);
    ub_redirect_deferred(comm, st, k, stream_value, call_value);
    ub_state_unlock();
}

/* Block value `value` issued; the error of the records that complete its events. */
static cudaError_t issue_failing(uint64_t value, char *why, size_t len)
{
    ub_state_lock();
    comm->sched.issued = value;
    cudaError_t e = ub_redirect_block_issued(comm, false, why, len);
    ub_state_unlock();
    return e;
}

static void issue(uint64_t value)
{
    char why[200];
    assert_int_equal(issue_failing(value, why, sizeof why), cudaSuccess);
}

static bool record(cudaEvent_t ev, cudaStream_t s)
{
    cudaError_t r = cudaErrorUnknown;
    bool taken = ub_redirect_record(ev, s, 0, &r);
    if (taken)
        assert_int_equal(r, cudaSuccess);
    return taken;
}

static bool pending(cudaEvent_t ev)
{
    cudaError_t r = cudaSuccess;
    bool p = ub_redirect_event_query(ev, &r);
    assert_true(!p || r == cudaErrorNotReady);
    return p;
}

static void assert_logged(int i, char kind, void *a, void *b)
{
    assert_true(i < n_logged);
    assert_int_equal(logged[i].kind, kind);
    assert_ptr_equal(logged[i].a, a);
    assert_ptr_equal(logged[i].b, b);
}

static void test_stream_list(void **state)
{
    (void)state;
    assert_false(ub_sched_stream_listed(APP));
    defer(APP, 0, 1, 1);
    assert_true(ub_sched_stream_listed(APP));
    assert_false(ub_sched_stream_listed(APP2));
    defer(APP, 1, 2, 2); /* listed once */
    defer(APP2, 2, 2, 2);
    assert_true(ub_sched_stream_listed(APP2));
    ub_state_lock();
    ub_redirect_end(comm, false);
    ub_state_unlock();
    assert_false(ub_sched_stream_listed(APP));
    assert_false(ub_sched_stream_listed(APP2));
    /* An event on an unlisted stream, with nothing pending anywhere, is not the runtime's. */
    assert_false(record(H(0x5000), APP));
    assert_int_equal(n_logged, 0);
}

static void test_pending_until_issued_in_value_order(void **state)
{
    (void)state;
    cudaEvent_t e1 = H(0x5001), e2 = H(0x5002), e3 = H(0x5003);
    defer(APP, 0, 1, 1);
    defer(APP, 1, 3, 3);
    assert_true(record(e3, APP)); /* covers calls 0..1: value 3 */
    comm->sched.stream_semantics = false;
    defer(APP2, 2, 2, 2);
    assert_true(record(e2, APP2)); /* call completion: call 2, value 2 */
    assert_int_equal(n_logged, 0); /* nothing recorded while pending */
    assert_true(pending(e3) && pending(e2));
    assert_false(pending(e1));
    ub_state_lock();
    assert_ptr_equal(ub_redirect_pending_comm(e3, NULL), comm);
    assert_int_equal(comm->sched.n_pending, 2);
    ub_state_unlock();

    issue(1); /* completes neither */
    assert_int_equal(n_logged, 0);
    issue(2);
    assert_int_equal(n_logged, 1);
    assert_logged(0, 'R', e2, PRIV); /* right behind its block on the private stream */
    assert_false(pending(e2));
    assert_true(pending(e3));
    issue(3);
    assert_logged(1, 'R', e3, PRIV);
    assert_false(pending(e3));
    /* Issued already: recorded behind the private stream's work at once. */
    assert_true(record(e1, APP2));
    assert_logged(2, 'R', e1, PRIV);
    assert_false(pending(e1));
}

static void test_progress_after_other_work(void **state)
{
    (void)state;
    cudaEvent_t e = H(0x5010);
    defer(APP, 0, 1, 1);
    ub_redirect_stream_work(APP); /* a wait on APP since its deferred call */
    assert_true(record(e, APP));
    assert_int_equal(n_logged, 1); /* the progress event, recorded on APP now */
    assert_int_equal(logged[0].kind, 'R');
    void *progress = logged[0].a;
    assert_ptr_equal(logged[0].b, APP);
    assert_true(pending(e));
    issue(1);
    /* The completion stream waits for APP's progress and for the block, then records e. */
    assert_int_equal(n_logged, 5);
    void *block_done = logged[1].a;
    assert_logged(1, 'R', block_done, PRIV);
    void *comp = logged[2].a;
    assert_ptr_not_equal(comp, PRIV);
    assert_logged(2, 'W', comp, progress);
    assert_logged(3, 'W', comp, block_done);
    assert_logged(4, 'R', e, comp);
}

static void test_rerecord_and_destroy_drop_pending(void **state)
{
    (void)state;
    cudaEvent_t e = H(0x5020), f = H(0x5021);
    defer(APP, 0, 1, 1);
    assert_true(record(e, APP));
    assert_true(record(f, APP));
    assert_true(pending(e));
    /* Re-recorded on a stream without deferred calls: the application's record, made for real. */
    assert_false(record(e, APP2));
    assert_false(pending(e));
    ub_state_lock();
    ub_event *fe = ub_event_get(f, false);
    assert_non_null(fe);
    ub_redirect_event_gone(fe);
    ub_event_forget(fe);
    ub_state_unlock();
    assert_false(pending(f));
    issue(1);
    assert_int_equal(n_logged, 0); /* neither is recorded behind the block any more */
}

static void test_end_records_on_own_stream(void **state)
{
    (void)state;
    cudaEvent_t e = H(0x5030);
    defer(APP, 0, 1, 1);
    assert_true(record(e, APP));
    ub_state_lock();
    ub_redirect_end(comm, false); /* an abort: the blocks will never run */
    ub_state_unlock();
    assert_logged(0, 'R', e, APP);
    assert_false(pending(e));
}

/* A record behind its block that CUDA refuses is returned with what failed, never an abort();
 * the event stays pending (the communicator's failure then releases it as at an abort), and the
 * events before it in value order were recorded. */
static void test_failed_record_is_returned(void **state)
{
    (void)state;
    cudaEvent_t e1 = H(0x5040), e2 = H(0x5041);
    defer(APP, 0, 1, 1);
    assert_true(record(e1, APP));
    defer(APP, 1, 2, 2);
    assert_true(record(e2, APP));
    failing_record = e2;
    char why[200] = "";
    assert_int_equal(issue_failing(2, why, sizeof why), cudaErrorLaunchFailure);
    failing_record = NULL;
    assert_non_null(strstr(why, "the record of a pending event failed"));
    assert_logged(0, 'R', e1, PRIV);
    assert_false(pending(e1));
    assert_true(pending(e2));
    ub_state_lock();
    ub_redirect_end(comm, false);
    ub_state_unlock();
    assert_logged(1, 'R', e2, APP); /* released on its own stream */
    assert_false(pending(e2));
}

static void test_unexpected_wait_waits_for_submitted(void **state)
{
    (void)state;
    cudaEvent_t e = H(0x5040);
    defer(APP, 0, 1, 1);
    assert_true(record(e, APP));
    assert_int_equal(n_logged, 0);
    ub_state_lock();
    ub_redirect_wait_submitted(e, APP2); /* cudaStreamWaitEvent(APP2, e) */
    ub_state_unlock();
    assert_int_equal(n_logged, 4);
    void *block_done = logged[0].a, *progress = logged[1].a;
    assert_logged(0, 'R', block_done, PRIV);
    assert_logged(1, 'R', progress, APP);
    assert_logged(2, 'W', APP2, block_done);
    assert_logged(3, 'W', APP2, progress);
    assert_true(pending(e));
    ub_state_lock();
    ub_redirect_wait_submitted(e, NULL); /* cudaEventSynchronize(e) */
    ub_state_unlock();
    assert_int_equal(n_logged, 8);
    assert_logged(4, 'R', block_done, PRIV);
    assert_logged(5, 'R', progress, APP); /* the spare progress event, reused */
    assert_logged(6, 'S', block_done, NULL);
    assert_logged(7, 'S', progress, NULL);
    assert_true(pending(e));
    issue(1); /* its block: recorded behind it as ever */
    assert_logged(8, 'R', e, PRIV);
    assert_false(pending(e));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_stream_list, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pending_until_issued_in_value_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_progress_after_other_work, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rerecord_and_destroy_drop_pending, setup, teardown),
        cmocka_unit_test_setup_teardown(test_end_records_on_own_stream, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_record_is_returned, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unexpected_wait_waits_for_submitted, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
