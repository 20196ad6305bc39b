/* The docs/model.md evaluator, validator and lower bound on cases computed by hand (the arithmetic
 * is in each test's comment).  Numbers are chosen to be exact in binary where it matters, and
 * compared to 1e-9 relative as docs/model.md promises. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "usbyte/model.h"

#define MAXC 128

/* A small in-memory profile: calls with (bytes, ready, need), one net.  The calls are uint8
 * (1-byte elements), so the hand-made cuts below may fall on any byte. */
typedef struct {
    ub_profile p;
    ub_call calls[MAXC];
    double forward[8];
} fixture;

static void setup_profile(fixture *f, int n, const uint64_t *bytes, const double *ready, const int *need,
                          double alpha, double beta, double backward_end, int n_forward, const double *forward)
{
    memset(f, 0, sizeof(*f));
    for (int k = 0; k < n; k++)
        f->calls[k] = (ub_call){.bytes = bytes[k], .ready = ready[k], .need = need ? need[k] : 0,
                                .dtype = UB_DTYPE_UINT8, .op = UB_OP_SUM, .merge = true, .measured_comm = -1};
    for (int s = 0; s < n_forward; s++)
        f->forward[s] = forward[s];
    f->p = (ub_profile){.has_net = true, .alpha = alpha, .beta = beta, .backward_end = backward_end,
                        .n_forward = n_forward, .forward = f->forward, .n_calls = n, .calls = f->calls};
}

static void near(double got, double want)
{
    double tol = 1e-9 * (fabs(want) > 1 ? fabs(want) : 1);
    if (fabs(got - want) > tol)
        fail_msg("got %.15g, want %.15g", got, want);
}

/* Plan builder: one block per call of `order`, whole calls. */
static void whole_blocks(ub_plan *plan, const ub_profile *p, int n, const int *order)
{
    ub_plan_init(plan, "test");
    for (int i = 0; i < n; i++) {
        ub_plan_begin_block(plan);
        ub_plan_add_segment(plan, order[i], 0, p->calls[order[i]].bytes);
    }
}

/* Plan builder for hand-made block structures: `spec` lists segments "call:offset+length",
 * blocks separated by '|', e.g. "0:0+100 | 1:0+150 1:150+50".  plan's blocks are replaced; an
 * empty spec makes one empty block. */
static void set_plan(ub_plan *plan, const char *spec)
{
    ub_plan_clear(plan);
    ub_plan_begin_block(plan);
    for (const char *c = spec; *c;) {
        int call, used;
        unsigned long long offset, length;
        if (*c == ' ') {
            c++;
        } else if (*c == '|') {
            ub_plan_begin_block(plan);
            c++;
        } else if (sscanf(c, "%d:%llu+%llu%n", &call, &offset, &length, &used) == 3) {
            ub_plan_add_segment(plan, call, offset, length);
            c += used;
        } else {
            fail_msg("plan spec \"%s\": cannot read \"%s\"", spec, c);
        }
    }
}

/* Two calls: ready 1 and 2 s, 100 and 200 bytes, alpha 0.5, beta 0.01, B = 2, forward [1].
 * WFBP: block 0 starts max(0, 1) = 1, lasts 0.5 + 1 = 1.5 -> ends 2.5; block 1 starts
 * max(2.5, 2) = 2.5, lasts 0.5 + 2 -> 5.0.  Forward: t = B = 2 -> max(2, 5) = 5 -> +1 = 6. */
static const uint64_t two_bytes[] = {100, 200};
static const double two_ready[] = {1.0, 2.0};
static const double one_fwd[] = {1.0};

static void setup_two_calls(fixture *f) { setup_profile(f, 2, two_bytes, two_ready, NULL, 0.5, 0.01, 2.0, 1, one_fwd); }

static void test_rules_1_to_5_wfbp(void **state)
{
    (void)state;
    fixture f;
    setup_two_calls(&f);
    ub_plan plan;
    whole_blocks(&plan, &f.p, 2, (int[]){0, 1});
    char err[256];
    assert_int_equal(ub_plan_validate(&f.p, &plan, err, sizeof(err)), 0);
    double done[2];
    near(ub_evaluate(&f.p, &plan, done), 6.0);
    near(plan.blocks[0].start, 1.0);
    near(plan.blocks[0].end, 2.5);
    near(plan.blocks[1].start, 2.5);
    near(plan.blocks[1].end, 5.0);
    near(done[0], 2.5);
    near(done[1], 5.0);
    near(plan.iteration, 6.0);
    near(ub_evaluate_const(&f.p, &plan, NULL), 6.0);
    ub_plan_free(&plan);
}

