/* The agreement encoding: headers combined with max reveal any difference between ranks; the
 * data vectors decode to max ready/need, min and mean comm on every rank; the recorder's
 * per-rank summary. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>
#include <stdlib.h>

/* cmocka has no double comparison with a tolerance in this version. */
#define assert_double_equal(a, b, eps) assert_true(fabs((double)(a) - (double)(b)) <= (eps))

#include "usbyte/config.h"
#include "usbyte/config_agree.h"
#include "usbyte/record.h"

/* What an allreduce(max) / (sum) of n doubles over `ranks` vectors computes. */
static void combine(double *const *v, int ranks, int n, bool sum, double *out)
{
    for (int i = 0; i < n; i++) {
        out[i] = v[0][i];
        for (int r = 1; r < ranks; r++)
            out[i] = sum ? out[i] + v[r][i] : fmax(out[i], v[r][i]);
    }
}

static void test_header_unanimous_only_when_equal(void **state)
{
    (void)state;
    double a[UB_AGREE_HEADER_LEN], b[UB_AGREE_HEADER_LEN], out[UB_AGREE_HEADER_LEN];
    double *v[2] = {a, b};
    ub_agree_settings base = {.policy = 2, .completion = 0, .staging_mb = 256, .align = 512};
    ub_agree_header_encode(5, 6, 0x0123456789abcdefull, &base, a);
    ub_agree_header_encode(5, 6, 0x0123456789abcdefull, &base, b);
    combine(v, 2, UB_AGREE_HEADER_LEN, false, out);
    assert_true(ub_agree_header_unanimous(out));
    /* any one field different, in either direction, on either rank: the sequence's, then each
     * setting of the list */
    struct { int n; uint32_t p; uint64_t h; ub_agree_settings set; } other[8 + UB_AGREE_SETTING_COUNT] = {
        {4, 6, 0x0123456789abcdefull, base}, {6, 6, 0x0123456789abcdefull, base}, {5, 7, 0x0123456789abcdefull, base},
        {5, 6, 0x0123456789abcdeeull, base}, {5, 6, 0x8123456789abcdefull, base}, {0, 6, 0x0123456789abcdefull, base},
        {5, 6, 0x0123456789abcdecull, base}, {5, 6, 0x0023456789abcdefull, base},
    };
    int n_other = 8;
#define X(field, var)                                                                                                  \
    other[n_other] = (__typeof__(other[0])){5, 6, 0x0123456789abcdefull, base};                                        \
    other[n_other++].set.field += 1;
    UB_AGREE_SETTING_LIST(X)
#undef X
    for (int i = 0; i < n_other; i++) {
        ub_agree_header_encode(other[i].n, other[i].p, other[i].h, &other[i].set, b);
        combine(v, 2, UB_AGREE_HEADER_LEN, false, out);
        assert_false(ub_agree_header_unanimous(out));
        double *w[2] = {b, a};
        combine(w, 2, UB_AGREE_HEADER_LEN, false, out);
        assert_false(ub_agree_header_unanimous(out));
    }
}

/* Every setting of the list, different on one rank, is named in the reason by the variable the
 * configuration knows it as, and the two lists name variables of the configuration. */
