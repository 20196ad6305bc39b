/* Online iteration detector: framework-shaped sequences, edge cases, performance, and a brute-
 * force reference of the definition in usbyte/iteration.h on random seeded sequences. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "usbyte/iteration.h"
#include "usbyte/signature.h"

/* ---- helpers ---- */

static uint64_t rng_state;
static uint64_t rng(void)
{
    rng_state += 0x9e3779b97f4a7c15ull;
    return ub_hash_mix64(rng_state);
}
static uint64_t rng_below(uint64_t n)
{
    return rng() % n;
}

/* A portable signature of an allreduce of `count` floats, or a broadcast from root 0. */
static uint64_t allreduce(uint64_t count)
{
    ub_call_sig c = {.kind = 1, .count = count, .dtype = 7, .op = 0, .peer = -1};
    return ub_sig_portable(&c);
}
static uint64_t broadcast(uint64_t count)
{
    ub_call_sig c = {.kind = 2, .count = count, .dtype = 7, .op = -1, .peer = 0};
    return ub_sig_portable(&c);
}

/* Feeds seq and returns the results (caller frees). */
static ub_iter_result *feed_all(ub_iterdet *d, const uint64_t *seq, size_t n)
{
    ub_iter_result *r = calloc(n ? n : 1, sizeof *r);
    assert_non_null(r);
    for (size_t i = 0; i < n; i++) {
        ub_iter_event e = ub_iterdet_feed(d, seq[i], &r[i]);
        assert_int_equal(e, r[i].event);
    }
    return r;
}

static size_t first_event(const ub_iter_result *r, size_t n, ub_iter_event e)
{
    for (size_t i = 0; i < n; i++)
        if (r[i].event == e)
            return i;
    return SIZE_MAX;
}

static size_t count_event(const ub_iter_result *r, size_t n, ub_iter_event e)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += r[i].event == e;
    return k;
}

/* After index `from`, every call must be in phase with period p and anchor start. */
static void assert_steady(const ub_iter_result *r, size_t n, size_t from, uint32_t p, uint64_t start)
{
    for (size_t i = from; i < n; i++) {
        assert_true(r[i].event == UB_ITER_IN_PHASE || r[i].event == UB_ITER_LOCKED);
        assert_int_equal(r[i].index, i);
        assert_int_equal(r[i].period, p);
        assert_int_equal(r[i].start, start);
        assert_int_equal(r[i].position, (i - start) % p);
        assert_int_equal(r[i].iteration, (i - start) / p);
    }
}

/* ---- the brute-force reference of the definition ---- */

typedef struct {
    ub_iter_event event;
    int deviated;
    uint32_t period;
    uint64_t start;
    uint32_t position;
    uint64_t expected;
} ref_result;

static void reference(const uint64_t *s, size_t n, uint32_t max_period, uint32_t min_span, uint64_t search_limit,
                      ref_result *out)
{
    enum { SEARCH, LOCK, GAVE } state = SEARCH;
    size_t floor = 0, start = 0;
    uint32_t period = 0, old_period = 0;
    uint64_t *old = calloc(max_period, sizeof *old);
    assert_non_null(old);
    for (size_t i = 0; i < n; i++) {
        ref_result r = {0};
        if (state == GAVE) {
            r.event = UB_ITER_GAVE_UP;
            out[i] = r;
            continue;
        }
        if (state == LOCK) {
            if (s[i] == s[i - period]) {
                r.event = UB_ITER_IN_PHASE;
                r.period = period, r.start = start, r.position = (uint32_t)((i - start) % period);
                out[i] = r;
                continue;
            }
            r.deviated = 1;
            r.expected = s[i - period];
            for (size_t j = i - period; j < i; j++)
                old[(j - start) % period] = s[j];
            old_period = period;
            state = SEARCH;
            floor = i;
        }
        size_t cap = 1;
        while (cap < 2ull * max_period)
            cap <<= 1;
        size_t lo = i + 1 > cap ? i + 1 - cap : 0;
        for (uint32_t p = 1; p <= max_period && p <= i; p++) {
            size_t m = 0;
            for (size_t j = i; j >= p + lo && s[j] == s[j - p]; j--)
                m++;
            if (m >= p && m + p >= min_span) {
                state = LOCK;
                period = p;
                start = i + 1 - m - p;
                if (old_period == p) {
                    size_t w0 = i + 1 - p;
                    for (uint32_t o = 0; o < p; o++) {
                        uint32_t k = 0;
                        while (k < p && old[(o + k) % p] == s[w0 + k])
                            k++;
                        if (k == p) {
                            size_t phase = (w0 + p - o) % p;
                            start += (phase + p - start % p) % p;
                            break;
                        }
                    }
                }
                break;
            }
        }
        if (state == LOCK) {
            r.event = UB_ITER_LOCKED;
            r.period = period, r.start = start, r.position = (uint32_t)((i - start) % period);
        } else if (i + 1 - floor >= search_limit) {
            state = GAVE;
            r.event = UB_ITER_GAVE_UP;
        } else {
            r.event = r.deviated ? UB_ITER_DEVIATION : UB_ITER_SEARCHING;
        }
        out[i] = r;
    }
    free(old);
}

