/* The reference policies `ddp` (order/ddp.c) and `horovod` (order/horovod.c) on small profiles
 * whose buckets and fused buffers are derived by hand in the comments; the registry's defaults
 * and the process-wide settings; best is never slower than either.  Every plan is also checked
 * with ub_plan_validate and must hold whole calls only. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../../order/order_internal.h"
#include "usbyte/model.h"
#include "usbyte/policy.h"
#include "usbyte/reference.h"
#include "usbyte/synthetic.h"

#define MAXC 16
#define MIB ((uint64_t)1 << 20)

typedef struct {
    ub_profile p;
    ub_call calls[MAXC];
    double forward[1];
} fixture;

/* A barrier profile of float32/sum calls, all mergeable, ready at `ready` (NULL: all at 0);
 * B = the last ready time, forward [0], so the iteration is the end of the link. */
static void setup(fixture *f, int n, const uint64_t *bytes, const double *ready)
{
    memset(f, 0, sizeof(*f));
    double last = 0.0;
    for (int k = 0; k < n; k++) {
        double r = ready ? ready[k] : 0.0;
        f->calls[k] = (ub_call){.bytes = bytes[k], .ready = r, .dtype = UB_DTYPE_FLOAT32, .op = UB_OP_SUM,
                                .merge = true, .measured_comm = -1};
        if (r > last)
            last = r;
    }
    f->p = (ub_profile){.has_net = true, .alpha = 1.0, .beta = 0.01, .backward_end = last, .n_forward = 1,
                        .forward = f->forward, .n_calls = n, .calls = f->calls};
}

/* The plan as "0,1|2": the calls of each block, blocks separated by '|'; fails unless the plan
 * is valid and every segment is a whole call. */
static void groups(const ub_profile *p, const ub_plan *plan, char *buf, size_t len)
{
    char err[512];
    if (ub_plan_validate(p, plan, err, sizeof(err)) != 0)
        fail_msg("%s: invalid plan: %s", plan->policy, err);
    size_t used = 0;
    buf[0] = '\0';
    for (uint32_t b = 0; b < plan->n_blocks; b++)
        for (uint32_t i = 0; i < plan->blocks[b].n_segments; i++) {
            const ub_segment *s = &plan->segments[plan->blocks[b].first_segment + i];
            if (s->offset != 0 || s->length != p->calls[s->call].bytes)
                fail_msg("%s: block %u holds part of call %d", plan->policy, b, (int)s->call);
            used += (size_t)snprintf(buf + used, len - used, "%s%d", i ? "," : b ? "|" : "", (int)s->call);
        }
}

static void expect_ddp(const ub_profile *p, uint64_t first, uint64_t cap, const char *want)
{
    ub_plan plan;
    ub_plan_init(&plan, "ddp");
    assert_int_equal(ub_ddp_plan(p, first, cap, &plan), 0);
    char got[256];
    groups(p, &plan, got, sizeof(got));
    if (strcmp(got, want) != 0)
        fail_msg("ddp first=%llu cap=%llu: buckets %s, want %s", (unsigned long long)first,
                 (unsigned long long)cap, got, want);
    ub_plan_free(&plan);
}

static void expect_horovod(const ub_profile *p, double cycle, uint64_t threshold, const char *want)
{
    ub_plan plan;
    ub_plan_init(&plan, "horovod");
    assert_int_equal(ub_horovod_plan(p, cycle, threshold, &plan), 0);
    char got[256];
    groups(p, &plan, got, sizeof(got));
    if (strcmp(got, want) != 0)
        fail_msg("horovod cycle=%g threshold=%llu: buffers %s, want %s", cycle, (unsigned long long)threshold, got,
                 want);
    ub_plan_free(&plan);
}

/* One dtype, caps 100 then 250 bytes.  A bucket closes once it holds at least the cap, the
 * check after the tensor is added:
 *   40 -> 40, 80, 120 >= 100: bucket {0,1,2} (120 bytes, above the first cap);
 *   then cap 250: 100, 300 >= 250: {3,4};  12, 20, 320 >= 250: {5,6,7};  8: open at the end {8}.
 * With the caps swapped the first bucket is the large one: 40, 80, 120, 220 < 250, 420 >= 250:
 * {0..4}; then cap 100: 12, 20, 320: {5,6,7}; {8}.  Caps 0: every tensor closes its own bucket. */
