/* Data types and reduction arithmetic of the emulated NCCL (pure, unit-tested).
 * float16 and bfloat16 are computed in float and rounded back to nearest-even after every step,
 * which is what a ring reduction does element by element. */
#ifndef USBYTE_EMU_NCCL_DTYPE_H
#define USBYTE_EMU_NCCL_DTYPE_H

#include <stddef.h>
#include <stdint.h>

#include <nccl.h>

/* Bytes per element, 0 for an unknown type. */
size_t emu_dtype_size(int dtype);
/* "float32", ..., or NULL for an unknown type. */
const char *emu_dtype_name(int dtype);
/* "sum", ..., or NULL for an unknown op. */
const char *emu_op_name(int op);
/* 1 when the type supports the reduction ops (every type but the fp8 ones). */
int emu_dtype_reducible(int dtype);

/* dst[i] = dst[i] op src[i] for n elements (op in sum, prod, max, min; avg accumulates as sum). */
void emu_reduce(void *dst, const void *src, size_t n, int dtype, int op);
/* Finishes an average: dst[i] /= nranks (integer types truncate like C division). */
void emu_divide(void *dst, size_t n, int dtype, int nranks);

/* dst[i] *= scalar, where scalar points to one element of the same type (PreMulSum). */
void emu_scale(void *dst, size_t n, int dtype, const void *scalar);

float emu_half_to_float(uint16_t h);
uint16_t emu_float_to_half(float f);
float emu_bf16_to_float(uint16_t b);
uint16_t emu_float_to_bf16(float f);

#endif