/* What the random sequences exercised, so that the comparison cannot pass vacuously. */
static size_t seen_locks, seen_deviations, seen_relock_same_period, seen_gave_up;

static void compare_with_reference(const uint64_t *s, size_t n, const ub_iterdet_config *cfg, uint64_t seed)
{
    ub_iterdet *d = ub_iterdet_new(cfg);
    assert_non_null(d);
    ub_iter_result *got = feed_all(d, s, n);
    ref_result *want = calloc(n, sizeof *want);
    assert_non_null(want);
    reference(s, n, cfg->max_period, cfg->min_span, cfg->search_limit, want);
    for (size_t i = 0; i < n; i++) {
        const ub_iter_result *g = &got[i];
        const ref_result *w = &want[i];
        int same = g->event == w->event && g->deviated == w->deviated && g->index == i;
        if (same && (w->event == UB_ITER_LOCKED || w->event == UB_ITER_IN_PHASE))
            same = g->period == w->period && g->start == w->start && g->position == w->position;
        if (same && w->deviated)
            same = g->expected == w->expected;
        seen_locks += w->event == UB_ITER_LOCKED;
        seen_deviations += w->deviated;
        seen_gave_up += w->event == UB_ITER_GAVE_UP;
        if (w->event == UB_ITER_LOCKED && i > 0 && want[i - 1].deviated == 0 && w->deviated == 0) {
            /* a relock: find the lock that deviated before it */
            for (size_t j = i; j-- > 0;)
                if (want[j].deviated) {
                    size_t k = j;
                    while (k > 0 && want[k].event != UB_ITER_LOCKED)
                        k--;
                    seen_relock_same_period += want[k].event == UB_ITER_LOCKED && want[k].period == w->period;
                    break;
                }
        }
        if (!same)
            fail_msg("seed %llu call %zu of %zu: got event %d dev %d p %u start %llu pos %u, want event %d dev %d "
                     "p %u start %llu pos %u",
                     (unsigned long long)seed, i, n, g->event, g->deviated, g->period, (unsigned long long)g->start,
                     g->position, w->event, w->deviated, w->period, (unsigned long long)w->start, w->position);
    }
    free(want);
    free(got);
    ub_iterdet_free(d);
}

/* ---- tests ---- */

static void test_period_one(void **state)
{
    (void)state;
    uint64_t seq[50];
    for (size_t i = 0; i < 50; i++)
        seq[i] = allreduce(1 << 20);
    ub_iterdet *d = ub_iterdet_new(NULL);
    ub_iter_result *r = feed_all(d, seq, 50);
    assert_int_equal(r[0].event, UB_ITER_SEARCHING);
    assert_int_equal(r[1].event, UB_ITER_LOCKED);
    assert_int_equal(count_event(r, 50, UB_ITER_LOCKED), 1);
    assert_steady(r, 50, 1, 1, 0);
    uint32_t p;
    uint64_t start;
    assert_int_equal(ub_iterdet_locked(d, &p, &start), 1);
    assert_int_equal(p, 1);
    assert_int_equal(start, 0);
    free(r);
    ub_iterdet_free(d);

    /* min_span: the region must cover 16 calls first. */
    ub_iterdet_config cfg = {.min_span = 16};
    d = ub_iterdet_new(&cfg);
    r = feed_all(d, seq, 50);
    assert_int_equal(first_event(r, 50, UB_ITER_LOCKED), 15);
    assert_steady(r, 50, 15, 1, 0);
    free(r);
    ub_iterdet_free(d);
}

