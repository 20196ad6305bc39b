#include "dtype.h"

#include <math.h>
#include <string.h>

static const struct {
    const char *name;
    size_t size;
} dtypes[ncclNumTypes] = {
    [ncclInt8] = {"int8", 1},          [ncclUint8] = {"uint8", 1},
    [ncclInt32] = {"int32", 4},        [ncclUint32] = {"uint32", 4},
    [ncclInt64] = {"int64", 8},        [ncclUint64] = {"uint64", 8},
    [ncclFloat16] = {"float16", 2},    [ncclFloat32] = {"float32", 4},
    [ncclFloat64] = {"float64", 8},    [ncclBfloat16] = {"bfloat16", 2},
    [ncclFloat8e4m3] = {"float8e4m3", 1}, [ncclFloat8e5m2] = {"float8e5m2", 1},
};

size_t emu_dtype_size(int dtype)
{
    return dtype >= 0 && dtype < ncclNumTypes ? dtypes[dtype].size : 0;
}

const char *emu_dtype_name(int dtype)
{
    return dtype >= 0 && dtype < ncclNumTypes ? dtypes[dtype].name : NULL;
}

const char *emu_op_name(int op)
{
    static const char *const names[] = {"sum", "prod", "max", "min", "avg"};
    return op >= 0 && op < ncclNumOps ? names[op] : NULL;
}

int emu_dtype_reducible(int dtype)
{
    return emu_dtype_size(dtype) != 0 && dtype != ncclFloat8e4m3 && dtype != ncclFloat8e5m2;
}

/* ---- float16 / bfloat16 conversions (round to nearest even) ---- */

float emu_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    float f;
    if (exp == 0)
        f = ldexpf((float)mant, -24);                       /* zero and subnormals */
    else if (exp == 31)
        f = mant ? NAN : INFINITY;
    else
        f = ldexpf((float)(mant | 0x400), (int)exp - 25);
    uint32_t bits;
    memcpy(&bits, &f, 4);
    bits |= sign;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t emu_float_to_half(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    float a = fabsf(f);
    if (isnan(f))
        return sign | 0x7e00;
    if (a >= 65520.0f)                                      /* rounds to infinity */
        return sign | 0x7c00;
    if (a < ldexpf(1.0f, -14)) {                            /* subnormal: multiple of 2^-24 */
        float q = nearbyintf(ldexpf(a, 24));                /* default rounding: nearest even */
        return sign | (uint16_t)q;
    }
    int e;
    float m = frexpf(a, &e);                                /* a = m * 2^e, m in [0.5, 1) */
    float q = nearbyintf(ldexpf(m, 11));                    /* 11 significant bits */
    if (q >= 2048.0f) {
        q /= 2.0f;
        e += 1;
    }
    uint16_t exp = (uint16_t)(e - 1 + 15);
    return sign | (uint16_t)(exp << 10) | (uint16_t)((uint32_t)q & 0x3ff);
}