/* The same calls in the other order: block (call 1) starts at its ready 2, ends 4.5; block
 * (call 0) starts max(4.5, 1) = 4.5, ends 6.0; iteration 6 + 1 = 7. */
static void test_link_is_serial_in_plan_order(void **state)
{
    (void)state;
    fixture f;
    setup_two_calls(&f);
    ub_plan plan;
    whole_blocks(&plan, &f.p, 2, (int[]){1, 0});
    near(ub_evaluate(&f.p, &plan, NULL), 7.0);
    near(plan.blocks[0].start, 2.0);
    near(plan.blocks[1].start, 4.5);
    near(plan.blocks[1].end, 6.0);
    ub_plan_free(&plan);
}

/* Staging (rule 2): copy_beta 0.001.  One block with both calls: starts max(0, 1, 2) = 2,
 * M = 300, lasts 0.5 + 3 + 0.3 = 3.8 -> 5.8; iteration 6.8.  A block holding two adjacent
 * segments of ONE call is one range, not staged: call 1 as [0,150)+[150,200) in one block after
 * call 0's block: call 0 ends 2.5, then 2.5 + 0.5 + 2 = 5.0 (no copy term), iteration 6.  Two
 * segments of one call with a gap are staged: [0,50)+[150,200) after [50,150): call 0 ends 2.5,
 * [50,150) 2.5 + 0.5 + 1 = 4.0, then 4.0 + 0.5 + 1 + 0.1 = 5.6, iteration 6.6. */
static void test_staging_cost(void **state)
{
    (void)state;
    fixture f;
    setup_two_calls(&f);
    f.p.copy_beta = 0.001;
    ub_plan plan;
    ub_plan_init(&plan, "merged");
    set_plan(&plan, "0:0+100 1:0+200");
    near(ub_evaluate(&f.p, &plan, NULL), 6.8);
    near(plan.blocks[0].start, 2.0);
    near(plan.blocks[0].end, 5.8);
    near(ub_block_cost(&f.p, 300, 1), 3.8);
    near(ub_block_cost(&f.p, 300, 0), 3.5);

    set_plan(&plan, "0:0+100 | 1:0+150 1:150+50");
    char err[256];
    assert_int_equal(ub_plan_validate(&f.p, &plan, err, sizeof(err)), 0);
    near(ub_evaluate(&f.p, &plan, NULL), 6.0);
    near(plan.blocks[1].end, 5.0);
    set_plan(&plan, "0:0+100 | 1:50+100 | 1:0+50 1:150+50");
    assert_int_equal(ub_plan_validate(&f.p, &plan, err, sizeof(err)), 0);
    near(ub_evaluate(&f.p, &plan, NULL), 6.6);
    assert_true(ub_segments_staged(&plan.segments[plan.blocks[2].first_segment], 2, NULL));
    assert_false(ub_segments_staged(&plan.segments[plan.blocks[2].first_segment], 2, (bool[]){true, false}));
    ub_plan_free(&plan);
}

/* Partial splits (rule 3): call 0 as [0,40) first, call 1 whole, then call 0's [40,100).
 * b0: 1 + 0.5 + 0.4 = 1.9; b1: max(1.9, 2) = 2 -> 4.5; b2: 4.5 + 0.5 + 0.6 = 5.6.
 * Call 0 completes at its LATEST block, 5.6; call 1 at 4.5; iteration max(2, 5.6) + 1 = 6.6. */
static void test_partial_split_completion(void **state)
{
    (void)state;
    fixture f;
    setup_two_calls(&f);
    ub_plan plan;
    ub_plan_init(&plan, "split");
    set_plan(&plan, "0:0+40 | 1:0+200 | 0:40+60");
    char err[256];
    assert_int_equal(ub_plan_validate(&f.p, &plan, err, sizeof(err)), 0);
    double done[2];
    near(ub_evaluate(&f.p, &plan, done), 6.6);
    near(plan.blocks[0].end, 1.9);
    near(plan.blocks[1].start, 2.0);
    near(done[0], 5.6);
    near(done[1], 4.5);
    ub_plan_free(&plan);
}