/* DDP: a buffer broadcast at each forward, then the buckets; the first iteration's buckets are
 * rebuilt after it (other sizes, another count).  The lock skips it and anchors at iteration 2. */
static void test_ddp_like(void **state)
{
    (void)state;
    uint64_t seq[200];
    size_t n = 0;
    uint64_t first[] = {1000, 2000, 3000, 4000};
    uint64_t rebuilt[] = {4000, 3500, 1500, 2000, 700};
    seq[n++] = broadcast(10);
    for (size_t k = 0; k < 4; k++)
        seq[n++] = allreduce(first[k]);
    size_t second = n;
    while (n + 6 <= 200) {
        seq[n++] = broadcast(10);
        for (size_t k = 0; k < 5; k++)
            seq[n++] = allreduce(rebuilt[k]);
    }
    ub_iterdet *d = ub_iterdet_new(NULL);
    ub_iter_result *r = feed_all(d, seq, n);
    size_t lock = first_event(r, n, UB_ITER_LOCKED);
    assert_int_equal(lock, second + 2 * 6 - 1);
    assert_int_equal(count_event(r, n, UB_ITER_DEVIATION), 0);
    assert_steady(r, n, lock, 6, second);
    /* position 0 is the broadcast of each forward */
    for (size_t i = lock; i < n; i++)
        if (r[i].position == 0)
            assert_int_equal(seq[i], broadcast(10));
    free(r);
    ub_iterdet_free(d);
}

/* The documented limit of anchoring at the region's start: when the rebuilt iteration ends like
 * the first one, the region reaches back into it and the phase is rotated, identically for all. */
static void test_ddp_shared_tail_rotates_phase(void **state)
{
    (void)state;
    uint64_t seq[64];
    size_t n = 0;
    seq[n++] = broadcast(10);
    seq[n++] = allreduce(1), seq[n++] = allreduce(2), seq[n++] = allreduce(3), seq[n++] = allreduce(4);
    while (n + 5 <= 64) {
        seq[n++] = broadcast(10);
        seq[n++] = allreduce(3), seq[n++] = allreduce(2), seq[n++] = allreduce(1), seq[n++] = allreduce(4);
    }
    ub_iterdet *d = ub_iterdet_new(NULL);
    ub_iter_result *r = feed_all(d, seq, n);
    size_t lock = first_event(r, n, UB_ITER_LOCKED);
    assert_int_equal(lock, 13); /* region [4, 13]: allreduce(4) of iteration 1 matches iteration 2's */
    assert_steady(r, n, lock, 5, 4);
    free(r);
    ub_iterdet_free(d);
}

/* Horovod: the first cycles fuse by timing (sizes vary), then the fused buffers are stable. */
static void test_horovod_like(void **state)
{
    (void)state;
    rng_state = 7;
    enum { N = 400 };
    uint64_t seq[N];
    size_t n = 0;
    for (int k = 0; k < 23; k++)
        seq[n++] = allreduce(1000 + rng_below(100000));
    size_t stable = n;
    uint64_t fused[] = {64 << 20, 64 << 20, 31 << 20, 1 << 16};
    while (n < N) {
        seq[n] = allreduce(fused[(n - stable) % 4]);
        n++;
    }
    ub_iterdet_config cfg = {.min_span = 8};
    ub_iterdet *d = ub_iterdet_new(&cfg);
    ub_iter_result *r = feed_all(d, seq, N);
    size_t lock = first_event(r, N, UB_ITER_LOCKED);
    assert_true(lock <= stable + 2 * 4 - 1);
    uint64_t start = r[lock].start;
    assert_true(start <= stable);
    assert_int_equal((stable - start) % 4, 0);
    assert_steady(r, N, lock, 4, start);
    free(r);
    ub_iterdet_free(d);
}

