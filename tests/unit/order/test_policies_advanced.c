/* bytescheduler, usbyte and best on small cases whose answers are derived by hand below.
 *
 * Units: alpha = 0.5 s, beta = 2^-20 s/byte (1 MiB takes 1 s), copy_beta = 0, so every time
 * in these cases is exact in binary floating point. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "usbyte/model.h"
#include "usbyte/policy.h"
#include "usbyte/schedulers.h"

#define MiB (1024u * 1024u)

typedef struct {
    ub_call calls[8];
    double forward[4];
    ub_profile p;
} fixture;

typedef struct {
    uint64_t bytes;
    double ready;
    int need;
} call_spec;

/* The profile of the n calls `calls` under the units above: backward end B, forward segments
 * `forward` (n_forward of them). */
static void setup_profile(fixture *f, double backward_end, int n_forward, const double *forward, int n,
                          const call_spec *calls)
{
    memset(&f->p, 0, sizeof(f->p));
    f->p.has_net = true;
    f->p.alpha = 0.5;
    f->p.beta = 1.0 / (double)MiB;
    f->p.backward_end = backward_end;
    f->p.n_forward = n_forward;
    f->p.forward = f->forward;
    f->p.n_calls = n;
    f->p.calls = f->calls;
    memcpy(f->forward, forward, sizeof(double) * (size_t)n_forward);
    for (int k = 0; k < n; k++)
        f->calls[k] = (ub_call){.bytes = calls[k].bytes, .ready = calls[k].ready, .need = calls[k].need,
                                .dtype = UB_DTYPE_FLOAT32, .op = UB_OP_SUM, .merge = true, .measured_comm = -1.0};
}

/* One segment per block: call, offset, length. */
typedef struct {
    int call;
    uint64_t offset, length;
} piece;

/* The plan is exactly the n single-segment blocks `want`, in order. */
static void expect_blocks(const ub_plan *plan, uint32_t n, const piece *want)
{
    assert_int_equal(plan->n_blocks, n);
    for (uint32_t b = 0; b < n; b++) {
        assert_int_equal(plan->blocks[b].n_segments, 1);
        const ub_segment *s = &plan->segments[plan->blocks[b].first_segment];
        assert_int_equal(s->call, want[b].call);
        assert_int_equal(s->offset, want[b].offset);
        assert_int_equal(s->length, want[b].length);
    }
}

static void expect_valid(const ub_profile *p, const ub_plan *plan)
{
    char err[256] = "";
    if (ub_plan_validate(p, plan, err, sizeof(err)) != 0)
        fail_msg("invalid plan: %s", err);
}

/* ByteScheduler, partition 4 MiB.  call 0: 8 MiB ready 0 need 1; call 1: 4 MiB ready 1 need 0;
 * B = 2, forward [1, 1].
 * Credit 1 partition: t=0 post 0[0,4M) (0 -> 4.5); at 1 call 1 is queued but the credit is
 * used; at 4.5 the queue holds 0[4M,8M) (need 1) and 1[0,4M) (need 0): 1 goes (4.5 -> 9),
 * then 0's second partition (9 -> 13.5).  Forward: s0 waits for call 1: max(2, 9) + 1 = 10;
 * s1 for call 0: max(10, 13.5) + 1 = 14.5.
 * Credit 2 partitions: both partitions of call 0 are posted at t=0 (4 MiB in flight < 8 MiB),
 * so call 1 goes last (9 -> 13.5): s0 = 14.5, s1 = 15.5. */
static void test_bytescheduler_credit(void **state)
{
    (void)state;
    fixture f;
    setup_profile(&f, 2.0, 2, (double[]){1.0, 1.0}, 2, (call_spec[]){{8 * MiB, 0.0, 1}, {4 * MiB, 1.0, 0}});
    ub_plan plan;
    ub_plan_init(&plan, "bytescheduler");

    assert_true(ub_bytescheduler_plan(&f.p, 4 * MiB, 1, &plan) == 14.5);
    expect_blocks(&plan, 3, (piece[]){{0, 0, 4 * MiB}, {1, 0, 4 * MiB}, {0, 4 * MiB, 4 * MiB}});
    assert_string_equal(plan.params, "partition=4194304 credit=1");

    assert_true(ub_bytescheduler_plan(&f.p, 4 * MiB, 2, &plan) == 15.5);
    expect_blocks(&plan, 3, (piece[]){{0, 0, 4 * MiB}, {0, 4 * MiB, 4 * MiB}, {1, 0, 4 * MiB}});

    /* The policy searches the grid, which contains (4 MiB, 1). */
    assert_int_equal(ub_policy_run(UB_POLICY_BYTESCHEDULER, &f.p, &plan), 0);
    expect_valid(&f.p, &plan);
    assert_true(plan.iteration <= 14.5);
    assert_non_null(strstr(plan.params, "partition="));
    assert_non_null(strstr(plan.params, "credit="));
    ub_plan_free(&plan);
}