float emu_bf16_to_float(uint16_t b)
{
    uint32_t x = (uint32_t)b << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

uint16_t emu_float_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if (isnan(f))
        return (uint16_t)((x >> 16) | 0x40);
    x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

/* ---- reductions ---- */

#define APPLY(T, a, b, op)                                                        \
    ((op) == ncclProd ? (T)((a) * (b)) : (op) == ncclMax ? ((a) > (b) ? (a) : (b)) \
     : (op) == ncclMin ? ((a) < (b) ? (a) : (b)) : (T)((a) + (b)))

/* Unsigned arithmetic for the integer types so that overflow wraps (as on the GPU) instead of
 * being undefined behaviour. */
#define REDUCE_INT(T, U)                                                          \
    do {                                                                          \
        T *d = dst;                                                               \
        const T *s = src;                                                         \
        for (size_t i = 0; i < n; i++) {                                          \
            if (op == ncclMax)                                                    \
                d[i] = d[i] > s[i] ? d[i] : s[i];                                 \
            else if (op == ncclMin)                                               \
                d[i] = d[i] < s[i] ? d[i] : s[i];                                 \
            else if (op == ncclProd)                                              \
                d[i] = (T)((U)d[i] * (U)s[i]);                                    \
            else                                                                  \
                d[i] = (T)((U)d[i] + (U)s[i]);                                    \
        }                                                                         \
    } while (0)

#define REDUCE_FLOAT(T)                                                           \
    do {                                                                          \
        T *d = dst;                                                               \
        const T *s = src;                                                         \
        for (size_t i = 0; i < n; i++)                                            \
            d[i] = APPLY(T, d[i], s[i], op);                                      \
    } while (0)

#define REDUCE_16(TO_F, FROM_F)                                                   \
    do {                                                                          \
        uint16_t *d = dst;                                                        \
        const uint16_t *s = src;                                                  \
        for (size_t i = 0; i < n; i++) {                                          \
            float a = TO_F(d[i]), b = TO_F(s[i]);                                 \
            d[i] = FROM_F(APPLY(float, a, b, op));                                \
        }                                                                         \
    } while (0)

void emu_reduce(void *dst, const void *src, size_t n, int dtype, int op)
{
    switch (dtype) {
    case ncclInt8: REDUCE_INT(int8_t, uint32_t); break;
    case ncclUint8: REDUCE_INT(uint8_t, uint32_t); break;
    case ncclInt32: REDUCE_INT(int32_t, uint32_t); break;
    case ncclUint32: REDUCE_INT(uint32_t, uint32_t); break;
    case ncclInt64: REDUCE_INT(int64_t, uint64_t); break;
    case ncclUint64: REDUCE_INT(uint64_t, uint64_t); break;
    case ncclFloat32: REDUCE_FLOAT(float); break;
    case ncclFloat64: REDUCE_FLOAT(double); break;
    case ncclFloat16: REDUCE_16(emu_half_to_float, emu_float_to_half); break;
    case ncclBfloat16: REDUCE_16(emu_bf16_to_float, emu_float_to_bf16); break;
    default: break;
    }
}

#define DIVIDE(T)                                                                 \
    do {                                                                          \
        T *d = dst;                                                               \
        for (size_t i = 0; i < n; i++)                                            \
            d[i] = (T)(d[i] / (T)nranks);                                         \
    } while (0)

#define DIVIDE_16(TO_F, FROM_F)                                                   \
    do {                                                                          \
        uint16_t *d = dst;                                                        \
        for (size_t i = 0; i < n; i++)                                            \
            d[i] = FROM_F(TO_F(d[i]) / (float)nranks);                            \
    } while (0)

void emu_divide(void *dst, size_t n, int dtype, int nranks)
{
    switch (dtype) {
    case ncclInt8: DIVIDE(int8_t); break;
    case ncclUint8: DIVIDE(uint8_t); break;
    case ncclInt32: DIVIDE(int32_t); break;
    case ncclUint32: DIVIDE(uint32_t); break;
    case ncclInt64: DIVIDE(int64_t); break;
    case ncclUint64: DIVIDE(uint64_t); break;
    case ncclFloat32: DIVIDE(float); break;
    case ncclFloat64: DIVIDE(double); break;
    case ncclFloat16: DIVIDE_16(emu_half_to_float, emu_float_to_half); break;
    case ncclBfloat16: DIVIDE_16(emu_bf16_to_float, emu_float_to_bf16); break;
    default: break;
    }
}

#define SCALE_INT(T, U)                                                           \
    do {                                                                          \
        T *d = dst, s;                                                            \
        memcpy(&s, scalar, sizeof s);                                             \
        for (size_t i = 0; i < n; i++)                                            \
            d[i] = (T)((U)d[i] * (U)s);                                           \
    } while (0)

#define SCALE_FLOAT(T)                                                            \
    do {                                                                          \
        T *d = dst, s;                                                            \
        memcpy(&s, scalar, sizeof s);                                             \
        for (size_t i = 0; i < n; i++)                                            \
            d[i] = d[i] * s;                                                      \
    } while (0)

#define SCALE_16(TO_F, FROM_F)                                                    \
    do {                                                                          \
        uint16_t *d = dst, s;                                                     \
        memcpy(&s, scalar, sizeof s);                                             \
        float fs = TO_F(s);                                                       \
        for (size_t i = 0; i < n; i++)                                            \
            d[i] = FROM_F(TO_F(d[i]) * fs);                                       \
    } while (0)

void emu_scale(void *dst, size_t n, int dtype, const void *scalar)
{
    switch (dtype) {
    case ncclInt8: SCALE_INT(int8_t, uint32_t); break;
    case ncclUint8: SCALE_INT(uint8_t, uint32_t); break;
    case ncclInt32: SCALE_INT(int32_t, uint32_t); break;
    case ncclUint32: SCALE_INT(uint32_t, uint32_t); break;
    case ncclInt64: SCALE_INT(int64_t, uint64_t); break;
    case ncclUint64: SCALE_INT(uint64_t, uint64_t); break;
    case ncclFloat32: SCALE_FLOAT(float); break;
    case ncclFloat64: SCALE_FLOAT(double); break;
    case ncclFloat16: SCALE_16(emu_half_to_float, emu_float_to_half); break;
    case ncclBfloat16: SCALE_16(emu_bf16_to_float, emu_float_to_bf16); break;
    default: break;
    }
}