static void test_ddp_caps(void **state)
{
    (void)state;
    fixture f;
    const uint64_t bytes[] = {40, 40, 40, 100, 200, 12, 8, 300, 8};
    setup(&f, 9, bytes, NULL);
    expect_ddp(&f.p, 100, 250, "0,1,2|3,4|5,6,7|8");
    expect_ddp(&f.p, 250, 100, "0,1,2,3,4|5,6,7|8");
    expect_ddp(&f.p, 0, 0, "0|1|2|3|4|5|6|7|8");
    /* Reaching the cap exactly closes the bucket: 40 + 60 = 100 >= 100: {0,1}; 100 + 150 = 250:
     * {2,3}; {4}. */
    const uint64_t exact[] = {40, 60, 100, 150, 4};
    fixture g;
    setup(&g, 5, exact, NULL);
    expect_ddp(&g.p, 100, 250, "0,1|2,3|4");
    /* One cap larger than everything: one bucket. */
    expect_ddp(&f.p, 1000, 1000, "0,1,2,3,4,5,6,7,8");
}

/* DDP keeps one open bucket per dtype, each with its own sequence of caps (100, then 250):
 *   0 f32 60 | 1 f16 60 | 2 f32 60: f32 at 120 >= 100, closes {0,2} | 3 f16 60: f16 at 120,
 *   closes {1,3} | 4 f32 200 (f32 now at cap 250: open) | 5 f16 300 >= 250: closes {5} |
 *   6 f32 4: f32 at 204, open at the end: {4,6}.
 * Buckets in closing order: {0,2} {1,3} {5} {4,6}. */
static void test_ddp_dtypes(void **state)
{
    (void)state;
    fixture f;
    const uint64_t bytes[] = {60, 60, 60, 60, 200, 300, 4};
    setup(&f, 7, bytes, NULL);
    f.calls[1].dtype = f.calls[3].dtype = f.calls[5].dtype = UB_DTYPE_FLOAT16;
    expect_ddp(&f.p, 100, 250, "0,2|1,3|5|4,6");
    /* A different op is another class too (DDP: another device). */
    f.calls[1].dtype = f.calls[3].dtype = f.calls[5].dtype = UB_DTYPE_FLOAT32;
    f.calls[1].op = f.calls[3].op = f.calls[5].op = UB_OP_MAX;
    expect_ddp(&f.p, 100, 250, "0,2|1,3|5|4,6");
}

/* A call marked "merge": false closes every open bucket after it is added, in the order of
 * their first call, and each class moves on to the second cap (100, then 250):
 *   0 f16 20 | 1 f32 40 | 2 f32 40, merge:false: close {0} (first call 0), then {1,2} |
 *   3 f16 20 (cap 250) | 4 f32 40 (cap 250): both open at the end, {3} then {4}. */
static void test_ddp_barrier(void **state)
{
    (void)state;
    fixture f;
    const uint64_t bytes[] = {20, 40, 40, 20, 40};
    setup(&f, 5, bytes, NULL);
    f.calls[0].dtype = f.calls[3].dtype = UB_DTYPE_FLOAT16;
    f.calls[2].merge = false;
    expect_ddp(&f.p, 100, 250, "0|1,2|3|4");
    /* One dtype: 40, 80 and the barrier at call 1 closes {0,1}; then 120 < 250: {2,3,4}. */
    const uint64_t same[] = {40, 40, 40, 40, 40};
    setup(&f, 5, same, NULL);
    f.calls[1].merge = false;
    expect_ddp(&f.p, 100, 250, "0,1|2,3,4");
}

/* staging_max 100, caps 1000: a bucket of several calls closes before a call that would take
 * it above the staging buffer; a call alone is never staged:
 *   60 | 60 + 60 = 120 > 100: close {0}, open {1} | + 32 = 92 | + 200 > 100: close {1,2} |
 *   {3} (200 bytes, one call) at the end. */