/* Equal needs: the later-arriving call (the layer nearer the input) goes first.
 * Barrier; call 0: 2 MiB ready 0; call 1: 1 MiB ready 0.25; call 2: 1 MiB ready 0.5.
 * Partition 1 MiB, credit 1: 0[0,1M) 0 -> 1.5; at 1.5 the queue holds 0's second partition,
 * 1 and 2, all need 0: 2 (1.5 -> 3), 1 (3 -> 4.5), 0[1M,2M) (4.5 -> 6).
 * B = 0.5, forward [1]: T = max(0.5, 6) + 1 = 7. */
static const call_spec layer_order_calls[] = {{2 * MiB, 0.0, 0}, {1 * MiB, 0.25, 0}, {1 * MiB, 0.5, 0}};

static void test_bytescheduler_layer_order(void **state)
{
    (void)state;
    fixture f;
    setup_profile(&f, 0.5, 1, (double[]){1.0}, 3, layer_order_calls);
    ub_plan plan;
    ub_plan_init(&plan, "bytescheduler");
    assert_true(ub_bytescheduler_plan(&f.p, 1 * MiB, 1, &plan) == 7.0);
    expect_blocks(&plan, 4, (piece[]){{0, 0, 1 * MiB}, {2, 0, 1 * MiB}, {1, 0, 1 * MiB}, {0, 1 * MiB, 1 * MiB}});
    ub_plan_free(&plan);
}

/* US-Byte gap filling, unit 1 MiB.  call 0: 8 MiB ready 0 need 1; call 1: 1 MiB ready 3
 * need 0; B = 3, forward [1, 1].
 * Backward phase: the link is idle from 0 until call 1 arrives at 3: the gap (3) exceeds a
 * startup and is shorter than sending all of call 0 (8.5), so it gets ceil((3 - 0.5) / 1) = 3
 * units: 0[0,3M) 0 -> 3.5.  Forward phase, in the order the forward needs them: 1 (3.5 -> 5),
 * then 0's remainder [3M,8M) (5 -> 10.5).  s0 = max(3, 5) + 1 = 6; s1 = max(6, 10.5) + 1 = 11.5.
 * Priority adjustment: sending call 0 whole from 0 would end at 8.5, after call 1 (higher
 * priority) arrives, so the trial raises call 0 above call 1; with no later gap the plan is the
 * same, the time does not drop, and the trial is rejected: 11.5 either way. */
static void test_usbyte_gap_filling(void **state)
{
    (void)state;
    fixture f;
    setup_profile(&f, 3.0, 2, (double[]){1.0, 1.0}, 2, (call_spec[]){{8 * MiB, 0.0, 1}, {1 * MiB, 3.0, 0}});
    ub_plan plan;
    ub_plan_init(&plan, "usbyte");
    for (int adjust = 0; adjust <= 1; adjust++) {
        assert_true(ub_usbyte_plan(&f.p, 1 * MiB, adjust, &plan) == 11.5);
        expect_blocks(&plan, 3, (piece[]){{0, 0, 3 * MiB}, {1, 0, 1 * MiB}, {0, 3 * MiB, 5 * MiB}});
    }
    assert_int_equal(ub_policy_run(UB_POLICY_USBYTE, &f.p, &plan), 0);
    expect_valid(&f.p, &plan);
    assert_true(plan.iteration <= 11.5); /* the unit grid contains 1 MiB */
    assert_non_null(strstr(plan.params, "unit="));
    ub_plan_free(&plan);
}

/* A gap shorter than one startup still gets one unit.  call 0: 8 MiB ready 0 need 1; call 1:
 * 1 MiB ready 0.25 need 0; B = 0.25, forward [1, 1].  0[0,1M) 0 -> 1.5; then 1 (1.5 -> 3) and
 * 0[1M,8M) (3 -> 10.5).  s0 = 4, s1 = max(4, 10.5) + 1 = 11.5. */
static void test_usbyte_short_gap(void **state)
{
    (void)state;
    fixture f;
    setup_profile(&f, 0.25, 2, (double[]){1.0, 1.0}, 2, (call_spec[]){{8 * MiB, 0.0, 1}, {1 * MiB, 0.25, 0}});
    ub_plan plan;
    ub_plan_init(&plan, "usbyte");
    assert_true(ub_usbyte_plan(&f.p, 1 * MiB, false, &plan) == 11.5);
    expect_blocks(&plan, 3, (piece[]){{0, 0, 1 * MiB}, {1, 0, 1 * MiB}, {0, 1 * MiB, 7 * MiB}});
    ub_plan_free(&plan);
}

