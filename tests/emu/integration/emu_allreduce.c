/* Every dtype x op of ncclAllReduce against a reference computed on the host, issued as one
 * group of five allreduces per dtype, then in-place and multi-chunk allreduces outside groups,
 * then PreMulSum ops (host and device scalars).
 *
 * Values are small integers in [-3, 3] ([0, 3] for unsigned types), so with at most 4 ranks
 * every sum, product, max and min is an integer of magnitude <= 81, exactly representable in
 * every type (bfloat16 has 8 significant bits): those compare exactly.  Only avg divides by the
 * rank count; that is one rounding, so it must be within one unit in the last place of the
 * type (2^-10 relative for float16, 2^-7 for bfloat16, 2^-23 float32, 2^-52 float64), and
 * exact for integers (C truncating division, as NCCL does). */
#include <math.h>
#include <stdint.h>

#include "../../integration/emu_common.h"

static const ncclDataType_t types[] = {ncclInt8, ncclUint8, ncclInt32, ncclUint32, ncclInt64,
                                       ncclUint64, ncclFloat16, ncclFloat32, ncclFloat64, ncclBfloat16};
static const char *type_names[] = {"int8", "uint8", "int32", "uint32", "int64", "uint64",
                                   "float16", "float32", "float64", "bfloat16"};
static const ncclRedOp_t ops[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
static const char *op_names[] = {"sum", "prod", "max", "min", "avg"};

static size_t type_size(ncclDataType_t t)
{
    switch (t) {
    case ncclInt8: case ncclUint8: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    default: return 8;
    }
}

static int is_unsigned(ncclDataType_t t)
{
    return t == ncclUint8 || t == ncclUint32 || t == ncclUint64;
}

static int is_float(ncclDataType_t t)
{
    return t == ncclFloat16 || t == ncclFloat32 || t == ncclFloat64 || t == ncclBfloat16;
}

static int value(ncclDataType_t t, int rank, size_t i)
{
    int v = (int)((rank * 5 + i * 3 + (size_t)t) % 7);
    return is_unsigned(t) ? v % 4 : v - 3;
}

/* bfloat16 is the upper half of a float; the values stored are exact, so truncation is exact. */
static uint16_t to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    return (uint16_t)(x >> 16);
}