static void test_ddp_staging(void **state)
{
    (void)state;
    fixture f;
    const uint64_t bytes[] = {60, 60, 32, 200};
    setup(&f, 4, bytes, NULL);
    f.p.staging_max = 100;
    expect_ddp(&f.p, 1000, 1000, "0|1,2|3");
}

/* The timeline of a DDP plan under the model: a bucket of several calls is one staged block.
 * Calls 40, 40, 40, 100, 200 bytes ready at 0, 1, 2, 3, 4; caps 100/250: {0,1,2} {3,4}.
 * alpha 1, beta 0.01, copy_beta 0.005:
 *   {0,1,2}: starts at 2 (its last ready), 1 + 120 * 0.015 = 2.8 -> ends 4.8;
 *   {3,4}: starts at 4.8, 1 + 300 * 0.015 = 5.5 -> ends 10.3 = the iteration (B = 4). */
static void test_ddp_timeline(void **state)
{
    (void)state;
    fixture f;
    const uint64_t bytes[] = {40, 40, 40, 100, 200};
    const double ready[] = {0, 1, 2, 3, 4};
    setup(&f, 5, bytes, ready);
    f.p.copy_beta = 0.005;
    ub_plan plan;
    ub_plan_init(&plan, "ddp");
    assert_int_equal(ub_ddp_plan(&f.p, 100, 250, &plan), 0);
    double t = ub_evaluate(&f.p, &plan, NULL);
    assert_true(fabs(t - 10.3) < 1e-12);
    assert_true(fabs(plan.blocks[0].start - 2.0) < 1e-12 && fabs(plan.blocks[0].end - 4.8) < 1e-12);
    assert_true(fabs(plan.blocks[1].start - 4.8) < 1e-12);
    ub_plan_free(&plan);
}

/* The registry's `ddp` with DDP's defaults, 1 MiB then 25 MiB:
 *   0.5 MiB, 0.75 MiB: 1.25 MiB >= 1 MiB closes {0,1}; 10, 10, 10 MiB: 30 >= 25 closes {2,3,4};
 *   4 MiB open at the end: {5}.
 * With the settings changed to 2 MiB / 15 MiB: 1.25 < 2, + 10 = 11.25 >= 2: {0,1,2}; 10 + 10 =
 * 20 >= 15: {3,4}; {5}.  Then the defaults again. */
static void test_ddp_defaults(void **state)
{
    (void)state;
    fixture f;
    const uint64_t bytes[] = {MIB / 2, 3 * MIB / 4, 10 * MIB, 10 * MIB, 10 * MIB, 4 * MIB};
    setup(&f, 6, bytes, NULL);
    f.p.beta = 1e-9;
    ub_plan plan;
    char got[256];
    ub_plan_init(&plan, "");
    assert_int_equal(ub_policy_run(UB_POLICY_DDP, &f.p, &plan), 0);
    groups(&f.p, &plan, got, sizeof(got));
    assert_string_equal(got, "0,1|2,3,4|5");
    assert_string_equal(plan.policy, "ddp");
    assert_string_equal(plan.params, "first_bucket=1048576 bucket=26214400");
    ub_reference_settings s = ub_reference_get();
    s.ddp_first_bucket = 2 * MIB;
    s.ddp_bucket = 15 * MIB;
    ub_reference_set(&s);
    assert_int_equal(ub_policy_run(UB_POLICY_DDP, &f.p, &plan), 0);
    groups(&f.p, &plan, got, sizeof(got));
    assert_string_equal(got, "0,1,2|3,4|5");
    ub_reference_set(NULL);
    assert_int_equal(ub_policy_run(UB_POLICY_DDP, &f.p, &plan), 0);
    groups(&f.p, &plan, got, sizeof(got));
    assert_string_equal(got, "0,1|2,3,4|5");
    ub_plan_free(&plan);
}