/* Forward segments (rule 4): call 0 needed by segment 1, call 1 by segment 0; forward [2, 0.5].
 * WFBP: completions 2.5 and 5.0.  t = 2 -> seg 0 waits for call 1: max(2, 5) + 2 = 7 -> seg 1
 * waits for call 0: max(7, 2.5) + 0.5 = 7.5.
 * Call 1 first: call 1 ends 4.5, call 0 ends 6.0 -> max(2, 4.5) + 2 = 6.5 -> max(6.5, 6) + 0.5 = 7.0.
 * With gap 0.25 and call 1 first: t starts at 2.25, the gates are later, so still 7.0. */
static void test_forward_segments_with_needs(void **state)
{
    (void)state;
    fixture f;
    static const double fwd[] = {2.0, 0.5};
    setup_profile(&f, 2, two_bytes, two_ready, (int[]){1, 0}, 0.5, 0.01, 2.0, 2, fwd);
    ub_plan plan;
    whole_blocks(&plan, &f.p, 2, (int[]){0, 1});
    near(ub_evaluate(&f.p, &plan, NULL), 7.5);
    ub_plan_free(&plan);
    whole_blocks(&plan, &f.p, 2, (int[]){1, 0});
    near(ub_evaluate(&f.p, &plan, NULL), 7.0);
    f.p.gap = 0.25;
    near(ub_evaluate(&f.p, &plan, NULL), 7.0);
    ub_plan_free(&plan);
}

/* A forward segment no call needs is not gated; gap delays the start (rule 4's t = B + g).
 * One call of 100 bytes ready at 0, alpha 0.5, beta 0.01 -> ends 1.5.  B = 3, g = 1,
 * forward [0.5, 1, 0.25] with the call needed by segment 2:
 * t = 4 -> seg 0: 4.5 -> seg 1: 5.5 -> seg 2: max(5.5, 1.5) + 0.25 = 5.75. */
static void test_gap_and_ungated_segments(void **state)
{
    (void)state;
    fixture f;
    static const double fwd[] = {0.5, 1.0, 0.25};
    setup_profile(&f, 1, (uint64_t[]){100}, (double[]){0.0}, (int[]){2}, 0.5, 0.01, 3.0, 3, fwd);
    f.p.gap = 1.0;
    ub_plan plan;
    whole_blocks(&plan, &f.p, 1, (int[]){0});
    near(ub_evaluate(&f.p, &plan, NULL), 5.75);
    near(plan.blocks[0].start, 0.0);
    near(plan.blocks[0].end, 1.5);
    ub_plan_free(&plan);
}

/* Lower bound (rule 6): max(B + g + sum(forward), max over s of E_s + forward[s:]).  Two calls
 * ready 1 and 2 s, 100 and 200 bytes, alpha 0.5, beta 0.01.
 * Barrier, forward [1], B = 2: E_0 over ready order: F1 = 1 + 0.5 + 1 = 2.5;
 * F2 = min(one group: 2 + 0.5 + 3 = 5.5, two: max(2.5, 2) + 0.5 + 2 = 5.0) = 5.0, so
 * max(2 + 1, 5 + 1) = 6.0, which WFBP reaches (optimal).
 * Needs {1, 0}, forward [2, 0.5]: E_0 = call 1 alone = 2 + 0.5 + 2 = 4.5 -> 4.5 + 2.5 = 7.0;
 * E_1 = 5.0 -> 5.5; compute 2 + 2.5 = 4.5: bound 7.0, reached by sending call 1 first.
 * With B = 10 the compute term wins: 10 + 2.5 = 12.5.  Every plan is >= the bound. */