static double from_bf16(uint16_t b)
{
    uint32_t x = (uint32_t)b << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

static void store(ncclDataType_t t, void *buf, size_t i, double v)
{
    switch (t) {
    case ncclInt8: ((int8_t *)buf)[i] = (int8_t)v; break;
    case ncclUint8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    case ncclInt32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case ncclUint32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
    case ncclInt64: ((int64_t *)buf)[i] = (int64_t)v; break;
    case ncclUint64: ((uint64_t *)buf)[i] = (uint64_t)v; break;
    case ncclFloat16: ((_Float16 *)buf)[i] = (_Float16)v; break;
    case ncclFloat32: ((float *)buf)[i] = (float)v; break;
    case ncclFloat64: ((double *)buf)[i] = v; break;
    case ncclBfloat16: ((uint16_t *)buf)[i] = to_bf16((float)v); break;
    default: break;
    }
}

static double load(ncclDataType_t t, const void *buf, size_t i)
{
    switch (t) {
    case ncclInt8: return ((const int8_t *)buf)[i];
    case ncclUint8: return ((const uint8_t *)buf)[i];
    case ncclInt32: return ((const int32_t *)buf)[i];
    case ncclUint32: return ((const uint32_t *)buf)[i];
    case ncclInt64: return (double)((const int64_t *)buf)[i];
    case ncclUint64: return (double)((const uint64_t *)buf)[i];
    case ncclFloat16: return (double)((const _Float16 *)buf)[i];
    case ncclFloat32: return ((const float *)buf)[i];
    case ncclFloat64: return ((const double *)buf)[i];
    case ncclBfloat16: return from_bf16(((const uint16_t *)buf)[i]);
    default: return NAN;
    }
}

static double reference(ncclDataType_t t, ncclRedOp_t op, int nranks, size_t i)
{
    long long acc = value(t, 0, i);
    for (int r = 1; r < nranks; r++) {
        long long v = value(t, r, i);
        switch (op) {
        case ncclProd: acc *= v; break;
        case ncclMax: acc = v > acc ? v : acc; break;
        case ncclMin: acc = v < acc ? v : acc; break;
        default: acc += v; break;
        }
    }
    if (op != ncclAvg)
        return (double)acc;
    return is_float(t) ? (double)acc / nranks : (double)(acc / nranks);
}

static double ulp_rel(ncclDataType_t t)
{
    switch (t) {
    case ncclFloat16: return ldexp(1, -10);
    case ncclBfloat16: return ldexp(1, -7);
    case ncclFloat32: return ldexp(1, -23);
    case ncclFloat64: return ldexp(1, -52);
    default: return 0;
    }
}

static void check(ncclDataType_t t, ncclRedOp_t op, int nranks, const void *got, size_t count, const char *what)
{
    for (size_t i = 0; i < count; i++) {
        double want = reference(t, op, nranks, i), have = load(t, got, i);
        double tol = op == ncclAvg ? ulp_rel(t) * fabs(want) : 0;
        EXPECT(fabs(have - want) <= tol, "%s %s %s element %zu: got %.17g, want %.17g", what, type_names[t == ncclBfloat16 ? 9 : (int)t],
               op_names[op], i, have, want);
    }
}

int main(void)
{
    int rank, nranks;
    ncclComm_t comm = world_comm(&rank, &nranks);
    EXPECT(nranks >= 1 && nranks <= 4, "the reference is exact only for 1..4 ranks, got %d", nranks);
    cudaStream_t stream;
    CUDA_OK(cudaStreamCreate(&stream));
    const size_t count = 1000;
    const int nops = sizeof ops / sizeof ops[0];
    int checked = 0;

    /* Each dtype: one group of five allreduces (one per op) from one send buffer. */
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        ncclDataType_t t = types[ti];
        size_t bytes = count * type_size(t);
        void *host = malloc(bytes), *send, *recv[5];
        for (size_t i = 0; i < count; i++)
            store(t, host, i, value(t, rank, i));
        CUDA_OK(cudaMalloc(&send, bytes));
        CUDA_OK(cudaMemcpy(send, host, bytes, cudaMemcpyHostToDevice));
        NCCL_OK(ncclGroupStart());
        for (int o = 0; o < nops; o++) {
            CUDA_OK(cudaMalloc(&recv[o], bytes));
            NCCL_OK(ncclAllReduce(send, recv[o], count, t, ops[o], comm, stream));
        }
        NCCL_OK(ncclGroupEnd());
        CUDA_OK(cudaStreamSynchronize(stream));
        for (int o = 0; o < nops; o++) {
            CUDA_OK(cudaMemcpy(host, recv[o], bytes, cudaMemcpyDeviceToHost));
            check(t, ops[o], nranks, host, count, "grouped");
            checked++;
            CUDA_OK(cudaFree(recv[o]));
        }
        CUDA_OK(cudaFree(send));
        free(host);
    }

    /* In place, and counts spanning several 1 MiB staging chunks, outside groups. */
    struct { ncclDataType_t t; ncclRedOp_t op; size_t count; } big[] = {
        {ncclFloat32, ncclSum, 300001}, {ncclInt64, ncclMax, 200003}, {ncclFloat16, ncclAvg, 700001}, {ncclUint8, ncclMin, 3}};
    for (size_t b = 0; b < sizeof big / sizeof big[0]; b++) {
        size_t bytes = big[b].count * type_size(big[b].t);
        void *host = malloc(bytes), *buf;
        for (size_t i = 0; i < big[b].count; i++)
            store(big[b].t, host, i, value(big[b].t, rank, i));
        CUDA_OK(cudaMalloc(&buf, bytes));
        CUDA_OK(cudaMemcpy(buf, host, bytes, cudaMemcpyHostToDevice));
        NCCL_OK(ncclAllReduce(buf, buf, big[b].count, big[b].t, big[b].op, comm, stream));
        CUDA_OK(cudaStreamSynchronize(stream));
        CUDA_OK(cudaMemcpy(host, buf, bytes, cudaMemcpyDeviceToHost));
        check(big[b].t, big[b].op, nranks, host, big[b].count, "in-place");
        checked++;
        CUDA_OK(cudaFree(buf));
        free(host);
    }
    /* PreMulSum: each rank's input times its own scalar (rank + 1), summed; |result| <= 30, exact.
     * The scalar is host-immediate for most types and device-resident for float64 and int64. */
    const ncclDataType_t pm_types[] = {ncclInt32, ncclUint8, ncclFloat16, ncclBfloat16, ncclFloat32, ncclFloat64, ncclInt64};
    for (size_t ti = 0; ti < sizeof pm_types / sizeof pm_types[0]; ti++) {
        ncclDataType_t t = pm_types[ti];
        size_t bytes = count * type_size(t);
        unsigned char scalar[8];
        store(t, scalar, 0, rank + 1);
        void *host = malloc(bytes), *buf, *dev_scalar = NULL;
        int on_device = t == ncclFloat64 || t == ncclInt64;
        if (on_device) {
            CUDA_OK(cudaMalloc(&dev_scalar, 8));
            CUDA_OK(cudaMemcpy(dev_scalar, scalar, type_size(t), cudaMemcpyHostToDevice));
        }
        ncclRedOp_t op;
        NCCL_OK(ncclRedOpCreatePreMulSum(&op, on_device ? dev_scalar : (void *)scalar, t,
                                         on_device ? ncclScalarDevice : ncclScalarHostImmediate, comm));
        for (size_t i = 0; i < count; i++)
            store(t, host, i, value(t, rank, i));
        CUDA_OK(cudaMalloc(&buf, bytes));
        CUDA_OK(cudaMemcpy(buf, host, bytes, cudaMemcpyHostToDevice));
        NCCL_OK(ncclAllReduce(buf, buf, count, t, op, comm, stream));
        NCCL_OK(ncclRedOpDestroy(op, comm));   /* allowed once issued */
        CUDA_OK(cudaStreamSynchronize(stream));
        CUDA_OK(cudaMemcpy(host, buf, bytes, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < count; i++) {
            long long want = 0;
            for (int r = 0; r < nranks; r++)
                want += (long long)(r + 1) * value(t, r, i);
            EXPECT(load(t, host, i) == (double)want, "premulsum %d element %zu: got %g want %lld", (int)t, i,
                   load(t, host, i), want);
        }
        checked++;
        CUDA_OK(cudaFree(buf));
        if (dev_scalar)
            CUDA_OK(cudaFree(dev_scalar));
        free(host);
    }

    NCCL_OK(ncclCommDestroy(comm));
    CUDA_OK(cudaStreamDestroy(stream));
    printf("allreduce: %d dtype/op combinations correct on %d ranks\n", checked, nranks);
    return 0;
}