/* Cycles of 1 s, threshold 1000 (nothing is too large).  Ready 0, 0.5, 1.0, 1.2, 2.5, 2.6:
 *   cycle 0 takes {0}; cycle 1 takes what is ready by 1.0: {1,2}; cycle 2: {3};
 *   cycle 3: {4,5}.
 * With cycle 0 (a cycle at every ready time): {0} {1} {2} {3} {4} {5}; with 3 s cycles:
 *   cycle 0: {0}; cycle 3: {1..5}. */
static void test_horovod_cycles(void **state)
{
    (void)state;
    fixture f;
    const uint64_t bytes[] = {100, 100, 100, 100, 100, 100};
    const double ready[] = {0.0, 0.5, 1.0, 1.2, 2.5, 2.6};
    setup(&f, 6, bytes, ready);
    expect_horovod(&f.p, 1.0, 1000, "0|1,2|3|4,5");
    expect_horovod(&f.p, 0.0, 1000, "0|1|2|3|4|5");
    expect_horovod(&f.p, 3.0, 1000, "0|1,2,3,4,5");
    /* Equal ready times share a cycle even with cycle 0. */
    const double pairs[] = {0.0, 0.3, 0.3, 0.7, 0.7, 0.7};
    setup(&f, 6, bytes, pairs);
    expect_horovod(&f.p, 0.0, 1000, "0|1,2|3,4,5");
}

/* The threshold counts every tensor rounded up to 16 bytes (Horovod's batched copies), and a
 * tensor joins only if the buffer stays within it.  All ready at 0, threshold 256:
 *   100 (112) + 100 (112) = 224 <= 256: {0,1}; + 40 (48) = 272 > 256: skipped, and 224 + 48
 *   > 256 ends the look-ahead; then {2}.  Unpadded, 240 would have fitted.
 * Threshold 0 (fusion off): one buffer per tensor.  A tensor above the threshold goes alone. */
static void test_horovod_threshold(void **state)
{
    (void)state;
    fixture f;
    const uint64_t bytes[] = {100, 100, 40};
    setup(&f, 3, bytes, NULL);
    expect_horovod(&f.p, 1e-3, 256, "0,1|2");
    expect_horovod(&f.p, 1e-3, 272, "0,1,2");
    expect_horovod(&f.p, 1e-3, 0, "0|1|2");
    expect_horovod(&f.p, 1e-3, 64, "0|1|2");
}

/* The look-ahead past tensors of another dtype (FuseResponses): all ready at 0, threshold 256,
 *   0 f32 64 | 1 f16 32 | 2 f32 64 | 3 f16 32 | 4 f32 200.
 * Buffer of 0 (64): 1 skipped (skipped 32; 96 <= 256 goes on); 2 joins (128); 3 skipped
 * (skipped 64; 192 <= 256); 4: 328 > 256, skipped 264, 392 > 256 stops: {0,2}.  Next, from 1
 * (32): 3 joins (64); 4: 264 > 256, skipped 200, 264 > 256 stops: {1,3}.  Then {4}. */
static void test_horovod_lookahead(void **state)
{
    (void)state;
    fixture f;
    const uint64_t bytes[] = {64, 32, 64, 32, 200};
    setup(&f, 5, bytes, NULL);
    f.calls[1].dtype = f.calls[3].dtype = UB_DTYPE_FLOAT16;
    expect_horovod(&f.p, 1e-3, 256, "0,2|1,3|4");
    /* A smaller threshold ends the look-ahead at once: 64 + 32 skipped > 80 -> {0}; from 1:
     * 32 + 64 skipped > 80 -> {1}; from 2: 64 + 32 > 80 -> {2}; {3}: 32 + 200 > 80 -> {3}; {4}. */
    expect_horovod(&f.p, 1e-3, 80, "0|1|2|3|4");
}

/* "merge": false: a buffer never extends past such a call, and a call after it is not taken
 * into a cycle before it.  Cycle 1, threshold 1000; call 1 and call 3 are barriers:
 *   ready 0, 0, 0, 1.5, 0.2, 1.7.
 * Cycle 0: calls 0, 1, 2 are ready; 0 and 1 fuse, 2 lies past the barrier at 1: {0,1} {2}.
 * Cycle 1: call 4 is ready but waits behind call 3 (a barrier not yet ready).
 * Cycle 2: 3, 4, 5: 4 lies past the barrier at 3: {3} {4,5}. */
