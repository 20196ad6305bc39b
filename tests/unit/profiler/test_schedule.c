/* Schedule mode's pure rules (usbyte/schedule.h): which blocks an arrival issues (the plan
 * cursor), the completion counter values in stream and call semantics, the flush rule, and the
 * plans the cursor must refuse. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>

#include <cmocka.h>

#include "usbyte/schedule.h"

/* A plan from a spec: blocks separated by '|', segments "call:offset:length" separated by ','. */
static void plan_of(ub_plan *p, const char *spec)
{
    ub_plan_init(p, "test");
    ub_plan_begin_block(p);
    const char *s = spec;
    while (*s) {
        if (*s == '|') {
            ub_plan_begin_block(p);
            s++;
            continue;
        }
        if (*s == ',' || *s == ' ') {
            s++;
            continue;
        }
        char *end;
        long call = strtol(s, &end, 10);
        unsigned long long off = strtoull(end + 1, &end, 10), len = strtoull(end + 1, &end, 10);
        ub_plan_add_segment(p, (int32_t)call, off, len);
        s = end;
    }
}

/* Calls 0..3; block 0 = call 1, block 1 = calls 0 and 2 merged, block 2 = first half of 3,
 * block 3 = second half of 3. */
static const char *const SPEC = "1:0:100 | 0:0:50, 2:0:70 | 3:0:512 | 3:512:488";

static void test_cursor(void **state)
{
    (void)state;
    ub_plan p;
    plan_of(&p, SPEC);
    ub_sched s;
    assert_int_equal(ub_sched_build(&p, 4, &s), 0);
    assert_int_equal(s.n_blocks, 4);
    /* block 0 waits for call 1, block 1 for call 2, blocks 2 and 3 for call 3 */
    int expect_issue_at[4] = {1, 2, 3, 3};
    for (int b = 0; b < 4; b++)
        assert_int_equal(s.issue_at[b], expect_issue_at[b]);
    ub_sched_arrival a = ub_sched_arrive(&s, 0, 0, 0);
    assert_int_equal(a.end - a.first, 0); /* call 0 alone issues nothing */
    a = ub_sched_arrive(&s, 0, 0, 1);
    assert_int_equal(a.first, 0);
    assert_int_equal(a.end, 1);
    a = ub_sched_arrive(&s, 0, 1, 2);
    assert_int_equal(a.first, 1);
    assert_int_equal(a.end, 2);
    a = ub_sched_arrive(&s, 0, 2, 3);
    assert_int_equal(a.first, 2);
    assert_int_equal(a.end, 4); /* both halves of call 3 */
    assert_true(s.staged[1]);
    assert_false(s.staged[0] || s.staged[2] || s.staged[3]);
    assert_int_equal(s.staging_bytes, 120);
    /* readiness recorded only where a block's largest call arrives: calls 1, 2, 3 */
    assert_false(s.closes[0]);
    assert_true(s.closes[1] && s.closes[2] && s.closes[3]);
    ub_sched_free(&s);
    ub_plan_free(&p);
}

/* One look at the cursor: the signature checked against the period's position, the position's
 * allreduce, and its arrival only for an expected allreduce. */
static void test_look(void **state)
{
    (void)state;
    ub_plan p;
    plan_of(&p, SPEC);
    ub_sched s;
    assert_int_equal(ub_sched_build(&p, 4, &s), 0);
    /* A period of 5 calls: the allreduces 0..3 with a broadcast between calls 1 and 2. */
    ub_call_sig ar[4], bcast = {.kind = 2, .count = 9, .dtype = 7, .op = -1, .peer = 0};
    uint64_t pos_sig[5];
    int pos_call[5] = {0, 1, -1, 2, 3};
    for (int k = 0, pos = 0; pos < 5; pos++) {
        if (pos_call[pos] < 0) {
            pos_sig[pos] = ub_sig_portable(&bcast);
            continue;
        }
        ar[k] = (ub_call_sig){.kind = 1, .count = 100 + (size_t)k, .dtype = 7, .op = 0, .peer = -1};
        pos_sig[pos] = ub_sig_portable(&ar[k++]);
    }
    ub_sched_look l = ub_sched_look_at(&s, pos_sig, pos_call, 1, &ar[1], 8, 0);
    assert_true(l.expected);
    assert_int_equal(l.call, 1);
    ub_sched_arrival a = ub_sched_arrive(&s, 8, 0, 1);
    assert_int_equal(l.at.first, a.first);
    assert_int_equal(l.at.end, a.end);
    assert_int_equal(l.at.stream_value, a.stream_value);
    assert_int_equal(l.at.call_value, a.call_value);
    assert_int_equal(l.at.end, 1);
    assert_int_equal(l.at.stream_value, 8 + 1 + 1);
    /* the broadcast's position: expected, not an allreduce of the plan, no arrival */
    l = ub_sched_look_at(&s, pos_sig, pos_call, 2, &bcast, 8, 1);
    assert_true(l.expected);
    assert_int_equal(l.call, -1);
    assert_int_equal(l.at.end, 0);
    /* another size than the position's, or the next call's signature one position early */
    ub_call_sig other = ar[2];
    other.count += 1;
    l = ub_sched_look_at(&s, pos_sig, pos_call, 3, &other, 8, 1);
    assert_false(l.expected);
    assert_int_equal(l.at.end, 0);
    l = ub_sched_look_at(&s, pos_sig, pos_call, 3, &ar[3], 8, 1);
    assert_false(l.expected);
    /* another op at the right size is another call too */
    other = ar[3];
    other.op = 1;
    assert_false(ub_sched_look_at(&s, pos_sig, pos_call, 4, &other, 8, 2).expected);
    assert_true(ub_sched_look_at(&s, pos_sig, pos_call, 4, &ar[3], 8, 2).expected);
    ub_sched_free(&s);
    ub_plan_free(&p);
}