static void test_lower_bound(void **state)
{
    (void)state;
    fixture f;
    setup_two_calls(&f);
    near(ub_lower_bound(&f.p), 6.0);
    static const double fwd[] = {2.0, 0.5};
    setup_profile(&f, 2, two_bytes, two_ready, (int[]){1, 0}, 0.5, 0.01, 2.0, 2, fwd);
    near(ub_lower_bound(&f.p), 7.0);
    ub_plan plan;
    whole_blocks(&plan, &f.p, 2, (int[]){1, 0});
    near(ub_evaluate(&f.p, &plan, NULL), 7.0);
    near(plan.lower_bound, 7.0);
    ub_plan_free(&plan);
    whole_blocks(&plan, &f.p, 2, (int[]){0, 1});
    assert_true(ub_evaluate(&f.p, &plan, NULL) >= ub_lower_bound(&f.p));
    f.p.backward_end = 10.0;
    near(ub_lower_bound(&f.p), 12.5);
    ub_plan_free(&plan);
}

/* E_s is a DP over partitions of ready order, not one block: three calls of 100 bytes ready at
 * 0, 1, 2 with alpha 1, beta 0.01 (1 s per call's bytes), B = 0, forward [0].  Alone:
 * 2, then max(2, 1) + 2 = 4, then max(4, 2) + 2 = 6; one block: 2 + 1 + 3 = 6;
 * {0, 1}, {2}: 1 + 3 = 4, then 4 + 2 = 6; {0}, {1, 2}: 2, then max(2, 2) + 1 + 2 = 5.
 * So E = 5, strictly below every other grouping.  The evaluator agrees on that plan. */
static void test_lower_bound_groups(void **state)
{
    (void)state;
    fixture f;
    setup_profile(&f, 3, (uint64_t[]){100, 100, 100}, (double[]){0, 1, 2}, NULL, 1.0, 0.01, 0.0, 1,
                  (double[]){0.0});
    near(ub_lower_bound(&f.p), 5.0);
    ub_plan plan;
    ub_plan_init(&plan, "groups");
    set_plan(&plan, "0:0+100 | 1:0+100 2:0+100");
    near(ub_evaluate(&f.p, &plan, NULL), 5.0);
    /* Readiness order, not arrival order: the same calls listed backwards give the same E. */
    setup_profile(&f, 3, (uint64_t[]){100, 100, 100}, (double[]){2, 1, 0}, NULL, 1.0, 0.01, 0.0, 1,
                  (double[]){0.0});
    near(ub_lower_bound(&f.p), 5.0);
    ub_plan_free(&plan);
}

/* More than 64 calls takes the evaluator's heap path: 100 calls of 1 byte ready at 0, alpha 1,
 * beta 0, B = 0, forward [0]: block k ends at k + 1, so the iteration is 100. */
static void test_many_calls(void **state)
{
    (void)state;
    fixture f;
    uint64_t bytes[100];
    double ready[100];
    int order[100];
    for (int k = 0; k < 100; k++) {
        bytes[k] = 1;
        ready[k] = 0;
        order[k] = k;
    }
    setup_profile(&f, 100, bytes, ready, NULL, 1.0, 0.0, 0.0, 1, (double[]){0.0});
    ub_plan plan;
    whole_blocks(&plan, &f.p, 100, order);
    near(ub_evaluate(&f.p, &plan, NULL), 100.0);
    near(plan.blocks[99].start, 99.0);
    ub_plan_free(&plan);
}

/* ---- validator rejections, each with its message ---- */

static void expect_invalid(const ub_profile *p, const ub_plan *plan, const char *needle)
{
    char err[512] = "";
    assert_int_equal(ub_plan_validate(p, plan, err, sizeof(err)), -1);
    if (!strstr(err, needle))
        fail_msg("message \"%s\" lacks \"%s\"", err, needle);
    assert_null(strchr(err, '\n'));
}

/* Three calls of 100, 200, 300 bytes ready at 0, 1, 2 s (the validator cases). */
static void setup_three_calls(fixture *f)
{
    setup_profile(f, 3, (uint64_t[]){100, 200, 300}, (double[]){0, 1, 2}, NULL, 0.5, 0.01, 2.0, 1, one_fwd);
}