static void test_mismatch_names_each_setting(void **state)
{
    (void)state;
    ub_agree_settings base = {.policy = 2, .completion = 0, .staging_mb = 256, .align = 512};
    double a[UB_AGREE_HEADER_LEN], b[UB_AGREE_HEADER_LEN], out[UB_AGREE_HEADER_LEN];
    double *v[2] = {a, b};
    char text[2048];
    ub_agree_header_encode(5, 6, 0x77, &base, a);
#define X(field, var)                                                                                                  \
    {                                                                                                                  \
        assert_string_equal(ub_config_name(UB_CFG_##field), var);                                                      \
        ub_agree_settings one = base;                                                                                  \
        one.field += 1;                                                                                                \
        ub_agree_header_encode(5, 6, 0x77, &one, b);                                                                   \
        combine(v, 2, UB_AGREE_HEADER_LEN, false, out);                                                                \
        ub_agree_mismatch_text(out, text, sizeof text);                                                                \
        if (!strstr(text, var " ("))                                                                                   \
            fail_msg("%s not named in: %s", var, text);                                                                \
    }
    UB_AGREE_SETTING_LIST(X)
#undef X
#define X(field, var) assert_string_equal(ub_config_name(UB_CFG_##field), var);
    UB_CFG_AGREE_LIST(X)
#undef X
}

/* Two ranks' contributions combined as the two agreement collectives would. */
typedef struct agreement {
    double m[2][UB_AGREE_MAX_LEN], q[2][UB_AGREE_SUM_LEN];
    double m_out[UB_AGREE_MAX_LEN], q_out[UB_AGREE_SUM_LEN];
} agreement;

static ub_agree_outcome agree2(agreement *g, const ub_agree_local *l0, const ub_agree_local *l1, ub_agreed *out)
{
    ub_agree_encode(l0, g->m[0], g->q[0]);
    ub_agree_encode(l1, g->m[1], g->q[1]);
    double *vm[2] = {g->m[0], g->m[1]}, *vq[2] = {g->q[0], g->q[1]};
    combine(vm, 2, UB_AGREE_MAX_LEN, false, g->m_out);
    combine(vq, 2, UB_AGREE_SUM_LEN, true, g->q_out);
    return ub_agree_decode(g->m_out, g->q_out, out);
}

static void test_data_roundtrip_two_ranks(void **state)
{
    (void)state;
    ub_summary_call c0[3] = {{.ready = 0, .need = 0.030, .done = 0.002, .comm_mean = 0.001, .comm_cost = 0.0009},
                             {.ready = 0.010, .need = -1, .done = 0.012, .comm_mean = 0.002, .comm_cost = 0.0019, .barrier = true}};
    ub_summary_call c1[3] = {{.ready = 0, .need = 0.031, .done = 0.0021, .comm_mean = 0.003, .comm_cost = 0.0008, .fallback = true},
                             {.ready = 0.011, .need = -1, .done = 0.0119, .comm_mean = 0.004, .comm_cost = 0.0021, .split = true}};
    /* call 2: rank 0 has no duration sample (comm_cost 0), rank 1 does; then neither */
    c0[2] = (ub_summary_call){.ready = 0.02, .comm_cost = 0};
    c1[2] = (ub_summary_call){.ready = 0.02, .comm_cost = 0.003};
    ub_summary s0 = {.n_calls = 3, .calls = c0, .iteration = 0.050, .iterations_used = 3}, s1 = {.n_calls = 3, .calls = c1, .iteration = 0.052, .iterations_used = 3};
    ub_agree_local l0 = {3, 3, 0xabcdull, {.policy = 6}, &s0, {.other_calls = 1, .copy_beta = 2e-10}},
                   l1 = {3, 3, 0xabcdull, {.policy = 6}, &s1,
                         {.stream_ordered = 3, .cupti_missing = 1, .other_calls = 1, .copy_beta = 3e-10, .p2p = 1}};
    static agreement g;
    ub_agreed a;
    assert_int_equal(agree2(&g, &l0, &l1, &a), UB_AGREE_OK);
    assert_int_equal(a.n_calls, 3);
    assert_double_equal(a.calls[2].comm_cost, 0.003, 0);
    assert_int_equal(a.ranks, 2);
    assert_double_equal(a.calls[0].need, 0.031, 0);
    assert_double_equal(a.calls[0].done, 0.0021, 0);
    assert_double_equal(a.calls[0].comm_cost, 0.0008, 0);
    assert_double_equal(a.calls[0].comm_mean, 0.002, 1e-15);
    assert_true(a.calls[0].fallback);
    assert_false(a.calls[0].barrier);
    assert_double_equal(a.calls[1].ready, 0.011, 0);
    assert_double_equal(a.calls[1].need, -1, 0);
    assert_double_equal(a.calls[1].comm_cost, 0.0019, 0);
    assert_true(a.calls[1].barrier);
    assert_true(a.calls[1].split);
    assert_double_equal(a.iteration, 0.052, 0);
    assert_double_equal(a.flags.stream_ordered, 3, 0);
    assert_double_equal(a.flags.cupti_missing, 1, 0);
    assert_double_equal(a.flags.other_calls, 1, 0);
    assert_double_equal(a.flags.copy_beta, 3e-10, 0);   /* the slower rank's copies */
    assert_double_equal(a.flags.p2p, 1, 0);
    assert_double_equal(a.flags.multi_stream, 0, 0);
    ub_agreed_free(&a);
    c1[2].comm_cost = 0;
    assert_int_equal(agree2(&g, &l0, &l1, &a), UB_AGREE_OK);
    assert_double_equal(a.calls[2].comm_cost, 0, 0);
    ub_agreed_free(&a);
}

/* The first law: what a rank contributes has the same size whatever it measured, so ranks that
 * disagree (other n_calls, no numbers, too many calls) still issue identical collectives, and
 * every rank decodes the same outcome. */
static void test_disagreements_decode_alike_everywhere(void **state)
{
    (void)state;
    ub_summary_call c[3] = {{.ready = 0}, {.ready = 0.01}, {.ready = 0.02}};
    ub_summary s2 = {.n_calls = 2, .calls = c, .iteration = 0.05, .iterations_used = 3}, s3 = {.n_calls = 3, .calls = c, .iteration = 0.05, .iterations_used = 3};
    ub_agree_local two = {2, 3, 0x1234ull, {0}, &s2, {.other_calls = 0}}, three = {3, 4, 0x1234ull, {0}, &s3, {.other_calls = 0}};
    static agreement g;
    ub_agreed a;
    assert_int_equal(agree2(&g, &two, &three, &a), UB_AGREE_MISMATCH);
    ub_agree_local other_hash = two;
    other_hash.seq_hash = 0x1235ull;
    assert_int_equal(agree2(&g, &two, &other_hash, &a), UB_AGREE_MISMATCH);
    ub_agree_local other_policy = two;
    other_policy.settings.policy = 1;
    assert_int_equal(agree2(&g, &two, &other_policy, &a), UB_AGREE_MISMATCH);
    /* a rank without numbers (a local failure) takes part: nobody plans */
    ub_agree_local failed = two;
    failed.summary = NULL;
    assert_int_equal(agree2(&g, &two, &failed, &a), UB_AGREE_RANK_FAILED);
    assert_int_equal(agree2(&g, &failed, &two, &a), UB_AGREE_RANK_FAILED);
    /* nothing to plan, too many calls: the same on every rank, from the call sequence */
    ub_agree_local none = {0, 1, 0x1ull, {0}, NULL, {.other_calls = 0}};
    assert_int_equal(agree2(&g, &none, &none, &a), UB_AGREE_NO_CALLS);
    ub_agree_local many = {UB_AGREE_CAP + 1, UB_AGREE_CAP + 1, 0x2ull, {0}, NULL, {.other_calls = 0}};
    assert_int_equal(agree2(&g, &many, &many, &a), UB_AGREE_TOO_MANY);
    ub_agree_local full = {UB_AGREE_CAP, UB_AGREE_CAP, 0x3ull, {0}, NULL, {.other_calls = 0}};
    ub_summary sf = {.n_calls = UB_AGREE_CAP, .calls = calloc(UB_AGREE_CAP, sizeof(ub_summary_call)), .iteration = 0.1,
                     .iterations_used = 2};
    assert_non_null(sf.calls);
    full.summary = &sf;
    assert_int_equal(agree2(&g, &full, &full, &a), UB_AGREE_OK);
    assert_int_equal(a.n_calls, UB_AGREE_CAP);
    ub_agreed_free(&a);
    free(sf.calls);
    assert_non_null(strstr(ub_agree_outcome_reason(UB_AGREE_MISMATCH), "signature mismatch"));
}

static void test_summary_averages_relative_to_first_ready(void **state)
{
    (void)state;
    ub_record r;
    assert_int_equal(ub_record_init(&r, 2, 3), 0);
    r.n_calls = 2;
    /* iteration 0 starts at 1.0, iteration 1 at 1.1 */
    double base[2] = {1.0, 1.1};
    for (int it = 0; it < 2; it++) {
        ub_rec_call *a = ub_record_at(&r, it, 0), *b = ub_record_at(&r, it, 1);
        *a = (ub_rec_call){.ready = base[it], .start = base[it] + 0.001, .end = base[it] + 0.003, .need = base[it] + 0.05,
                           .upstream = true, .needed = true};
        *b = (ub_rec_call){.ready = base[it] + 0.010 + 0.002 * it, .start = base[it] + 0.011, .end = base[it] + 0.012 + 0.001 * it,
                           .need = NAN, .upstream = it == 0, .barrier = true};
    }
    r.end_ready = 1.2; /* the next iteration's first ready ends iteration 1 */
    ub_summary s;
    assert_int_equal(ub_record_summarize(&r, NULL, &s), 0);
    assert_int_equal(s.iterations_used, 2);
    assert_double_equal(s.iteration, 0.1, 1e-12);
    assert_double_equal(s.calls[0].ready, 0, 0);
    assert_double_equal(s.calls[0].need, 0.05, 1e-12);
    assert_double_equal(s.calls[0].comm_mean, 0.002, 1e-12);
    assert_double_equal(s.calls[1].ready, 0.011, 1e-12);
    assert_double_equal(s.calls[1].need, -1, 0);
    /* From its ready time in iteration 0 (1.010 to 1.012), from its start in iteration 1 (its
     * ready event came after its start: 1.111 to 1.113); its durations were 1 and 2 ms. */
    assert_double_equal(s.calls[1].comm_cost, 0.002, 1e-12);
    assert_double_equal(s.calls[1].comm_mean, 0.0015, 1e-12);
    assert_true(s.calls[1].fallback);
    assert_false(s.calls[1].barrier); /* the last call: a wait on it is the ordinary end */
    ub_summary_free(&s);
    ub_record_free(&r);
}

/* The cost sample of a call is its time from where the model starts it (the later of its ready
 * time and the end of the calls before it) to its end, the median over the iterations: a call
 * queued behind another costs what the timeline spends from the other's end, the stream's turn
 * included, and one slow iteration does not move it. */
static void test_summary_cost_starts_where_the_model_starts(void **state)
{
    (void)state;
    ub_record r;
    assert_int_equal(ub_record_init(&r, 3, 2), 0);
    r.n_calls = 2;
    for (int it = 0; it < 3; it++) {
        double t = (double)it;
        ub_rec_call *a = ub_record_at(&r, it, 0), *b = ub_record_at(&r, it, 1);
        *a = (ub_rec_call){.ready = t, .start = t + 0.001, .end = t + 0.010, .need = NAN, .upstream = true};
        /* b is ready at 2 ms, long before a ends; it starts 0.5 ms after a's end and lasts 2 ms
         * (in iteration 2, 7 ms: the slow one). */
        double dur = it == 2 ? 0.007 : 0.002;
        *b = (ub_rec_call){.ready = t + 0.002, .start = t + 0.0105, .end = t + 0.0105 + dur, .need = NAN, .upstream = true};
    }
    r.end_ready = 3.0;
    ub_summary s;
    assert_int_equal(ub_record_summarize(&r, NULL, &s), 0);
    assert_double_equal(s.calls[0].comm_cost, 0.010, 1e-12);  /* from its ready time */
    assert_double_equal(s.calls[1].comm_cost, 0.0025, 1e-12); /* from a's end, the median */
    assert_double_equal(s.calls[1].comm_mean, 0.011 / 3, 1e-12);
    ub_summary_free(&s);
    ub_record_free(&r);
}

/* Ranks of 4 calls, 3 warm-up iterations: ready offsets in ms inside each iteration, iterations
 * `iteration_ms` apart; `stall_ms` delays rank 3's call 3 of iteration 1 and everything after. */
static void record_rank(ub_record *r, const double *offset_ms, double iteration_ms, double stall_ms)
{
    assert_int_equal(ub_record_init(r, 3, 4), 0);
    r->n_calls = 4;
    for (int it = 0; it < 3; it++)
        for (int c = 0; c < 4; c++) {
            double late = (it == 1 && c == 3) || it == 2 ? stall_ms : 0;
            double t = 1e-3 * (it * iteration_ms + offset_ms[c] + late);
            *ub_record_at(r, it, c) = (ub_rec_call){.ready = t, .start = t, .end = t + 1e-4, .need = NAN, .upstream = true};
        }
}

/* Where the iteration begins, as every rank decodes it from four ranks' summaries. */
static int agreed_phase(const double *offset_ms, double iteration_ms, double stall_ms, int *voters)
{
    static double m[4][UB_AGREE_MAX_LEN], q[4][UB_AGREE_SUM_LEN], m_out[UB_AGREE_MAX_LEN], q_out[UB_AGREE_SUM_LEN];
    ub_record r[4];
    ub_summary s[4];
    *voters = 0;
    for (int k = 0; k < 4; k++) {
        record_rank(&r[k], offset_ms, iteration_ms, k == 3 ? stall_ms : 0);
        assert_int_equal(ub_record_summarize(&r[k], NULL, &s[k]), 0);
        ub_agree_local l = {4, 4, 0xabcdull, {.policy = 6}, &s[k], {.other_calls = 0}};
        ub_agree_encode(&l, m[k], q[k]);
        *voters += s[k].phase_voters;
    }
    double *vm[4] = {m[0], m[1], m[2], m[3]}, *vq[4] = {q[0], q[1], q[2], q[3]};
    combine(vm, 4, UB_AGREE_MAX_LEN, false, m_out);
    combine(vq, 4, UB_AGREE_SUM_LEN, true, q_out);
    ub_agreed a;
    assert_int_equal(ub_agree_decode(m_out, q_out, &a), UB_AGREE_OK);
    int phase = a.phase;
    ub_agreed_free(&a);
    for (int k = 0; k < 4; k++) {
        ub_summary_free(&s[k]);
        ub_record_free(&r[k]);
    }
    return phase;
}

static void test_phase_is_voted_by_each_iteration(void **state)
{
    (void)state;
    int voters;
    /* Locked mid-backward: calls 2 and 3 are the next backward's first, after the forward pass. */
    assert_int_equal(agreed_phase((double[]){0, 1, 9, 10}, 11, 0, &voters), 2);
    assert_int_equal(voters, 8);   /* two iterations of each rank have their next one's start */
    /* Iterations back to back (no forward pass): no silence stands out, nothing moves. */
    assert_int_equal(agreed_phase((double[]){0, 2, 4, 6}, 9, 0, &voters), 0);
    /* One rank stalls 20 ms inside one iteration: its vote is outvoted by the other seven. */
    assert_int_equal(agreed_phase((double[]){0, 2, 4, 6}, 9, 20, &voters), 0);
    /* An iteration votes once its own timing has settled and the next one's first ready is known
     * (its length); the last one has no end here. */
    ub_record r;
    ub_summary s;
    record_rank(&r, (double[]){0, 1, 9, 10}, 11, 0);
    assert_int_equal(ub_record_summarize(&r, (bool[]){false, true, true}, &s), 0);
    assert_int_equal(s.phase_voters, 1);
    assert_int_equal(s.phase_votes[2], 1);
    ub_summary_free(&s);
    assert_int_equal(ub_record_summarize(&r, NULL, &s), 0);
    assert_int_equal(s.phase_voters, 2);
    assert_int_equal(s.phase_votes[2], 2);
    ub_summary_free(&s);
    ub_record_free(&r);
}

/* The device runs behind the host: an iteration counts only once its end, the next iteration's
 * first ready on the device's timeline, is measured; a length is never zero or negative. */
static void test_iteration_counts_only_with_its_end(void **state)
{
    (void)state;
    for (int warmup = 1; warmup <= 4; warmup++) {
        ub_record r;
        assert_int_equal(ub_record_init(&r, warmup, 2), 0);
        r.n_calls = 2;
        /* Every iteration 50 ms; the last settled iteration is `warmup - 2` (the later ones' first
         * ready not measured yet, as when the agreement is issued while the device lags). */
        for (int it = 0; it < warmup - 1; it++)
            for (int c = 0; c < 2; c++) {
                double t = 0.05 * it + 0.01 * c;
                *ub_record_at(&r, it, c) = (ub_rec_call){.ready = t, .start = t, .end = t + 1e-3, .need = NAN};
            }
        ub_summary s;
        assert_int_equal(ub_record_summarize(&r, NULL, &s), 0);
        assert_int_equal(s.iterations_used, warmup >= 3 ? warmup - 2 : 0);
        assert_double_equal(s.iteration, warmup >= 3 ? 0.05 : 0.0, 1e-12);
        for (int it = 0; it < warmup; it++)
            assert_true(s.used[it] == (it < warmup - 2));
        ub_summary_free(&s);
        /* The next first ready measured: every recorded iteration has its length. */
        for (int c = 0; c < 2; c++) {
            double t = 0.05 * (warmup - 1) + 0.01 * c;
            *ub_record_at(&r, warmup - 1, c) = (ub_rec_call){.ready = t, .start = t, .end = t + 1e-3, .need = NAN};
        }
        r.end_ready = 0.05 * warmup;
        assert_int_equal(ub_record_summarize(&r, NULL, &s), 0);
        assert_int_equal(s.iterations_used, warmup);
        assert_double_equal(s.iteration, 0.05, 1e-12);
        double len[4];
        ub_record_iterations(&r, len);
        for (int it = 0; it < warmup; it++)
            assert_double_equal(len[it], 0.05, 1e-12);
        ub_summary_free(&s);
        /* An end before the start (never on one timeline) is no length. */
        r.end_ready = 0.05 * (warmup - 1) - 0.001;
        assert_int_equal(ub_record_summarize(&r, NULL, &s), 0);
        assert_int_equal(s.iterations_used, warmup - 1);
        assert_true(s.iteration > 0 || warmup == 1);
        ub_summary_free(&s);
        ub_record_free(&r);
    }
}

/* The configuration agreement: the max-combined vector gives each setting's smallest and largest
 * value over the ranks and a rank holding each; a vector no ranks could send is refused. */
static void test_config_agreement_names_values_and_ranks(void **state)
{
    (void)state;
    enum { RANKS = 4 };
    double v[RANKS][UB_CFG_AGREE_LEN], out[UB_CFG_AGREE_LEN];
    for (int r = 0; r < RANKS; r++) {
        int values[UB_CFG_AGREE_COUNT];
        values[UB_CFG_AGREE_mode] = r == 2 ? 0 : 2; /* off on rank 2, schedule elsewhere */
        values[UB_CFG_AGREE_warmup] = 5;
        values[UB_CFG_AGREE_max_deviations] = r == 1 ? 0 : 4; /* 0 on rank 1, 4 elsewhere */
        ub_cfg_agree_encode(values, r, v[r]);
    }
    double *rows[RANKS] = {v[0], v[1], v[2], v[3]};
    combine(rows, RANKS, UB_CFG_AGREE_LEN, false, out);
    ub_cfg_agreed g[UB_CFG_AGREE_COUNT];
    assert_true(ub_cfg_agree_decode(out, g));
    assert_int_equal(g[UB_CFG_AGREE_mode].lo, 0);
    assert_int_equal(g[UB_CFG_AGREE_mode].rank_lo, 2);
    assert_int_equal(g[UB_CFG_AGREE_mode].hi, 2);
    assert_int_equal(g[UB_CFG_AGREE_mode].rank_hi, 3);
    assert_int_equal(g[UB_CFG_AGREE_warmup].lo, 5);
    assert_int_equal(g[UB_CFG_AGREE_warmup].hi, 5);
    assert_string_equal(ub_cfg_agree_var(UB_CFG_AGREE_warmup), "USBYTE_WARMUP");
    assert_int_equal(g[UB_CFG_AGREE_max_deviations].lo, 0);
    assert_int_equal(g[UB_CFG_AGREE_max_deviations].rank_lo, 1);
    assert_int_equal(g[UB_CFG_AGREE_max_deviations].hi, 4);
    assert_int_equal(g[UB_CFG_AGREE_max_deviations].rank_hi, 3);
    assert_string_equal(ub_cfg_agree_var(UB_CFG_AGREE_max_deviations), "USBYTE_MAX_DEVIATIONS");
    /* The largest values a rank may have (a warm-up of 1000, 1000000 deviations) and a large rank
     * stay exact. */
    int big[UB_CFG_AGREE_COUNT] = {1, 1000, 1000000};
    ub_cfg_agree_encode(big, 1 << 20, out);
    assert_true(ub_cfg_agree_decode(out, g));
    assert_int_equal(g[UB_CFG_AGREE_warmup].hi, 1000);
    assert_int_equal(g[UB_CFG_AGREE_warmup].rank_hi, 1 << 20);
    assert_int_equal(g[UB_CFG_AGREE_max_deviations].lo, 1000000);
    assert_int_equal(g[UB_CFG_AGREE_max_deviations].hi, 1000000);
    out[0] = 0.5; /* not value * 2^24 + rank */
    assert_false(ub_cfg_agree_decode(out, g));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header_unanimous_only_when_equal),
        cmocka_unit_test(test_mismatch_names_each_setting),
        cmocka_unit_test(test_data_roundtrip_two_ranks),
        cmocka_unit_test(test_disagreements_decode_alike_everywhere),
        cmocka_unit_test(test_summary_averages_relative_to_first_ready),
        cmocka_unit_test(test_summary_cost_starts_where_the_model_starts),
        cmocka_unit_test(test_phase_is_voted_by_each_iteration),
        cmocka_unit_test(test_iteration_counts_only_with_its_end),
        cmocka_unit_test(test_config_agreement_names_values_and_ranks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