static void test_horovod_barrier(void **state)
{
    (void)state;
    fixture f;
    const uint64_t bytes[] = {100, 100, 100, 100, 100, 100};
    const double ready[] = {0.0, 0.0, 0.0, 1.5, 0.2, 1.7};
    setup(&f, 6, bytes, ready);
    f.calls[1].merge = f.calls[3].merge = false;
    expect_horovod(&f.p, 1.0, 1000, "0,1|2|3|4,5");
}

/* staging_max 150, threshold 1000, all ready at 0: 100 | 100 would stage 200 > 150, so it is
 * skipped (as a tensor over the threshold is) | 32 joins (132): {0,2}; then {1}. */
static void test_horovod_staging(void **state)
{
    (void)state;
    fixture f;
    const uint64_t bytes[] = {100, 100, 32};
    setup(&f, 3, bytes, NULL);
    f.p.staging_max = 150;
    expect_horovod(&f.p, 1e-3, 1000, "0,2|1");
}

/* The registry's `horovod` with Horovod's defaults (1 ms, 128 MiB): ready 0, 0.4 ms, 0.9 ms,
 * 1.5 ms, 2.5 ms:  cycle 0 {0}; cycle 1 ms {1,2}; cycle 2 ms {3}; cycle 3 ms {4}.  64 MiB each:
 * {1,2} is 128 MiB, exactly the threshold (it fits).  With the threshold at 100 MiB: {1} {2}. */
static void test_horovod_defaults(void **state)
{
    (void)state;
    fixture f;
    const uint64_t bytes[] = {64 * MIB, 64 * MIB, 64 * MIB, 64 * MIB, 64 * MIB};
    const double ready[] = {0.0, 0.4e-3, 0.9e-3, 1.5e-3, 2.5e-3};
    setup(&f, 5, bytes, ready);
    f.p.beta = 1e-9;
    ub_plan plan;
    char got[256];
    ub_plan_init(&plan, "");
    assert_int_equal(ub_policy_run(UB_POLICY_HOROVOD, &f.p, &plan), 0);
    groups(&f.p, &plan, got, sizeof(got));
    assert_string_equal(got, "0|1,2|3|4");
    assert_string_equal(plan.params, "cycle=0.001 threshold=134217728");
    ub_reference_settings s = ub_reference_get();
    s.horovod_threshold = 100 * MIB;
    ub_reference_set(&s);
    assert_int_equal(ub_policy_run(UB_POLICY_HOROVOD, &f.p, &plan), 0);
    groups(&f.p, &plan, got, sizeof(got));
    assert_string_equal(got, "0|1|2|3|4");
    ub_reference_set(NULL);
    ub_plan_free(&plan);
}

static void test_bad_input(void **state)
{
    (void)state;
    fixture f;
    const uint64_t bytes[] = {100};
    setup(&f, 1, bytes, NULL);
    ub_plan plan;
    ub_plan_init(&plan, "");
    assert_int_equal(ub_horovod_plan(&f.p, -1.0, 100, &plan), -1);
    assert_int_equal(ub_horovod_plan(&f.p, NAN, 100, &plan), -1);
    f.p.n_calls = 0;
    assert_int_equal(ub_horovod_plan(&f.p, 1e-3, 100, &plan), -1);
    assert_int_equal(ub_ddp_plan(&f.p, 1, 1, &plan), -1);
    ub_plan_free(&plan);
}

/* `best` is floored by both references (they are not search starts), so it is never slower
 * than either, through ub_plan_every as the runtime plans and through ub_policy_run; on seeded
 * random profiles (barrier and layer-wise, barriers, mixed dtypes, staging cost) with
 * caps small enough that the references really merge. */