static void test_validator_rejections(void **state)
{
    (void)state;
    fixture f;
    setup_three_calls(&f);
    ub_plan plan;
    ub_plan_init(&plan, "bad");

    /* A call that does not exist. */
    set_plan(&plan, "7:0+10");
    expect_invalid(&f.p, &plan, "blocks[0].segments[0]: call 7 does not exist (the profile has 3 calls)");

    /* A segment past the end of its call, and an empty one. */
    set_plan(&plan, "0:50+60");
    expect_invalid(&f.p, &plan, "blocks[0].segments[0]: [50, +60) is empty or outside call 0's 100 bytes");
    set_plan(&plan, "0:0+100 | 1:10+0");
    expect_invalid(&f.p, &plan, "blocks[1].segments[0]: [10, +0) is empty");

    /* An empty block. */
    set_plan(&plan, "");
    expect_invalid(&f.p, &plan, "blocks[0] is empty");

    /* A block that refers past the segments. */
    set_plan(&plan, "0:0+100");
    plan.blocks[0].n_segments = 5;
    expect_invalid(&f.p, &plan, "blocks[0] refers past the plan's segments");

    /* Bytes covered twice; bytes not covered; a call missing altogether. */
    set_plan(&plan, "0:0+100 | 1:0+200 | 2:0+300 | 1:150+10");
    expect_invalid(&f.p, &plan, "call 1: bytes [150, 200) are covered twice");
    set_plan(&plan, "0:0+100 | 1:0+50 1:60+140 | 2:0+300");
    expect_invalid(&f.p, &plan, "call 1: bytes [50, 60) are not covered");
    set_plan(&plan, "0:0+100 | 1:0+150");
    expect_invalid(&f.p, &plan, "call 1: bytes [150, 200) are not covered");
    set_plan(&plan, "0:0+100 1:0+200");
    expect_invalid(&f.p, &plan, "call 2: bytes [0, 300) are not covered");

    /* Mixed dtype, mixed op. */
    set_plan(&plan, "0:0+100 1:0+200 2:0+300");
    char ok[256];
    assert_int_equal(ub_plan_validate(&f.p, &plan, ok, sizeof(ok)), 0);
    f.calls[2].dtype = UB_DTYPE_INT8;
    expect_invalid(&f.p, &plan, "blocks[0] mixes uint8/sum (call 0) with int8/sum (call 2)");
    f.calls[2].dtype = UB_DTYPE_UINT8;
    f.calls[1].op = UB_OP_MAX;
    expect_invalid(&f.p, &plan, "blocks[0] mixes uint8/sum (call 0) with uint8/max (call 1)");
    f.calls[1].op = UB_OP_SUM;

    /* merge:false on call 1: a block may hold calls 0 and 1, never 1 and 2. */
    f.calls[1].merge = false;
    expect_invalid(&f.p, &plan, "blocks[0] merges calls 0 and 2 across a call marked \"merge\": false");
    set_plan(&plan, "0:0+100 1:0+200 | 2:0+300");
    char err[256];
    assert_int_equal(ub_plan_validate(&f.p, &plan, err, sizeof(err)), 0);
    set_plan(&plan, "0:0+100 | 2:0+300 1:0+200");
    expect_invalid(&f.p, &plan, "blocks[1] merges calls 1 and 2 across");
    ub_plan_free(&plan);
}

/* The runtime's constraints: a cut never splits an element; in a call larger than `align`
 * every cut is also a multiple of align (the call's end excepted); a block holding several
 * calls fits the staging buffer.  Calls 0..2 of 100, 200, 300 bytes. */