/* A A B A: the smallest true period is 4; the literal definition first locks period 1 on "A A"
 * and deviates, min_span avoids it. */
static void test_internal_repetition(void **state)
{
    (void)state;
    enum { N = 400 };
    uint64_t seq[N];
    const uint64_t pat[] = {allreduce(5), allreduce(5), allreduce(9), allreduce(5)};
    for (size_t i = 0; i < N; i++)
        seq[i] = pat[i % 4];
    ub_iterdet *d = ub_iterdet_new(NULL);
    ub_iter_result *r = feed_all(d, seq, N);
    assert_int_equal(r[1].event, UB_ITER_LOCKED);
    assert_int_equal(r[1].period, 1);
    assert_int_equal(r[2].event, UB_ITER_DEVIATION);
    assert_int_equal(r[2].expected, pat[0]);
    size_t final_lock = 7;
    assert_int_equal(r[final_lock].event, UB_ITER_LOCKED);
    assert_steady(r, N, final_lock, 4, 0);
    free(r);
    ub_iterdet_free(d);

    ub_iterdet_config cfg = {.min_span = 8};
    d = ub_iterdet_new(&cfg);
    r = feed_all(d, seq, N);
    assert_int_equal(first_event(r, N, UB_ITER_LOCKED), 7);
    assert_int_equal(count_event(r, N, UB_ITER_DEVIATION), 0);
    assert_steady(r, N, 7, 4, 0);
    free(r);
    ub_iterdet_free(d);
}

/* A B A B C: period 5 although A B A B alone is a square of period 2. */
static void test_square_inside_period(void **state)
{
    (void)state;
    enum { N = 500 };
    uint64_t seq[N];
    const uint64_t pat[] = {allreduce(1), allreduce(2), allreduce(1), allreduce(2), broadcast(3)};
    for (size_t i = 0; i < N; i++)
        seq[i] = pat[i % 5];
    ub_iterdet *d = ub_iterdet_new(NULL);
    ub_iter_result *r = feed_all(d, seq, N);
    /* the literal definition flickers on the A B A B of each of the first two iterations */
    assert_int_equal(r[3].event, UB_ITER_LOCKED);
    assert_int_equal(r[3].period, 2);
    assert_int_equal(r[4].event, UB_ITER_DEVIATION);
    assert_int_equal(r[8].event, UB_ITER_LOCKED);
    assert_int_equal(r[8].period, 2);
    /* the C of iteration 2 breaks period 2 and completes period 5 on the same call */
    assert_int_equal(r[9].event, UB_ITER_LOCKED);
    assert_int_equal(r[9].deviated, 1);
    assert_int_equal(count_event(r, N, UB_ITER_DEVIATION), 1);
    assert_steady(r, N, 9, 5, 0);
    free(r);
    ub_iterdet_free(d);

    ub_iterdet_config cfg = {.min_span = 10};
    d = ub_iterdet_new(&cfg);
    r = feed_all(d, seq, N);
    assert_int_equal(first_event(r, N, UB_ITER_LOCKED), 9);
    assert_int_equal(count_event(r, N, UB_ITER_DEVIATION), 0);
    assert_steady(r, N, 9, 5, 0);
    free(r);
    ub_iterdet_free(d);
}

/* A square-free sequence over three values never locks, however long. */
static void test_aperiodic_never_locks(void **state)
{
    (void)state;
    enum { N = 20000 };
    uint64_t *seq = malloc(N * sizeof *seq);
    /* Ternary square-free word: the number of 1s between consecutive 0s of Thue-Morse. */
    size_t n = 0, ones = 0;
    for (uint64_t t = 1; n < N; t++) {
        if (__builtin_popcountll(t) & 1)
            ones++;
        else {
            seq[n++] = allreduce(100 + ones);
            ones = 0;
        }
    }
    ub_iterdet_config cfg = {.max_chain = UINT32_MAX};
    ub_iterdet *d = ub_iterdet_new(&cfg);
    ub_iter_result *r = feed_all(d, seq, N);
    assert_int_equal(count_event(r, N, UB_ITER_SEARCHING), N);
    assert_int_equal(ub_iterdet_locked(d, NULL, NULL), 0);
    assert_null(ub_iterdet_gave_up_reason(d));
    free(r);
    ub_iterdet_free(d);
    free(seq);
}