static void test_best_not_worse(void **state)
{
    (void)state;
    ub_reference_settings s = {.ddp_first_bucket = 1 << 16, .ddp_bucket = 1 << 20, .horovod_cycle = 2e-3,
                               .horovod_threshold = 4 << 20};
    ub_reference_set(&s);
    for (int i = 0; i < 24; i++) {
        ub_synthetic_opts o = {.n_calls = 5 + 7 * (i % 6), .seed = 4242 + (uint64_t)i, .barrier = i % 2 == 0,
                               .merge_false_fraction = i % 3 == 0 ? 0.15 : 0.0, .mixed_dtypes = i % 4 == 1,
                               .copy_beta = i % 5 == 2 ? 1e-10 : 0.0};
        ub_profile p;
        assert_int_equal(ub_synthetic_profile(&o, &p), 0);
        ub_plan plans[UB_POLICY_COUNT];
        for (int id = 0; id < UB_POLICY_COUNT; id++)
            ub_plan_init(&plans[id], "");
        char err[512];
        if (ub_plan_every(&p, plans, err, sizeof(err)) != 0)
            fail_msg("profile %d: %s", i, err);
        ub_plan alone;
        ub_plan_init(&alone, "");
        assert_int_equal(ub_policy_run(UB_POLICY_BEST, &p, &alone), 0);
        double best = plans[UB_POLICY_BEST].iteration;
        for (int id = UB_POLICY_DDP; id <= UB_POLICY_HOROVOD; id++)
            if (!(best <= plans[id].iteration * (1 + 1e-12)) || !(alone.iteration <= plans[id].iteration * (1 + 1e-12)))
                fail_msg("profile %d: best %.12g (alone %.12g) slower than %s %.12g", i, best, alone.iteration,
                         ub_policy_name(id), plans[id].iteration);
        ub_plan_free(&alone);
        for (int id = 0; id < UB_POLICY_COUNT; id++)
            ub_plan_free(&plans[id]);
        ub_synthetic_free(&p);
    }
    ub_reference_set(NULL);
}

/* The floor: a reference plan strictly faster than the search's result replaces it, keeping the
 * name `best` and saying where it came from; one that is not strictly faster leaves it alone;
 * an empty (failed) reference is ignored. */
static void test_best_floor(void **state)
{
    (void)state;
    fixture f;
    const uint64_t bytes[] = {100, 100};
    setup(&f, 2, bytes, NULL);
    ub_plan out, ref;
    ub_plan_init(&out, "best");
    ub_plan_init(&ref, "ddp");
    assert_int_equal(ub_policy_run(UB_POLICY_WFBP, &f.p, &out), 0); /* 2 blocks: 2 + 2 s */
    memcpy(out.policy, "best", 5);
    snprintf(out.params, sizeof(out.params), "from=wfbp moves=0");
    assert_int_equal(ub_ddp_plan(&f.p, 1000, 1000, &ref), 0); /* 1 block: 1 + 2 s */
    ub_evaluate(&f.p, &ref, NULL);
    assert_true(ref.iteration < out.iteration);
    ub_plan same;
    ub_plan_init(&same, "horovod");
    ub_plan_copy(&same, &out);
    memcpy(same.policy, "horovod", 8);
    ub_best_floor(&same, &out); /* as fast, not faster: kept */
    assert_string_equal(out.params, "from=wfbp moves=0");
    ub_plan empty;
    ub_plan_init(&empty, "horovod");
    empty.iteration = NAN;
    ub_best_floor(&empty, &out);
    assert_int_equal(out.n_blocks, 2);
    ub_best_floor(&ref, &out);
    assert_int_equal(out.n_blocks, 1);
    assert_true(fabs(out.iteration - 3.0) < 1e-12);
    assert_string_equal(out.policy, "best");
    assert_string_equal(out.params, "from=ddp (faster than the search's from=wfbp moves=0)");
    assert_true(ub_policy_is_reference(UB_POLICY_DDP) && ub_policy_is_reference(UB_POLICY_HOROVOD) &&
                ub_policy_is_reference(UB_POLICY_DDP_TUNED));
    assert_false(ub_policy_is_reference(UB_POLICY_MGWFBP_DP) || ub_policy_is_reference(UB_POLICY_BEST));
    ub_plan_free(&out);
    ub_plan_free(&ref);
    ub_plan_free(&same);
    ub_plan_free(&empty);
}