/* A block of one call's segments with a gap between them goes through staging too, and sizes the
 * buffer (its two ranges are one allreduce only there); adjacent ones are one range in place. */
static void test_staging_of_one_call(void **state)
{
    (void)state;
    ub_plan p;
    plan_of(&p, "0:0:100 | 1:0:40, 1:80:40 | 1:40:40 | 2:0:30, 2:30:30");
    ub_sched s;
    assert_int_equal(ub_sched_build(&p, 3, &s), 0);
    assert_false(s.staged[0]);
    assert_true(s.staged[1]);
    assert_false(s.staged[2] || s.staged[3]);
    assert_int_equal(s.staging_bytes, 80);
    ub_sched_free(&s);
    ub_plan_free(&p);
}

/* A block that must wait for a later block's call keeps the plan's order: blocks never overtake. */
static void test_cursor_keeps_plan_order(void **state)
{
    (void)state;
    ub_plan p;
    plan_of(&p, "2:0:10 | 0:0:10 | 1:0:10");
    ub_sched s;
    assert_int_equal(ub_sched_build(&p, 3, &s), 0);
    for (int b = 0; b < 3; b++)
        assert_int_equal(s.issue_at[b], 2);
    ub_sched_arrival a = ub_sched_arrive(&s, 0, 0, 1);
    assert_int_equal(a.end - a.first, 0);
    a = ub_sched_arrive(&s, 0, 0, 2);
    assert_int_equal(a.end - a.first, 3);
    ub_sched_free(&s);
    ub_plan_free(&p);
}

static void test_counter_values(void **state)
{
    (void)state;
    ub_plan p;
    plan_of(&p, SPEC);
    ub_sched s;
    assert_int_equal(ub_sched_build(&p, 4, &s), 0);
    uint64_t base = 40; /* ten iterations of four blocks before */
    /* call semantics: the call's own last block */
    assert_int_equal(ub_sched_done_value(&s, base, 0, false), base + 2);
    assert_int_equal(ub_sched_done_value(&s, base, 1, false), base + 1);
    assert_int_equal(ub_sched_done_value(&s, base, 2, false), base + 2);
    assert_int_equal(ub_sched_done_value(&s, base, 3, false), base + 4);
    /* stream semantics: calls 0..k, so never below an earlier call's value */
    assert_int_equal(ub_sched_done_value(&s, base, 0, true), base + 2);
    assert_int_equal(ub_sched_done_value(&s, base, 1, true), base + 2);
    assert_int_equal(ub_sched_done_value(&s, base, 2, true), base + 2);
    assert_int_equal(ub_sched_done_value(&s, base, 3, true), base + 4);
    /* an arrival carries both */
    for (int k = 0; k < 4; k++) {
        ub_sched_arrival a = ub_sched_arrive(&s, base, 0, k);
        assert_int_equal(a.stream_value, ub_sched_done_value(&s, base, k, true));
        assert_int_equal(a.call_value, ub_sched_done_value(&s, base, k, false));
    }
    ub_sched_free(&s);
    ub_plan_free(&p);
}

static void test_flush_segments(void **state)
{
    (void)state;
    ub_plan p;
    plan_of(&p, SPEC);
    bool keep[2];
    /* after calls 0 and 1 arrived, block 1 keeps call 0's segment only */
    assert_int_equal(ub_sched_flush_segments(&p, 1, 2, keep), 1);
    assert_true(keep[0]);
    assert_false(keep[1]);
    /* nothing of call 3 arrived: its blocks issue nothing (they only write their counter) */
    assert_int_equal(ub_sched_flush_segments(&p, 2, 3, keep), 0);
    assert_int_equal(ub_sched_flush_segments(&p, 1, 3, keep), 2);
    ub_plan_free(&p);
}

static void test_refuses_bad_plans(void **state)
{
    (void)state;
    ub_plan p;
    ub_sched s;
    plan_of(&p, "0:0:10 | 2:0:10");  /* call 1 has no segment */
    assert_int_equal(ub_sched_build(&p, 3, &s), -1);
    ub_plan_free(&p);
    plan_of(&p, "0:0:10 | 3:0:10");  /* a call the iteration does not have */
    assert_int_equal(ub_sched_build(&p, 3, &s), -1);
    ub_plan_free(&p);
    ub_plan_init(&p, "empty");
    assert_int_equal(ub_sched_build(&p, 1, &s), -1);
    ub_plan_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cursor),
        cmocka_unit_test(test_look),
        cmocka_unit_test(test_staging_of_one_call),
        cmocka_unit_test(test_cursor_keeps_plan_order),
        cmocka_unit_test(test_counter_values),
        cmocka_unit_test(test_flush_segments),
        cmocka_unit_test(test_refuses_bad_plans),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
