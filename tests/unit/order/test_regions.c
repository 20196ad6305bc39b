/* The merge regions' order (docs/model.md, validity): every block holding a segment of a call
 * marked "merge": false must be issuable when that call arrives, i.e. the blocks up to the last
 * one holding a call <= i hold only calls <= i.  The validator rejects a plan that reorders
 * across such a call, naming the block and the call; every policy's plan keeps the rule, on a
 * hand-made profile whose priorities pull later calls ahead of the barrier and on seeded
 * random ones. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "usbyte/model.h"
#include "usbyte/policy.h"
#include "usbyte/schedulers.h"
#include "usbyte/synthetic.h"

#define N 6

typedef struct {
    ub_profile p;
    ub_call calls[N];
    double forward[N];
} fixture;

/* Six calls of 4 MiB, one every millisecond, layer-wise: the later a call arrives, the earlier
 * the next forward needs it (need 5 - k), so forward priority sends the later calls first.  Call
 * 2 is marked "merge": false: its consumer waits for it before call 3 arrives.  Regions: calls
 * 0..2 and 3..5.  The link (alpha 100 us, 1 ns per byte: 4.2 ms a call) is the bottleneck. */
static void setup_fixture(fixture *f)
{
    memset(f, 0, sizeof(*f));
    for (int k = 0; k < N; k++) {
        f->calls[k] = (ub_call){.bytes = 4u << 20, .ready = 1e-3 * k, .need = N - 1 - k, .dtype = UB_DTYPE_FLOAT32,
                                .op = UB_OP_SUM, .merge = true, .measured_comm = -1};
        f->forward[k] = 0.5e-3;
    }
    f->calls[2].merge = false;
    f->p = (ub_profile){.has_net = true, .alpha = 1e-4, .beta = 1e-9, .backward_end = 5e-3, .n_forward = N,
                        .forward = f->forward, .n_calls = N, .calls = f->calls};
}

/* One block per entry of spec: "c" a whole call, "c<" its first half, "c>" its second half. */
static void build(ub_plan *plan, const ub_profile *p, const char *const *spec, int m)
{
    ub_plan_clear(plan);
    for (int i = 0; i < m; i++) {
        int c = spec[i][0] - '0';
        uint64_t half = p->calls[c].bytes / 2;
        ub_plan_begin_block(plan);
        if (spec[i][1] == '<')
            ub_plan_add_segment(plan, c, 0, half);
        else if (spec[i][1] == '>')
            ub_plan_add_segment(plan, c, half, p->calls[c].bytes - half);
        else
            ub_plan_add_segment(plan, c, 0, p->calls[c].bytes);
    }
}

static void expect_error(const ub_profile *p, const ub_plan *plan, const char *want)
{
    char err[512] = "";
    assert_int_equal(ub_plan_validate(p, plan, err, sizeof(err)), -1);
    if (strcmp(err, want) != 0)
        fail_msg("got \"%s\", want \"%s\"", err, want);
}

static void expect_valid(const ub_profile *p, const ub_plan *plan)
{
    char err[512] = "";
    if (ub_plan_validate(p, plan, err, sizeof(err)) != 0)
        fail_msg("valid plan rejected: %s", err);
}

static void test_validator(void **state)
{
    (void)state;
    fixture f;
    setup_fixture(&f);
    ub_plan plan;
    ub_plan_init(&plan, "test");

    /* A call of the second region before the barrier's own region is done. */
    static const char *const across[] = {"3", "0", "1", "2", "4", "5"};
    build(&plan, &f.p, across, N);
    expect_error(&f.p, &plan,
                 "blocks[1] holds call 0 after blocks[0] holds call 3: call 2 is marked \"merge\": false, so the "
                 "blocks up to its last one may hold only calls up to 2 (issuable when it arrives)");

    /* The second half of call 0 after call 4: issuing call 0's last block needs call 4. */
    static const char *const split[] = {"0<", "1", "2", "4", "0>", "3", "5"};
    build(&plan, &f.p, split, 7);
    expect_error(&f.p, &plan,
                 "blocks[4] holds call 0 after blocks[3] holds call 4: call 2 is marked \"merge\": false, so the "
                 "blocks up to its last one may hold only calls up to 2 (issuable when it arrives)");

    /* Any order inside each region is fine, and so is a call cut across blocks of its region. */
    static const char *const inside[] = {"2", "0>", "1", "0<", "5", "3", "4"};
    build(&plan, &f.p, inside, 7);
    expect_valid(&f.p, &plan);

    /* Without the barrier the first order is valid: the rule is about merge:false calls only. */
    f.calls[2].merge = true;
    build(&plan, &f.p, across, N);
    expect_valid(&f.p, &plan);

    /* The barrier on the last call ends no region before anything. */
    f.calls[N - 1].merge = false;
    expect_valid(&f.p, &plan);
    ub_plan_free(&plan);
}