/* The iteration of DDP's buckets at (first, cap), evaluated; the plan in *plan. */
static double ddp_at(const ub_profile *p, uint64_t first, uint64_t cap, ub_plan *plan)
{
    assert_int_equal(ub_ddp_plan(p, first, cap, plan), 0);
    return ub_evaluate_const(p, plan, NULL);
}

/* `ddp-tuned` against brute force: every setting of the sweep (bucket_cap_mb 1..1000 MiB, the
 * first bucket 1 MiB or the cap) planned and evaluated without skipping equal plans; the policy
 * finds the least iteration, is never slower than `ddp`, keeps DDP's defaults on a tie and names
 * in its params a setting whose buckets are its plan.  Seeded profiles whose calls span 256 B to
 * 64 MiB (barrier and layer-wise, mixed dtypes, merge barriers, staging cost). */
static void test_ddp_tuned_sweep(void **state)
{
    (void)state;
    for (int i = 0; i < 6; i++) {
        ub_synthetic_opts o = {.n_calls = 40 + 30 * i, .seed = 77 + (uint64_t)i, .barrier = i % 2 == 0,
                               .merge_false_fraction = i == 3 ? 0.05 : 0.0, .mixed_dtypes = i == 1,
                               .copy_beta = i == 4 ? 2e-11 : 0.0};
        ub_profile p;
        assert_int_equal(ub_synthetic_profile(&o, &p), 0);
        ub_plan plan, tuned;
        ub_plan_init(&plan, "ddp");
        ub_plan_init(&tuned, "ddp-tuned");
        double brute = ddp_at(&p, MIB, 25 * MIB, &plan), dflt = brute;
        for (uint64_t mb = 1; mb <= UB_DDP_TUNED_MAX_MB; mb++) {
            brute = fmin(brute, ddp_at(&p, MIB, mb * MIB, &plan));
            brute = fmin(brute, ddp_at(&p, mb * MIB, mb * MIB, &plan));
        }
        assert_int_equal(ub_policy_run(UB_POLICY_DDP_TUNED, &p, &tuned), 0);
        assert_string_equal(tuned.policy, "ddp-tuned");
        char shape[4096];
        groups(&p, &tuned, shape, sizeof shape); /* valid, whole calls */
        if (tuned.iteration != brute)
            fail_msg("profile %d: ddp-tuned %.12g, the best setting %.12g", i, tuned.iteration, brute);
        assert_true(tuned.iteration <= dflt);
        double cap_mb = 0, first_mb = 0;
        assert_int_equal(sscanf(tuned.params, "bucket_cap_mb=%lf first_bucket_mb=%lf", &cap_mb, &first_mb), 2);
        assert_true(first_mb == 1 || first_mb == cap_mb);
        double named = ddp_at(&p, (uint64_t)(first_mb * MIB), (uint64_t)(cap_mb * MIB), &plan);
        assert_true(ub_plan_same_blocks(&plan, &tuned));
        assert_true(named == tuned.iteration);
        if (tuned.iteration == dflt)
            assert_non_null(strstr(tuned.params, "bucket_cap_mb=25 first_bucket_mb=1 "));
        ub_plan_free(&plan);
        ub_plan_free(&tuned);
        ub_synthetic_free(&p);
    }
}

/* A single call: every setting gives the same one-bucket plan, so DDP's defaults are kept and a
 * single plan is evaluated.  Two calls of 30 MiB, both ready at 0, alpha 1 s, beta 0: DDP's
 * defaults put each in its own bucket (the first closes at 1 MiB) and take 2 s; one bucket takes
 * 1 s.  A first bucket of 1 MiB always closes after the first call, and a first bucket equal to
 * a cap of 30 MiB or less too; the sweep (caps ascending, the 1 MiB first bucket before the
 * cap's) first merges them at bucket_cap_mb=31 with the first bucket equal to the cap. */