/* No lock within search_limit calls: gives up, then stays given up. */
static void test_gives_up(void **state)
{
    (void)state;
    ub_iterdet_config cfg = {.max_period = 100};
    ub_iterdet *d = ub_iterdet_new(&cfg);
    ub_iter_result r;
    for (uint64_t i = 0; i < 399; i++)
        assert_int_equal(ub_iterdet_feed(d, allreduce(i + 1), &r), UB_ITER_SEARCHING);
    assert_int_equal(ub_iterdet_feed(d, allreduce(400), &r), UB_ITER_GAVE_UP);
    assert_string_equal(ub_iterdet_gave_up_reason(d), "no period within 400 calls");
    for (int i = 0; i < 10; i++)
        assert_int_equal(ub_iterdet_feed(d, allreduce(7), &r), UB_ITER_GAVE_UP);
    assert_int_equal(r.index, 409);
    ub_iterdet_free(d);

    /* A period longer than max_period is never found. */
    cfg.max_period = 10;
    d = ub_iterdet_new(&cfg);
    size_t i = 0;
    while (ub_iterdet_feed(d, allreduce(i % 11), &r) == UB_ITER_SEARCHING)
        i++;
    assert_int_equal(r.event, UB_ITER_GAVE_UP);
    assert_int_equal(i, 39);
    ub_iterdet_free(d);
}

/* A deviation is reported with the value expected; a replaced call keeps the phase afterwards,
 * an extra call too (the boundaries stay at the same call of the iteration). */
static void test_deviation_keeps_phase(void **state)
{
    (void)state;
    enum { P = 7, N = 300 };
    uint64_t pat[P];
    for (size_t k = 0; k < P; k++)
        pat[k] = allreduce(10 * (k + 1));
    for (int extra = 0; extra <= 1; extra++) {
        uint64_t seq[N + 1];
        size_t n = 0, dev = 0;
        for (size_t i = 0; n < N; i++) {
            if (i == 53) { /* position 53 % 7 = 4 */
                dev = n;
                seq[n++] = broadcast(99);
                if (!extra)
                    continue;
            }
            seq[n++] = pat[i % P];
        }
        ub_iterdet *d = ub_iterdet_new(NULL);
        ub_iter_result *r = feed_all(d, seq, N);
        assert_int_equal(first_event(r, N, UB_ITER_LOCKED), 2 * P - 1);
        assert_int_equal(r[dev].event, UB_ITER_DEVIATION);
        assert_int_equal(r[dev].deviated, 1);
        assert_int_equal(r[dev].expected, pat[4]);
        size_t relock = first_event(r + dev, N - dev, UB_ITER_LOCKED) + dev;
        assert_true(relock < dev + 3 * P);
        assert_int_equal(r[relock].period, P);
        /* each later call's position is the index of its value in the pattern */
        for (size_t i = relock; i < N; i++) {
            assert_int_equal(r[i].event == UB_ITER_LOCKED || r[i].event == UB_ITER_IN_PHASE, 1);
            assert_int_equal(seq[i], pat[r[i].position]);
        }
        free(r);
        ub_iterdet_free(d);
    }
}

