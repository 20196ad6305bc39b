/* Call signatures: what the portable and full signatures depend on, sequence hashes, quality. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "usbyte/signature.h"

static ub_call_sig base_call(void)
{
    ub_call_sig c = {.kind = 1, .count = 6553600, .dtype = 7, .op = 0, .peer = -1,
                     .stream = 0x55550000u, .sendbuf = 0x7f0012340000u, .recvbuf = 0x7f0012340000u};
    return c;
}

/* splitmix64's published first output for seed 0 is mix(0 + golden). */
static void test_mix_is_splitmix64(void **state)
{
    (void)state;
    assert_int_equal(ub_hash_mix64(0x9e3779b97f4a7c15ull), 0xe220a8397b1dcdafull);
    assert_int_equal(ub_hash_mix64(2 * 0x9e3779b97f4a7c15ull), 0x6e789e6aa1b965f4ull);
    assert_int_equal(ub_hash_mix64(0), 0);
}

static void test_portable_ignores_local_fields(void **state)
{
    (void)state;
    ub_call_sig a = base_call(), b = base_call();
    b.stream = 0x12345678u;
    b.sendbuf = 0x7f9999990000u;
    b.recvbuf = 0x7f8888880000u;
    assert_int_equal(ub_sig_portable(&a), ub_sig_portable(&b));
    assert_int_not_equal(ub_sig_full(&a), ub_sig_full(&b));
}

static void test_every_field_counts(void **state)
{
    (void)state;
    ub_call_sig c0 = base_call();
    uint64_t p0 = ub_sig_portable(&c0), f0 = ub_sig_full(&c0);
    ub_call_sig v[8];
    for (int k = 0; k < 8; k++)
        v[k] = base_call();
    v[0].kind = 2;
    v[1].count += 1;
    v[2].dtype = 6;
    v[3].op = 1;
    v[4].peer = 0;
    v[5].stream += 8;
    v[6].sendbuf += 8;
    v[7].recvbuf += 8;
    for (int k = 0; k < 5; k++)
        assert_int_not_equal(ub_sig_portable(&v[k]), p0);
    for (int k = 5; k < 8; k++)
        assert_int_equal(ub_sig_portable(&v[k]), p0);
    for (int k = 0; k < 8; k++)
        assert_int_not_equal(ub_sig_full(&v[k]), f0);
    /* the same values in other fields give other hashes */
    ub_call_sig x = base_call(), y = base_call();
    x.dtype = 4, x.op = 7;
    y.dtype = 7, y.op = 4;
    assert_int_not_equal(ub_sig_portable(&x), ub_sig_portable(&y));
    x = base_call(), y = base_call();
    x.sendbuf = 1, x.recvbuf = 2;
    y.sendbuf = 2, y.recvbuf = 1;
    assert_int_not_equal(ub_sig_full(&x), ub_sig_full(&y));
}

static void test_deterministic(void **state)
{
    (void)state;
    ub_call_sig a = base_call(), b = base_call();
    assert_int_equal(ub_sig_full(&a), ub_sig_full(&b));
    assert_int_equal(ub_sig_portable(&a), ub_sig_portable(&b));
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* 200000 calls that differ in one small field: no collisions, and about half the bits flip
 * between neighbours (avalanche). */
static void test_quality(void **state)
{
    (void)state;
    enum { N = 200000 };
    uint64_t *h = malloc(N * sizeof *h);
    double flipped = 0;
    for (size_t i = 0; i < N; i++) {
        ub_call_sig c = base_call();
        c.count = i / 4;
        c.dtype = (int)(i % 4);
        h[i] = ub_sig_portable(&c);
        if (i)
            flipped += __builtin_popcountll(h[i] ^ h[i - 1]);
    }
    double mean = flipped / (N - 1);
    assert_true(mean > 31.0 && mean < 33.0);
    qsort(h, N, sizeof *h, cmp_u64);
    for (size_t i = 1; i < N; i++)
        assert_int_not_equal(h[i], h[i - 1]);
    free(h);
}

static void test_sequence_hash(void **state)
{
    (void)state;
    uint64_t s[4] = {11, 22, 33, 44};
    uint64_t swapped[4] = {11, 33, 22, 44};
    uint64_t zeros[2] = {0, 0};
    assert_int_not_equal(ub_sequence_hash(s, 4), ub_sequence_hash(swapped, 4));
    assert_int_not_equal(ub_sequence_hash(s, 4), ub_sequence_hash(s, 3));
    assert_int_not_equal(ub_sequence_hash(NULL, 0), ub_sequence_hash(zeros, 1));
    assert_int_not_equal(ub_sequence_hash(zeros, 1), ub_sequence_hash(zeros, 2));
    assert_int_equal(ub_sequence_hash(s, 4), ub_sequence_hash(s, 4));
    ub_seqhash inc;
    ub_seqhash_init(&inc);
    assert_int_equal(ub_seqhash_value(&inc), ub_sequence_hash(NULL, 0));
    for (int k = 0; k < 4; k++) {
        ub_seqhash_add(&inc, s[k]);
        assert_int_equal(ub_seqhash_value(&inc), ub_sequence_hash(s, (size_t)k + 1));
    }
    /* ranks with different addresses but the same portable calls agree */
    ub_seqhash r0, r1;
    ub_seqhash_init(&r0);
    ub_seqhash_init(&r1);
    for (int k = 0; k < 10; k++) {
        ub_call_sig a = base_call(), b = base_call();
        a.count = b.count = 100 + k;
        b.sendbuf = b.recvbuf = 0x1000u * k;
        b.stream = 77;
        ub_seqhash_add(&r0, ub_sig_portable(&a));
        ub_seqhash_add(&r1, ub_sig_portable(&b));
    }
    assert_int_equal(ub_seqhash_value(&r0), ub_seqhash_value(&r1));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mix_is_splitmix64),
        cmocka_unit_test(test_portable_ignores_local_fields),
        cmocka_unit_test(test_every_field_counts),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_quality),
        cmocka_unit_test(test_sequence_hash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
