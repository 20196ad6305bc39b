/* Work that streams execute: copies, memsets, host functions, stream callbacks and emulated
 * kernels.  Arguments are checked at call time, as CUDA does for what it can see. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cupti_runtime_cbid.h>
#include <generated_cuda_runtime_api_meta.h>

#include "emu.h"

struct copy_op {
    void *dst;
    const void *src;
    size_t count;
};

static void copy_run(void *arg)
{
    struct copy_op *c = arg;
    memmove(c->dst, c->src, c->count);
    free(c);
}

struct set_op {
    void *dst;
    int value;
    size_t count;
};

static void set_run(void *arg)
{
    struct set_op *s = arg;
    memset(s->dst, s->value, s->count);
    free(s);
}

static cudaError_t check_copy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    switch (kind) {
    case cudaMemcpyHostToHost:
    case cudaMemcpyDefault:   /* UVA: untracked pointers are host memory */
        return dst && src ? cudaSuccess : cudaErrorInvalidValue;
    case cudaMemcpyHostToDevice:
        return src && emu_range_valid(dst, count) ? cudaSuccess : cudaErrorInvalidValue;
    case cudaMemcpyDeviceToHost:
        return dst && emu_range_valid(src, count) ? cudaSuccess : cudaErrorInvalidValue;
    case cudaMemcpyDeviceToDevice:
        return emu_range_valid(dst, count) && emu_range_valid(src, count) ? cudaSuccess : cudaErrorInvalidValue;
    default:
        return cudaErrorInvalidMemcpyDirection;
    }
}

static cudaError_t copy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                        cudaStream_t stream, bool ptsz, bool wait)
{
    struct CUstream_st *s;
    cudaError_t err = emu_stream_resolve(stream, ptsz, &s);
    if (err != cudaSuccess)
        return err;
    if (count == 0)
        return kind >= cudaMemcpyHostToHost && kind <= cudaMemcpyDefault ? cudaSuccess : cudaErrorInvalidMemcpyDirection;
    err = check_copy(dst, src, count, kind);
    if (err != cudaSuccess)
        return err;
    struct copy_op *c = malloc(sizeof *c);
    if (c == NULL)
        return cudaErrorMemoryAllocation;
    *c = (struct copy_op){dst, src, count};
    char what[80];
    snprintf(what, sizeof what, "cudaMemcpy%s %zu bytes", wait ? "" : "Async", count);
    uint64_t seq;
    err = emu_enqueue(s, copy_run, c, what, &seq);
    if (err != cudaSuccess) {
        free(c);
        return err;
    }
    if (wait)
        emu_stream_wait_seq(s, seq);
    return cudaSuccess;
}

EMU_EXPORT cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream)
{
    cudaMemcpyAsync_v3020_params p = {dst, src, count, kind, stream};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, "cudaMemcpyAsync", &p,
               copy(dst, src, count, kind, stream, false, false));
}

EMU_EXPORT cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream)
{
    cudaMemcpyAsync_ptsz_v7000_params p = {dst, src, count, kind, stream};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000, "cudaMemcpyAsync_ptsz", &p,
               copy(dst, src, count, kind, stream, true, false));
}

/* cudaMemcpyBatchAsync (CUDA 13's signature): the copies run as one stream operation.  What CUDA
 * refuses is refused: no copies, no attributes or more than copies, an index list that does not
 * start at 0 or does not increase, an unknown source access order, the legacy stream, a zero
 * size or a NULL pointer. */
struct batch_op {
    size_t n;
    struct copy_op c[];
};

static void batch_run(void *arg)
{
    struct batch_op *b = arg;
    for (size_t i = 0; i < b->n; i++)
        memmove(b->c[i].dst, b->c[i].src, b->c[i].count);
    free(b);
}