/* Every rank feeds the same portable sequence, whatever its addresses: same lock, same phase. */
static void test_rank_consistency(void **state)
{
    (void)state;
    enum { RANKS = 4, N = 300 };
    ub_iter_result *res[RANKS];
    for (int rank = 0; rank < RANKS; rank++) {
        ub_iterdet *d = ub_iterdet_new(NULL);
        res[rank] = calloc(N, sizeof **res);
        for (size_t i = 0; i < N; i++) {
            uint64_t k = i < 13 ? i : (i - 13) % 9;
            ub_call_sig c = {.kind = 1, .count = 1000 + k, .dtype = 7, .op = 0, .peer = -1,
                             .stream = 0x1000u * (rank + 1), .sendbuf = 0x7f0000000000u + rank * 4096 + k * 64,
                             .recvbuf = 0x7f1000000000u + rank * 8192 + k * 64};
            ub_iterdet_feed(d, ub_sig_portable(&c), &res[rank][i]);
        }
        ub_iterdet_free(d);
    }
    for (int rank = 1; rank < RANKS; rank++)
        assert_memory_equal(res[0], res[rank], N * sizeof **res);
    assert_int_equal(first_event(res[0], N, UB_ITER_LOCKED), 13 + 2 * 9 - 1);
    for (int rank = 0; rank < RANKS; rank++)
        free(res[rank]);
}

