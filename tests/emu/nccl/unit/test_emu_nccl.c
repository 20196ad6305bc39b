/* Unit tests of the emulated NCCL's pure parts: the time model and its environment parsing,
 * float16/bfloat16 rounding, reduction arithmetic, and signature formatting. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../dtype.h"
#include "../model.h"
#include "../nccl_emu.h"

static const struct emu_model m = {.alpha_us = 20.0, .gbps = 10.0, .payload = 1};

static void test_model_formulas(void **state)
{
    (void)state;
    /* allreduce 1 MB (250000 floats) on 4 ranks: 6*20 us + 1.5 * 1e6 B / (10 GB/s) = 120 + 150 us */
    assert_float_equal(emu_model_collective_us(&m, EMU_ALLREDUCE, 250000, 4, 4), 270.0, 1e-9);
    /* broadcast/reduce: 3*20 + 1e6/1e4 = 60 + 100 */
    assert_float_equal(emu_model_collective_us(&m, EMU_BROADCAST, 250000, 4, 4), 160.0, 1e-9);
    assert_float_equal(emu_model_collective_us(&m, EMU_REDUCE, 250000, 4, 4), 160.0, 1e-9);
    /* allgather of 250000 per rank: the full buffer is 4 MB, 3/4 of it crosses each link */
    assert_float_equal(emu_model_collective_us(&m, EMU_ALLGATHER, 250000, 4, 4), 60.0 + 300.0, 1e-9);
    assert_float_equal(emu_model_collective_us(&m, EMU_REDUCESCATTER, 250000, 4, 4), 60.0 + 300.0, 1e-9);
    /* one rank: nothing to communicate */
    assert_float_equal(emu_model_collective_us(&m, EMU_ALLREDUCE, 1 << 20, 4, 1), 0.0, 0);
    /* p2p: alpha + the larger direction; nothing when only with itself */
    assert_float_equal(emu_model_p2p_us(&m, 1000000, 10, 1), 120.0, 1e-9);
    assert_float_equal(emu_model_p2p_us(&m, 1000000, 10, 0), 0.0, 0);
}