static void test_validator_cut_and_staging_rules(void **state)
{
    (void)state;
    fixture f;
    setup_three_calls(&f);
    ub_plan plan;
    ub_plan_init(&plan, "cuts");
    /* float32: offsets and ends on 4 bytes; 150 splits an element, 152 does not. */
    for (int k = 0; k < 3; k++)
        f.calls[k].dtype = UB_DTYPE_FLOAT32;
    set_plan(&plan, "0:0+100 | 1:0+150 | 1:150+50 | 2:0+300");
    expect_invalid(&f.p, &plan, "blocks[1].segments[0]: end 150 of call 1 is not a cut the runtime can issue "
                                "(multiples of 4 bytes: whole float32 elements)");
    set_plan(&plan, "0:0+100 | 1:0+152 | 1:152+48 | 2:0+300");
    char err[256];
    assert_int_equal(ub_plan_validate(&f.p, &plan, err, sizeof(err)), 0);
    assert_int_equal(ub_cut_quantum(&f.p, 1), 4);
    /* align 64: call 1 (200 > 64) cuts on 64, its end (200) stays fine; call 0 (100 > 64)
     * too; a call of at most 64 bytes would only need whole elements. */
    f.p.align = 64;
    expect_invalid(&f.p, &plan, "blocks[1].segments[0]: end 152 of call 1 is not a cut");
    expect_invalid(&f.p, &plan, "on the profile's align");
    set_plan(&plan, "0:0+100 | 1:0+128 | 1:128+72 | 2:64+236 2:0+64");
    assert_int_equal(ub_plan_validate(&f.p, &plan, err, sizeof(err)), 0);
    set_plan(&plan, "0:0+100 | 1:0+128 | 1:128+72 | 2:0+100 | 2:100+200");
    expect_invalid(&f.p, &plan, "blocks[3].segments[0]: end 100 of call 2");
    set_plan(&plan, "0:0+100 | 1:0+128 | 1:128+72 | 2:0+64 | 2:64+236");
    assert_int_equal(ub_plan_validate(&f.p, &plan, err, sizeof(err)), 0);
    /* align 6 with float32: the quantum is lcm(6, 4) = 12. */
    f.p.align = 6;
    assert_int_equal(ub_cut_quantum(&f.p, 1), 12);
    expect_invalid(&f.p, &plan, "end 128 of call 1 is not a cut the runtime can issue (multiples of 12 bytes");
    f.p.align = 1000; /* larger than every call: element boundaries only */
    assert_int_equal(ub_cut_quantum(&f.p, 2), 4);
    assert_int_equal(ub_plan_validate(&f.p, &plan, err, sizeof(err)), 0);
    f.p.align = 0;

    /* staging_max 300: calls 0+1 (300 bytes) may share a block, 1+2 (500) may not; call 2
     * alone (300) and any single call, even above the limit, need no staging. */
    f.p.staging_max = 300;
    set_plan(&plan, "0:0+100 1:0+200 | 2:0+300");
    assert_int_equal(ub_plan_validate(&f.p, &plan, err, sizeof(err)), 0);
    set_plan(&plan, "0:0+100 | 1:0+200 2:0+300");
    expect_invalid(&f.p, &plan, "blocks[1] stages 500 bytes (several calls, or ranges of one call that do not touch), above staging_max 300");

    f.p.staging_max = 200;
    set_plan(&plan, "0:0+100 | 1:0+200 | 2:0+300");
    assert_int_equal(ub_plan_validate(&f.p, &plan, err, sizeof(err)), 0);
    /* two ranges of call 2 that do not touch: staged, 200 bytes; 150 does not hold them */
    set_plan(&plan, "0:0+100 | 1:0+200 | 2:0+100 2:200+100 | 2:100+100");
    assert_int_equal(ub_plan_validate(&f.p, &plan, err, sizeof(err)), 0);
    f.p.staging_max = 150;
    expect_invalid(&f.p, &plan, "blocks[2] stages 200 bytes");
    f.p.staging_max = 200;
    set_plan(&plan, "0:0+100 1:0+200 | 2:0+300");
    expect_invalid(&f.p, &plan, "blocks[0] stages 300 bytes");
    ub_plan_free(&plan);
}

/* Two blocks that share the same segments (only possible in a malformed in-memory plan) must
 * be reported, not overflow the validator's buckets (runs under ASan in make test SAN=...). */
static void test_validator_shared_segments(void **state)
{
    (void)state;
    fixture f;
    setup_two_calls(&f);
    ub_plan plan;
    whole_blocks(&plan, &f.p, 2, (int[]){0, 1});
    for (int i = 0; i < 4; i++) {
        ub_plan_begin_block(&plan);
        plan.blocks[plan.n_blocks - 1].first_segment = 0;
        plan.blocks[plan.n_blocks - 1].n_segments = 2;
    }
    expect_invalid(&f.p, &plan, "covered twice");
    ub_plan_free(&plan);
}

/* Rule 7's profile: two calls ready at 0 and 1 s, blocks of 1 s, backward end at 2, one forward
 * segment of 1; *wfbp: one block per call. */
static void two_calls_of_a_second(fixture *f, ub_plan *wfbp)
{
    const uint64_t bytes[] = {10, 10};
    const double ready[] = {0.0, 1.0}, fwd[] = {1.0};
    setup_profile(f, 2, bytes, ready, NULL, 1.0, 0.0, 2.0, 1, fwd);
    whole_blocks(wfbp, &f->p, 2, (int[]){0, 1});
}