static void test_ddp_tuned_hand(void **state)
{
    (void)state;
    fixture f;
    const uint64_t one[] = {5 * MIB};
    setup(&f, 1, one, NULL);
    f.p.beta = 0.0;
    ub_plan plan;
    ub_plan_init(&plan, "ddp-tuned");
    assert_int_equal(ub_policy_run(UB_POLICY_DDP_TUNED, &f.p, &plan), 0);
    assert_non_null(strstr(plan.params, "bucket_cap_mb=25 first_bucket_mb=1 "));
    assert_non_null(strstr(plan.params, "1999 settings"));
    assert_non_null(strstr(plan.params, "; 1 distinct plans evaluated"));
    const uint64_t two[] = {30 * MIB, 30 * MIB};
    setup(&f, 2, two, NULL);
    f.p.beta = 0.0;
    assert_int_equal(ub_policy_run(UB_POLICY_DDP, &f.p, &plan), 0);
    assert_true(fabs(plan.iteration - 2.0) < 1e-12);
    assert_int_equal(ub_policy_run(UB_POLICY_DDP_TUNED, &f.p, &plan), 0);
    assert_true(fabs(plan.iteration - 1.0) < 1e-12);
    assert_int_equal(plan.n_blocks, 1);
    if (strncmp(plan.params, "bucket_cap_mb=31 first_bucket_mb=31 ", 36) != 0)
        fail_msg("params %s", plan.params);
    ub_plan_free(&plan);
}

/* `best` with the frameworks' default settings is never slower than `ddp-tuned` (a floor, as
 * the other references), through ub_plan_every and ub_policy_run, on seeded profiles whose
 * calls are large enough that the sweep's caps matter. */
static void test_best_not_worse_than_tuned(void **state)
{
    (void)state;
    ub_reference_set(NULL);
    for (int i = 0; i < 8; i++) {
        ub_synthetic_opts o = {.n_calls = 30 + 25 * i, .seed = 9100 + (uint64_t)i, .barrier = i % 2 == 1,
                               .mixed_dtypes = i == 2, .merge_false_fraction = i == 5 ? 0.05 : 0.0,
                               .comm_bound = i % 4 == 0};
        ub_profile p;
        assert_int_equal(ub_synthetic_profile(&o, &p), 0);
        ub_plan plans[UB_POLICY_COUNT], alone;
        for (int id = 0; id < UB_POLICY_COUNT; id++)
            ub_plan_init(&plans[id], "");
        ub_plan_init(&alone, "");
        char err[512];
        if (ub_plan_every(&p, plans, err, sizeof(err)) != 0)
            fail_msg("profile %d: %s", i, err);
        assert_int_equal(ub_policy_run(UB_POLICY_BEST, &p, &alone), 0);
        double tuned = plans[UB_POLICY_DDP_TUNED].iteration;
        assert_true(tuned <= plans[UB_POLICY_DDP].iteration);
        if (!(plans[UB_POLICY_BEST].iteration <= tuned) || !(alone.iteration <= tuned))
            fail_msg("profile %d: best %.12g (alone %.12g) slower than ddp-tuned %.12g", i,
                     plans[UB_POLICY_BEST].iteration, alone.iteration, tuned);
        for (int id = 0; id < UB_POLICY_COUNT; id++)
            ub_plan_free(&plans[id]);
        ub_plan_free(&alone);
        ub_synthetic_free(&p);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ddp_caps),          cmocka_unit_test(test_ddp_dtypes),
        cmocka_unit_test(test_ddp_barrier),       cmocka_unit_test(test_ddp_staging),
        cmocka_unit_test(test_ddp_timeline),      cmocka_unit_test(test_ddp_defaults),
        cmocka_unit_test(test_horovod_cycles),    cmocka_unit_test(test_horovod_threshold),
        cmocka_unit_test(test_horovod_lookahead), cmocka_unit_test(test_horovod_barrier),
        cmocka_unit_test(test_horovod_staging),   cmocka_unit_test(test_horovod_defaults),
        cmocka_unit_test(test_bad_input),         cmocka_unit_test(test_best_not_worse),
        cmocka_unit_test(test_ddp_tuned_sweep),   cmocka_unit_test(test_ddp_tuned_hand),
        cmocka_unit_test(test_best_not_worse_than_tuned),
        cmocka_unit_test(test_best_floor),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
