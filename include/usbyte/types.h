/* Data types and reduction ops, one X-macro list each, shared by the planner, the
 * interposer and the tools.  The names are the ones the profile JSON uses (docs/model.md). */
#ifndef USBYTE_TYPES_H
#define USBYTE_TYPES_H

#include <stddef.h>

/* X(ENUM, json name, bytes per element, ncclDataType_t value in nccl.h 2.28) */
#define UB_DTYPE_LIST(X)                 \
    X(INT8, "int8", 1, 0)                \
    X(UINT8, "uint8", 1, 1)              \
    X(INT32, "int32", 4, 2)              \
    X(UINT32, "uint32", 4, 3)            \
    X(INT64, "int64", 8, 4)              \
    X(UINT64, "uint64", 8, 5)            \
    X(FLOAT16, "float16", 2, 6)          \
    X(FLOAT32, "float32", 4, 7)          \
    X(FLOAT64, "float64", 8, 8)          \
    X(BFLOAT16, "bfloat16", 2, 9)        \
    X(FLOAT8E4M3, "float8e4m3", 1, 10)   \
    X(FLOAT8E5M2, "float8e5m2", 1, 11)

/* X(ENUM, json name, ncclRedOp_t value in nccl.h 2.28) */
#define UB_OP_LIST(X)      \
    X(SUM, "sum", 0)       \
    X(PROD, "prod", 1)     \
    X(MAX, "max", 2)       \
    X(MIN, "min", 3)       \
    X(AVG, "avg", 4)

typedef enum {
#define X(e, name, size, nccl) UB_DTYPE_##e,
    UB_DTYPE_LIST(X)
#undef X
    UB_DTYPE_COUNT
} ub_dtype;

typedef enum {
#define X(e, name, nccl) UB_OP_##e,
    UB_OP_LIST(X)
#undef X
    UB_OP_COUNT
} ub_op;

/* Name <-> enum; the parsers return -1 for an unknown name. */
const char *ub_dtype_name(ub_dtype d);
size_t ub_dtype_size(ub_dtype d);
int ub_dtype_parse(const char *name);
const char *ub_op_name(ub_op o);
int ub_op_parse(const char *name);

#endif