static cudaError_t copy_batch(void *const *dsts, const void *const *srcs, const size_t *sizes, size_t count,
                              const struct cudaMemcpyAttributes *attrs, const size_t *idxs, size_t n_attrs,
                              cudaStream_t stream, bool ptsz)
{
    if (count == 0 || !dsts || !srcs || !sizes || !attrs || !idxs || n_attrs == 0 || n_attrs > count || idxs[0] != 0)
        return cudaErrorInvalidValue;
    for (size_t a = 0; a < n_attrs; a++) {
        if ((a > 0 && idxs[a] <= idxs[a - 1]) || idxs[a] >= count)
            return cudaErrorInvalidValue;
        if (attrs[a].srcAccessOrder != cudaMemcpySrcAccessOrderStream &&
            attrs[a].srcAccessOrder != cudaMemcpySrcAccessOrderDuringApiCall &&
            attrs[a].srcAccessOrder != cudaMemcpySrcAccessOrderAny)
            return cudaErrorInvalidValue;
    }
    if (stream == NULL && !ptsz)
        return cudaErrorInvalidValue;   /* "the legacy NULL stream is not supported" */
    struct CUstream_st *s;
    cudaError_t err = emu_stream_resolve(stream, ptsz, &s);
    if (err != cudaSuccess)
        return err;
    struct batch_op *b = malloc(sizeof *b + count * sizeof b->c[0]);
    if (b == NULL)
        return cudaErrorMemoryAllocation;
    b->n = count;
    for (size_t i = 0; i < count; i++) {
        if (sizes[i] == 0 || check_copy(dsts[i], srcs[i], sizes[i], cudaMemcpyDefault) != cudaSuccess) {
            free(b);
            return cudaErrorInvalidValue;
        }
        b->c[i] = (struct copy_op){dsts[i], srcs[i], sizes[i]};
    }
    char what[80];
    snprintf(what, sizeof what, "cudaMemcpyBatchAsync %zu copies", count);
    err = emu_enqueue(s, batch_run, b, what, NULL);
    if (err != cudaSuccess)
        free(b);
    return err;
}

EMU_EXPORT cudaError_t cudaMemcpyBatchAsync(void *const *dsts, const void *const *srcs, const size_t *sizes, size_t count,
                                            struct cudaMemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
                                            cudaStream_t stream)
{
    cudaMemcpyBatchAsync_v13000_params p = {dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, stream};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_v13000, "cudaMemcpyBatchAsync", &p,
               copy_batch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, stream, false));
}

EMU_EXPORT cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    cudaMemcpy_v3020_params p = {dst, src, count, kind};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, "cudaMemcpy", &p,
               copy(dst, src, count, kind, NULL, false, true));
}

EMU_EXPORT cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    cudaMemcpy_ptds_v7000_params p = {dst, src, count, kind};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000, "cudaMemcpy_ptds", &p,
               copy(dst, src, count, kind, NULL, true, true));
}

static cudaError_t set(void *dst, int value, size_t count, cudaStream_t stream, bool ptsz, bool wait)
{
    struct CUstream_st *s;
    cudaError_t err = emu_stream_resolve(stream, ptsz, &s);
    if (err != cudaSuccess)
        return err;
    if (count == 0)
        return cudaSuccess;
    if (!emu_range_valid(dst, count))
        return cudaErrorInvalidValue;
    struct set_op *o = malloc(sizeof *o);
    if (o == NULL)
        return cudaErrorMemoryAllocation;
    *o = (struct set_op){dst, value, count};
    char what[80];
    snprintf(what, sizeof what, "cudaMemset%s %zu bytes", wait ? "" : "Async", count);
    uint64_t seq;
    err = emu_enqueue(s, set_run, o, what, &seq);
    if (err != cudaSuccess) {
        free(o);
        return err;
    }
    if (wait)
        emu_stream_wait_seq(s, seq);
    return cudaSuccess;
}

EMU_EXPORT cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream)
{
    cudaMemsetAsync_v3020_params p = {devPtr, value, count, stream};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020, "cudaMemsetAsync", &p,
               set(devPtr, value, count, stream, false, false));
}

EMU_EXPORT cudaError_t cudaMemsetAsync_ptsz(void *devPtr, int value, size_t count, cudaStream_t stream)
{
    cudaMemsetAsync_ptsz_v7000_params p = {devPtr, value, count, stream};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000, "cudaMemsetAsync_ptsz", &p,
               set(devPtr, value, count, stream, true, false));
}

EMU_EXPORT cudaError_t cudaMemset(void *devPtr, int value, size_t count)
{
    cudaMemset_v3020_params p = {devPtr, value, count};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020, "cudaMemset", &p,
               set(devPtr, value, count, NULL, false, true));
}

EMU_EXPORT cudaError_t cudaMemset_ptds(void *devPtr, int value, size_t count)
{
    cudaMemset_ptds_v7000_params p = {devPtr, value, count};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaMemset_ptds_v7000, "cudaMemset_ptds", &p,
               set(devPtr, value, count, NULL, true, true));
}

/* ---- host functions and stream callbacks ---- */
struct host_fn_op {
    cudaHostFn_t fn;
    cudaStreamCallback_t callback;
    cudaStream_t stream;
    void *user_data;
};

static void host_fn_run(void *arg)
{
    struct host_fn_op *h = arg;
    if (h->fn)
        h->fn(h->user_data);
    else
        h->callback(h->stream, cudaSuccess, h->user_data);
    free(h);
}