/* A gap that the previous block's call fills again extends that block.  call 0: 8 MiB ready 0
 * need 0; calls 1 and 2: 1 MiB ready 2 and 5, need 1 (lower priority than call 0).
 * Gap 0..2: ceil((2 - 0.5) / 1) = 2 units, 0[0,2M) 0 -> 2.5.  Gap 2.5..5: call 0 is still the
 * highest priority and its block is the last one: it grows by ceil(2.5 / 1) = 3 units, no new
 * startup: 0[0,5M) 0 -> 5.5.  Forward phase: call 0's remainder continues the same block
 * (0[0,8M) 0 -> 8.5), then call 2 (8.5 -> 10), then call 1 (10 -> 11.5).
 * B = 5, forward [1, 1]: s0 = max(5, 8.5) + 1 = 9.5, s1 = max(9.5, 11.5) + 1 = 12.5. */
static void test_usbyte_extends_block(void **state)
{
    (void)state;
    fixture f;
    setup_profile(&f, 5.0, 2, (double[]){1.0, 1.0}, 3,
                  (call_spec[]){{8 * MiB, 0.0, 0}, {1 * MiB, 2.0, 1}, {1 * MiB, 5.0, 1}});
    ub_plan plan;
    ub_plan_init(&plan, "usbyte");
    assert_true(ub_usbyte_plan(&f.p, 1 * MiB, false, &plan) == 12.5);
    expect_blocks(&plan, 3, (piece[]){{0, 0, 8 * MiB}, {2, 0, 1 * MiB}, {1, 0, 1 * MiB}});
    ub_plan_free(&plan);
}

/* best finds the optimum that needs a cut, a merge and a reorder.  call 0: 4 MiB ready 0
 * need 1; calls 1 and 2: 1 MiB ready 1 need 0; B = 1, forward [4, 0.5].
 * Lower bounds: s0 cannot start before calls 1 and 2 are sent, at best together in one block
 * 1 -> 3.5, so s0 ends >= 7.5.  The link is idle before 1 unless call 0 uses it: at most
 * 0.5 MiB of it fits before 1 (0 -> 1).  Its other 3.5 MiB need a block after the merged one:
 * 3.5 -> 7.5 at the earliest, and s1 = max(7.5, 7.5) + 0.5 = 8.  So T >= 8, and the plan
 * 0[0,0.5M) | 1+2 | 0[0.5M,4M) reaches it.  WFBP needs 12 (s0 waits until 7.5). */
static void test_best_reaches_optimum(void **state)
{
    (void)state;
    fixture f;
    setup_profile(&f, 1.0, 2, (double[]){4.0, 0.5}, 3,
                  (call_spec[]){{4 * MiB, 0.0, 1}, {1 * MiB, 1.0, 0}, {1 * MiB, 1.0, 0}});
    ub_plan plan;
    ub_plan_init(&plan, "");
    assert_int_equal(ub_policy_run(UB_POLICY_WFBP, &f.p, &plan), 0);
    assert_true(plan.iteration == 12.0);
    assert_int_equal(ub_policy_run(UB_POLICY_BEST, &f.p, &plan), 0);
    expect_valid(&f.p, &plan);
    assert_true(fabs(plan.iteration - 8.0) < 1e-12);
    ub_plan_free(&plan);
}

/* best is never worse than any other policy on the hand-made profile of the layer-order test. */
static void test_best_not_worse(void **state)
{
    (void)state;
    fixture f;
    setup_profile(&f, 0.5, 1, (double[]){1.0}, 3, layer_order_calls);
    ub_plan best, other;
    ub_plan_init(&best, "");
    ub_plan_init(&other, "");
    assert_int_equal(ub_policy_run(UB_POLICY_BEST, &f.p, &best), 0);
    expect_valid(&f.p, &best);
    for (int id = 0; id < UB_POLICY_BEST; id++) {
        assert_int_equal(ub_policy_run(id, &f.p, &other), 0);
        assert_true(best.iteration <= other.iteration);
    }
    assert_true(best.iteration >= ub_lower_bound(&f.p));
    ub_plan_free(&best);
    ub_plan_free(&other);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bytescheduler_credit),
        cmocka_unit_test(test_bytescheduler_layer_order),
        cmocka_unit_test(test_usbyte_gap_filling),
        cmocka_unit_test(test_usbyte_short_gap),
        cmocka_unit_test(test_usbyte_extends_block),
        cmocka_unit_test(test_best_reaches_optimum),
        cmocka_unit_test(test_best_not_worse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