/* Does the plan put any block of a later region before one of an earlier region? */
static bool reorders(const ub_profile *p, const ub_plan *plan)
{
    int region[N], r = 0;
    for (int k = 0; k < p->n_calls; k++) {
        region[k] = r;
        r += !p->calls[k].merge;
    }
    int seen = 0;
    for (uint32_t b = 0; b < plan->n_blocks; b++) {
        int g = region[plan->segments[plan->blocks[b].first_segment].call];
        if (g < seen)
            return true;
        seen = g;
    }
    return false;
}

/* Every policy on the fixture: valid (ub_plan_every validates each), never reordering across
 * the barrier, and best no slower than any other.  Without the barrier the forward priority
 * does pull calls 3..5 ahead of calls 0..2 in bytescheduler's and best's plans: the rule is
 * what keeps them out here. */
static void test_every_policy_keeps_the_regions(void **state)
{
    (void)state;
    fixture f;
    setup_fixture(&f);
    ub_plan plans[UB_POLICY_COUNT];
    for (int id = 0; id < UB_POLICY_COUNT; id++)
        ub_plan_init(&plans[id], ub_policy_name(id));

    f.calls[2].merge = true;
    char err[512] = "";
    assert_int_equal(ub_plan_every(&f.p, plans, err, sizeof(err)), 0);
    int reordered = 0;
    for (int id = 0; id < UB_POLICY_COUNT; id++) {
        f.calls[2].merge = false; /* would this plan be valid with the barrier? */
        reordered += reorders(&f.p, &plans[id]);
        f.calls[2].merge = true;
    }
    assert_true(reordered >= 2);

    f.calls[2].merge = false;
    if (ub_plan_every(&f.p, plans, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    for (int id = 0; id < UB_POLICY_COUNT; id++) {
        assert_true(plans[id].n_blocks > 0);
        assert_false(reorders(&f.p, &plans[id]));
        assert_true(plans[UB_POLICY_BEST].iteration <= plans[id].iteration * (1 + 1e-12));
    }
    for (int id = 0; id < UB_POLICY_COUNT; id++)
        ub_plan_free(&plans[id]);
}

/* ByteScheduler and US-Byte at every point of their grids, not only the one they pick. */
static void test_fixed_parameters_keep_the_regions(void **state)
{
    (void)state;
    fixture f;
    setup_fixture(&f);
    ub_plan plan;
    ub_plan_init(&plan, "fixed");
    char err[512];
    static const uint64_t sizes[] = {64u << 10, 1u << 20, 4u << 20};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        for (int credit = 1; credit <= 8; credit *= 2) {
            assert_true(ub_bytescheduler_plan(&f.p, sizes[i], credit, &plan) > 0);
            if (ub_plan_validate(&f.p, &plan, err, sizeof(err)) != 0)
                fail_msg("bytescheduler partition %llu credit %d: %s", (unsigned long long)sizes[i], credit, err);
        }
        for (int adjust = 0; adjust < 2; adjust++) {
            assert_true(ub_usbyte_plan(&f.p, sizes[i], adjust, &plan) > 0);
            if (ub_plan_validate(&f.p, &plan, err, sizeof(err)) != 0)
                fail_msg("usbyte unit %llu adjust %d: %s", (unsigned long long)sizes[i], adjust, err);
        }
    }
    ub_plan_free(&plan);
}

/* Seeded random profiles, layer-wise and barrier, with many merge:false calls: every policy's
 * plan is valid (ub_plan_every checks each with the validator). */
static void test_random_profiles(void **state)
{
    (void)state;
    ub_plan plans[UB_POLICY_COUNT];
    for (int id = 0; id < UB_POLICY_COUNT; id++)
        ub_plan_init(&plans[id], ub_policy_name(id));
    for (int i = 0; i < 24; i++) {
        ub_synthetic_opts o = {.n_calls = 10 + 7 * i, .seed = 4242 + (uint64_t)i, .barrier = i % 2 == 0,
                               .merge_false_fraction = i % 3 == 0 ? 0.05 : 0.25, .mixed_dtypes = i % 4 == 3,
                               .copy_beta = i % 5 == 1 ? 1e-10 : 0.0};
        ub_profile p;
        assert_int_equal(ub_synthetic_profile(&o, &p), 0);
        char err[512] = "";
        if (ub_plan_every(&p, plans, err, sizeof(err)) != 0)
            fail_msg("profile %d (%d calls): %s", i, o.n_calls, err);
        ub_synthetic_free(&p);
    }
    for (int id = 0; id < UB_POLICY_COUNT; id++)
        ub_plan_free(&plans[id]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_validator),
        cmocka_unit_test(test_every_policy_keeps_the_regions),
        cmocka_unit_test(test_fixed_parameters_keep_the_regions),
        cmocka_unit_test(test_random_profiles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