static cudaError_t host_fn(cudaStream_t stream, cudaHostFn_t fn, cudaStreamCallback_t callback, void *user_data, bool ptsz)
{
    if (fn == NULL && callback == NULL)
        return cudaErrorInvalidValue;
    struct CUstream_st *s;
    cudaError_t err = emu_stream_resolve(stream, ptsz, &s);
    if (err != cudaSuccess)
        return err;
    struct host_fn_op *h = malloc(sizeof *h);
    if (h == NULL)
        return cudaErrorMemoryAllocation;
    *h = (struct host_fn_op){fn, callback, stream, user_data};
    err = emu_enqueue(s, host_fn_run, h, fn ? "cudaLaunchHostFunc" : "cudaStreamAddCallback", NULL);
    if (err != cudaSuccess)
        free(h);
    return err;
}

EMU_EXPORT cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData)
{
    cudaLaunchHostFunc_v10000_params p = {stream, fn, userData};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchHostFunc_v10000, "cudaLaunchHostFunc", &p,
               host_fn(stream, fn, NULL, userData, false));
}

EMU_EXPORT cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t stream, cudaHostFn_t fn, void *userData)
{
    cudaLaunchHostFunc_ptsz_v10000_params p = {stream, fn, userData};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchHostFunc_ptsz_v10000, "cudaLaunchHostFunc_ptsz", &p,
               host_fn(stream, fn, NULL, userData, true));
}

static cudaError_t add_callback(cudaStream_t stream, cudaStreamCallback_t callback, void *user_data, unsigned flags, bool ptsz)
{
    if (flags != 0)
        return cudaErrorInvalidValue;
    return host_fn(stream, NULL, callback, user_data, ptsz);
}

EMU_EXPORT cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback, void *userData, unsigned int flags)
{
    cudaStreamAddCallback_v5000_params p = {stream, callback, userData, flags};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaStreamAddCallback_v5000, "cudaStreamAddCallback", &p,
               add_callback(stream, callback, userData, flags, false));
}

EMU_EXPORT cudaError_t cudaStreamAddCallback_ptsz(cudaStream_t stream, cudaStreamCallback_t callback, void *userData, unsigned int flags)
{
    cudaStreamAddCallback_ptsz_v7000_params p = {stream, callback, userData, flags};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaStreamAddCallback_ptsz_v7000, "cudaStreamAddCallback_ptsz", &p,
               add_callback(stream, callback, userData, flags, true));
}

/* ---- emulated kernels ----
 * There is no device code: `func` must be a host function of type usbyteEmuKernelFn
 * (void fn(void **args)), which the stream's worker calls with the launch's args pointer.
 * Unlike CUDA, the argument values are not copied at launch (their sizes are unknown), so the
 * args array and what it points to must stay valid until the kernel has run. */
typedef void (*usbyteEmuKernelFn)(void **args);

struct kernel_op {
    usbyteEmuKernelFn fn;
    void **args;
};

static void kernel_run(void *arg)
{
    struct kernel_op *k = arg;
    k->fn(k->args);
    free(k);
}

static cudaError_t launch_kernel(const void *func, dim3 grid, dim3 block, void **args, cudaStream_t stream, bool ptsz)
{
    if (func == NULL)
        return cudaErrorInvalidDeviceFunction;
    if (grid.x == 0 || grid.y == 0 || grid.z == 0 || block.x == 0 || block.y == 0 || block.z == 0 ||
        (uint64_t)block.x * block.y * block.z > 1024)
        return cudaErrorInvalidConfiguration;
    struct CUstream_st *s;
    cudaError_t err = emu_stream_resolve(stream, ptsz, &s);
    if (err != cudaSuccess)
        return err;
    struct kernel_op *k = malloc(sizeof *k);
    if (k == NULL)
        return cudaErrorMemoryAllocation;
    usbyteEmuKernelFn fn;
    memcpy(&fn, &func, sizeof fn);   /* object-to-function pointer, as the convention says */
    *k = (struct kernel_op){fn, args};
    err = emu_enqueue(s, kernel_run, k, "cudaLaunchKernel", NULL);
    if (err != cudaSuccess)
        free(k);
    return err;
}

EMU_EXPORT cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem, cudaStream_t stream)
{
    cudaLaunchKernel_v7000_params p = {func, gridDim, blockDim, args, sharedMem, stream};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, "cudaLaunchKernel", &p,
               launch_kernel(func, gridDim, blockDim, args, stream, false));
}

EMU_EXPORT cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem, cudaStream_t stream)
{
    cudaLaunchKernel_ptsz_v7000_params p = {func, gridDim, blockDim, args, sharedMem, stream};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000, "cudaLaunchKernel_ptsz", &p,
               launch_kernel(func, gridDim, blockDim, args, stream, true));
}