/* Period 500, a first iteration in another order, then 1e6 calls: fast, exact, O(1) after lock. */
static void test_large_period_performance(void **state)
{
    (void)state;
    enum { P = 500, N = 1000000 };
    uint64_t pat[P];
    for (size_t k = 0; k < P; k++)
        pat[k] = allreduce(1000 + ub_hash_mix64(k) % 50); /* only 50 distinct sizes */
    ub_iterdet *d = ub_iterdet_new(NULL);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ub_iter_result r;
    /* With 50 sizes, short squares (x x, x y x y) occur in the pattern: the literal definition
     * locks on them and deviates a call later, until period 500 locks for good. */
    size_t lock = SIZE_MAX, bad = 0;
    for (size_t i = 0; i < N; i++) {
        uint64_t v = i < P ? pat[P - 1 - i] : pat[(i - P) % P];
        ub_iter_event e = ub_iterdet_feed(d, v, &r);
        if (e == UB_ITER_LOCKED && r.period == P && lock == SIZE_MAX)
            lock = i;
        if (lock != SIZE_MAX && e != UB_ITER_LOCKED && e != UB_ITER_IN_PHASE)
            bad++;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double sec = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    printf("period %d, %d calls: %.1f ns/call, locked at call %zu\n", P, N, 1e9 * sec / N, lock);
    assert_true(lock <= 3 * P - 1);
    assert_int_equal(bad, 0);
    uint32_t p;
    uint64_t start;
    assert_int_equal(ub_iterdet_locked(d, &p, &start), 1);
    assert_int_equal(p, P);
    assert_true(start <= P);
    assert_int_equal(r.position, (N - 1 - start) % P);
    /* generous for sanitizers and a loaded 2-core machine; typically tens of ns per call */
    assert_true(sec < 20.0);
    ub_iterdet_free(d);
}

/* Random structured sequences (a prefix, patterns with internal repetition, replaced and inserted
 * calls, a pattern change) against the brute-force reference. */
static void test_random_against_reference(void **state)
{
    (void)state;
    enum { MAXN = 360 };
    uint64_t s[MAXN];
    for (uint64_t seed = 1; seed <= 3000; seed++) {
        rng_state = seed * 1000003;
        size_t n = 0, len = 60 + rng_below(MAXN - 60);
        uint64_t alphabet = 1 + rng_below(6);
        size_t prefix = rng_below(20);
        while (n < prefix && n < len)
            s[n++] = rng_below(alphabet + 3);
        while (n < len) {
            size_t p = 1 + rng_below(rng_below(4) ? 12 : 40);
            uint64_t pat[40];
            for (size_t k = 0; k < p; k++)
                pat[k] = rng_below(alphabet);
            size_t reps = 1 + rng_below(8);
            for (size_t k = 0; k < reps * p && n < len; k++) {
                uint64_t r = rng_below(100);
                if (r == 0)
                    s[n++] = 50 + rng_below(3); /* replaced */
                else {
                    if (r == 1 && n < len - 1)
                        s[n++] = 60; /* inserted */
                    s[n++] = pat[k % p];
                }
            }
        }
        static const uint32_t spans[] = {0, 0, 5, 16};
        static const uint32_t periods[] = {8, 32, 64, 65536};
        ub_iterdet_config cfg = {
            .max_period = periods[rng_below(4)],
            .min_span = spans[rng_below(4)],
            .max_chain = UINT32_MAX,
            .search_limit = rng_below(3) ? 0 : 40 + rng_below(200),
        };
        ub_iterdet_config ref = cfg;
        if (!ref.search_limit)
            ref.search_limit = 4ull * cfg.max_period;
        if (ref.max_period > len)
            ref.max_period = (uint32_t)len;
        ub_iterdet *check = ub_iterdet_new(&cfg);
        assert_non_null(check);
        ub_iterdet_free(check);
        ub_iterdet_config given = cfg;
        given.search_limit = ref.search_limit;
        (void)given;
        compare_with_reference(s, len, &ref, seed);
    }
    printf("locks %zu, deviations %zu, relocks on the same period %zu, gave up %zu\n", seen_locks,
           seen_deviations, seen_relock_same_period, seen_gave_up);
    assert_true(seen_locks > 3000 && seen_deviations > 1000 && seen_relock_same_period > 300 && seen_gave_up > 0);
}

/* The default chain cap agrees with the exact walk while values repeat less than 256 times. */
static void test_default_chain_matches_exact(void **state)
{
    (void)state;
    enum { N = 3000 };
    uint64_t *s = malloc(N * sizeof *s);
    for (uint64_t seed = 1; seed <= 20; seed++) {
        rng_state = seed;
        size_t n = 0;
        while (n < N) {
            size_t p = 20 + rng_below(200), reps = 1 + rng_below(4);
            uint64_t base = rng();
            for (size_t k = 0; k < p * reps && n < N; k++)
                s[n++] = base + (k % p) % 40;
        }
        ub_iterdet_config exact = {.max_chain = UINT32_MAX, .min_span = 16};
        ub_iterdet_config capped = {.min_span = 16};
        ub_iterdet *a = ub_iterdet_new(&exact), *b = ub_iterdet_new(&capped);
        ub_iter_result *ra = feed_all(a, s, N), *rb = feed_all(b, s, N);
        assert_memory_equal(ra, rb, N * sizeof *ra);
        assert_true(count_event(ra, N, UB_ITER_LOCKED) > 0);
        free(ra), free(rb);
        ub_iterdet_free(a), ub_iterdet_free(b);
    }
    free(s);
}

/* The history wraps around (max_period small, long run with deviations): still matches the
 * reference, and memory stays bounded by construction. */
static void test_wraparound_against_reference(void **state)
{
    (void)state;
    enum { N = 2500 };
    uint64_t *s = malloc(N * sizeof *s);
    for (uint64_t seed = 1; seed <= 12; seed++) {
        rng_state = seed * 77;
        size_t n = 0;
        while (n < N) {
            size_t p = 1 + rng_below(30), reps = 2 + rng_below(30);
            uint64_t pat[30];
            for (size_t k = 0; k < p; k++)
                pat[k] = rng_below(5);
            for (size_t k = 0; k < p * reps && n < N; k++)
                s[n++] = rng_below(300) ? pat[k % p] : 9;
        }
        ub_iterdet_config cfg = {.max_period = 40, .max_chain = UINT32_MAX, .min_span = 4, .search_limit = 10000};
        compare_with_reference(s, N, &cfg, seed);
    }
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_period_one),
        cmocka_unit_test(test_ddp_like),
        cmocka_unit_test(test_ddp_shared_tail_rotates_phase),
        cmocka_unit_test(test_horovod_like),
        cmocka_unit_test(test_internal_repetition),
        cmocka_unit_test(test_square_inside_period),
        cmocka_unit_test(test_aperiodic_never_locks),
        cmocka_unit_test(test_gives_up),
        cmocka_unit_test(test_deviation_keeps_phase),
        cmocka_unit_test(test_rank_consistency),
        cmocka_unit_test(test_large_period_performance),
        cmocka_unit_test(test_random_against_reference),
        cmocka_unit_test(test_default_chain_matches_exact),
        cmocka_unit_test(test_wraparound_against_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