/* Rule 7 by hand: compute at half speed (f = 1) while a block runs. */
static void test_rule_7_interference(void **state)
{
    (void)state;
    fixture f;
    ub_plan plan;
    two_calls_of_a_second(&f, &plan);
    near(ub_evaluate(&f.p, &plan, NULL), 3.0); /* without interference: [0,1] [1,2], forward 2..3 */
    f.p.interference = 1.0;
    /* Call 1: half a second of compute beside block 0 ([0,1]), the other half alone: ready at
     * 1.5, block 1 [1.5, 2.5]; the backward's last second: half beside block 1 (1 s of wall),
     * the rest alone: ends at 3; the forward 3..4. */
    near(ub_evaluate(&f.p, &plan, NULL), 4.0);
    near(plan.blocks[1].start, 1.5);
    near(plan.blocks[1].end, 2.5);
    /* One block of both at 1 (nothing ran before it), [1, 2]: the backward's last second takes
     * 1.5; the forward 2.5..3.5.  The evaluation without the caller's block arrays agrees. */
    set_plan(&plan, "0:0+10 1:0+10");
    near(ub_evaluate(&f.p, &plan, NULL), 3.5);
    near(ub_evaluate_const(&f.p, &plan, NULL), 3.5);
    /* A block the backward's compute reaches only after its end: nothing overlaps. */
    f.p.calls[1].ready = 2.0;
    near(ub_evaluate(&f.p, &plan, NULL), 4.0);
    ub_plan_free(&plan);
}

/* ub_profile_unstretch: the profile measured under its own calls keeps the wfbp timeline
 * exactly, and a plan that overlaps less runs its compute faster. */
static void test_unstretch(void **state)
{
    (void)state;
    fixture f;
    ub_plan wfbp, one;
    two_calls_of_a_second(&f, &wfbp);
    ub_plan_init(&one, "test");
    set_plan(&one, "0:0+10 1:0+10");
    near(ub_evaluate(&f.p, &one, NULL), 3.0);
    assert_int_equal(ub_profile_unstretch(&f.p, 1.0), 0);
    /* Measured: block 0 [0,1] beside call 1's compute, block 1 [1,2] beside the backward's
     * last second: each wall second there was half a second of compute. */
    near(f.p.calls[0].ready, 0.0);
    near(f.p.calls[1].ready, 0.5);
    near(f.p.backward_end, 1.0);
    near(f.p.gap, 0.0);
    near(f.p.forward[0], 1.0);
    near(f.p.interference, 1.0);
    near(ub_evaluate(&f.p, &wfbp, NULL), 3.0);
    near(wfbp.blocks[1].start, 1.0);
    /* One block at 0.5 ([0.5, 1.5]): the backward's last half second takes 1 s, ends at 1.5. */
    near(ub_evaluate(&f.p, &one, NULL), 2.5);
    /* Twice, or out of range: refused, the profile unchanged. */
    assert_int_equal(ub_profile_unstretch(&f.p, 0.5), -1);
    f.p.interference = 0.0;
    assert_int_equal(ub_profile_unstretch(&f.p, 1.5), -1);
    assert_int_equal(ub_profile_unstretch(&f.p, -0.1), -1);
    near(f.p.calls[1].ready, 0.5);
    ub_plan_free(&wfbp);
    ub_plan_free(&one);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rules_1_to_5_wfbp),
        cmocka_unit_test(test_rule_7_interference),
        cmocka_unit_test(test_unstretch),
        cmocka_unit_test(test_link_is_serial_in_plan_order),
        cmocka_unit_test(test_staging_cost),
        cmocka_unit_test(test_partial_split_completion),
        cmocka_unit_test(test_forward_segments_with_needs),
        cmocka_unit_test(test_gap_and_ungated_segments),
        cmocka_unit_test(test_lower_bound),
        cmocka_unit_test(test_lower_bound_groups),
        cmocka_unit_test(test_many_calls),
        cmocka_unit_test(test_validator_rejections),
        cmocka_unit_test(test_validator_shared_segments),
        cmocka_unit_test(test_validator_cut_and_staging_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