static char *read_all(FILE *f)
{
    static char buf[1024];
    rewind(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    return buf;
}

static void test_model_env(void **state)
{
    (void)state;
    struct emu_model got;
    FILE *warn = tmpfile();
    setenv("USBYTE_EMU_ALPHA_US", "5.5", 1);
    setenv("USBYTE_EMU_GBPS", "2e1", 1);
    setenv("USBYTE_EMU_PAYLOAD", "0", 1);
    setenv("USBYTE_EMU_CHECK", "bytes", 1);
    emu_model_from_env(&got, warn);
    assert_float_equal(got.alpha_us, 5.5, 0);
    assert_float_equal(got.gbps, 20.0, 0);
    assert_int_equal(got.payload, 0);
    assert_int_equal(got.check, EMU_CHECK_BYTES);
    setenv("USBYTE_EMU_CHECK", "strict", 1);
    emu_model_from_env(&got, warn);
    assert_int_equal(got.check, EMU_CHECK_STRICT);
    assert_string_equal(read_all(warn), "");

    setenv("USBYTE_EMU_ALPHA_US", "12us", 1);
    setenv("USBYTE_EMU_GBPS", "0", 1);
    setenv("USBYTE_EMU_PAYLOAD", "no", 1);
    setenv("USBYTE_EMU_CHECK", "Bytes", 1); /* strict parsing: not case-folded */
    emu_model_from_env(&got, warn);
    assert_float_equal(got.alpha_us, EMU_MODEL_DEFAULT_ALPHA_US, 0);
    assert_float_equal(got.gbps, EMU_MODEL_DEFAULT_GBPS, 0);
    assert_int_equal(got.payload, 1);
    assert_int_equal(got.check, EMU_CHECK_STRICT);
    const char *text = read_all(warn);
    assert_non_null(strstr(text, "USBYTE_EMU_ALPHA_US='12us'"));
    assert_non_null(strstr(text, "USBYTE_EMU_GBPS='0'"));
    assert_non_null(strstr(text, "USBYTE_EMU_PAYLOAD='no'"));
    assert_non_null(strstr(text, "USBYTE_EMU_CHECK='Bytes'"));
    int lines = 0;
    for (const char *p = text; *p; p++)
        lines += *p == '\n';
    assert_int_equal(lines, 4);
    fclose(warn);
    unsetenv("USBYTE_EMU_ALPHA_US");
    unsetenv("USBYTE_EMU_GBPS");
    unsetenv("USBYTE_EMU_PAYLOAD");
    unsetenv("USBYTE_EMU_CHECK");
}

static void test_half(void **state)
{
    (void)state;
    assert_int_equal(emu_float_to_half(1.0f), 0x3c00);
    assert_int_equal(emu_float_to_half(-2.0f), 0xc000);
    assert_int_equal(emu_float_to_half(65504.0f), 0x7bff);
    assert_int_equal(emu_float_to_half(65520.0f), 0x7c00);              /* rounds to infinity */
    assert_int_equal(emu_float_to_half(ldexpf(1, -24)), 0x0001);         /* smallest subnormal */
    assert_int_equal(emu_float_to_half(1.0f + ldexpf(1, -11)), 0x3c00);  /* tie: to even */
    assert_int_equal(emu_float_to_half(1.0f + 3 * ldexpf(1, -11)), 0x3c02);
    assert_int_equal(emu_float_to_half(0.0f), 0x0000);
    assert_true(isnan(emu_half_to_float(emu_float_to_half(NAN))));
    for (uint32_t h = 0; h < 0x7c00; h++)                                /* every finite half round-trips */
        assert_int_equal(emu_float_to_half(emu_half_to_float((uint16_t)h)), h);
    assert_float_equal(emu_half_to_float(0x3555), 0.333251953125, 0);
}

static void test_bf16(void **state)
{
    (void)state;
    assert_int_equal(emu_float_to_bf16(1.0f), 0x3f80);
    assert_int_equal(emu_float_to_bf16(1.0f + ldexpf(1, -8)), 0x3f80);  /* tie: to even */
    assert_int_equal(emu_float_to_bf16(1.0f + 3 * ldexpf(1, -8)), 0x3f82);
    assert_float_equal(emu_bf16_to_float(0xc040), -3.0, 0);
}

static void test_reduce(void **state)
{
    (void)state;
    int8_t a[4] = {100, -128, 5, -7}, b[4] = {100, -1, -9, 2};
    emu_reduce(a, b, 4, ncclInt8, ncclSum);                              /* wraps like the GPU */
    assert_int_equal(a[0], -56);
    assert_int_equal(a[1], 127);
    int32_t c[3] = {-7, 7, 9}, d[3] = {2, 3, 9};
    emu_reduce(c, d, 3, ncclInt32, ncclMax);
    assert_int_equal(c[0], 2);
    emu_divide(c, 3, ncclInt32, 2);                                      /* truncates */
    assert_int_equal(c[0], 1);
    assert_int_equal(c[1], 3);
    uint16_t h[2] = {emu_float_to_half(1.5f), emu_float_to_half(2.0f)}, g[2] = {emu_float_to_half(2.0f), emu_float_to_half(0.5f)};
    emu_reduce(h, g, 2, ncclFloat16, ncclProd);
    assert_float_equal(emu_half_to_float(h[0]), 3.0, 0);
    assert_float_equal(emu_half_to_float(h[1]), 1.0, 0);
    double x[2] = {1.5, -2}, y[2] = {-1, -3};
    emu_reduce(x, y, 2, ncclFloat64, ncclMin);
    assert_float_equal(x[0], -1, 0);
    assert_float_equal(x[1], -3, 0);
    float f[2] = {1.5f, -2.0f}, k = 4.0f;
    emu_scale(f, 2, ncclFloat32, &k);
    assert_float_equal(f[0], 6.0, 0);
    assert_float_equal(f[1], -8.0, 0);
    uint8_t u[1] = {200}, ku = 2;
    emu_scale(u, 1, ncclUint8, &ku);                                     /* wraps */
    assert_int_equal(u[0], 144);
    assert_int_equal(emu_dtype_size(ncclBfloat16), 2);
    assert_int_equal(emu_dtype_size(99), 0);
    assert_false(emu_dtype_reducible(ncclFloat8e4m3));
}

static void test_signature(void **state)
{
    (void)state;
    char buf[128];
    emu_format_sig(buf, sizeof buf, EMU_ALLREDUCE, 1024, ncclFloat32, ncclSum, 0);
    assert_string_equal(buf, "allreduce count=1024 float32 sum");
    emu_format_sig(buf, sizeof buf, EMU_BROADCAST, 7, ncclBfloat16, 0, 3);
    assert_string_equal(buf, "broadcast count=7 bfloat16 root=3");
    emu_format_sig(buf, sizeof buf, EMU_REDUCE, 7, ncclInt8, ncclAvg, 1);
    assert_string_equal(buf, "reduce count=7 int8 avg root=1");
    emu_format_sig(buf, sizeof buf, EMU_ALLREDUCE, 3, ncclFloat64, ncclNumOps + 2, 0);
    assert_string_equal(buf, "allreduce count=3 float64 premulsum#2");
    emu_format_sig(buf, sizeof buf, EMU_SEND, 5, ncclUint64, 0, 2);
    assert_string_equal(buf, "send count=5 uint64 peer=2");
    emu_format_sig(buf, 10, EMU_ALLGATHER, 5, ncclUint64, 0, 0);        /* truncates safely */
    assert_string_equal(buf, "allgather");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_model_formulas), cmocka_unit_test(test_model_env), cmocka_unit_test(test_half),
        cmocka_unit_test(test_bf16),           cmocka_unit_test(test_reduce),    cmocka_unit_test(test_signature),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
