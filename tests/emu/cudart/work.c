/* Work that streams execute: copies (1D to 3D), memsets, host functions, stream callbacks and
 * emulated kernels as stream operations (work.h), and the 1D copy, memset, host function and
 * callback entry points.  Arguments are checked at call time, as CUDA does for what it can see.
 * Each traced entry point also reports the driver function it corresponds to (EMU_NESTED). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cupti.h>   /* the runtime and driver callback ids and params structs */

#include "capture.h"
#include "device.h"
#include "errors.h"
#include "export.h"
#include "interference.h"
#include "memory.h"
#include "stream.h"
#include "stream_object.h"
#include "trace.h"
#include "work.h"

/* ---- copies ---- */
struct copy_op {
    struct emu_copy c;
};

static void copy_run(void *arg)
{
    struct copy_op *o = arg;
    const struct emu_copy *c = &o->c;
    for (size_t z = 0; z < c->depth; z++)
        for (size_t y = 0; y < c->height; y++)
            memmove(c->dst + z * c->dslice + y * c->dpitch, c->src + z * c->sslice + y * c->spitch, c->width);
    free(o);
}

/* The bytes from the first to the last byte a strided copy touches on one side. */
static size_t footprint(size_t pitch, size_t slice, size_t width, size_t height, size_t depth)
{
    return (depth - 1) * slice + (height - 1) * pitch + width;
}

static bool side_valid(const void *p, bool device, size_t bytes)
{
    return device ? emu_range_valid(p, bytes) : p != NULL;
}

cudaError_t emu_copy_enqueue(struct CUstream_st *s, const struct emu_copy *c, const char *what, uint64_t *seq)
{
    if (c->width == 0 || c->height == 0 || c->depth == 0)
        return cudaSuccess;
    if ((c->height > 1 && (c->dpitch < c->width || c->spitch < c->width)) ||
        (c->depth > 1 && (c->dslice < c->dpitch * c->height || c->sslice < c->spitch * c->height)))
        return cudaErrorInvalidPitchValue;
    if (!side_valid(c->dst, c->dst_device, footprint(c->dpitch, c->dslice, c->width, c->height, c->depth)) ||
        !side_valid(c->src, c->src_device, footprint(c->spitch, c->sslice, c->width, c->height, c->depth)))
        return cudaErrorInvalidValue;
    struct copy_op *o = malloc(sizeof *o);
    if (o == NULL)
        return cudaErrorMemoryAllocation;
    o->c = *c;
    cudaError_t err = emu_enqueue_flat(s, copy_run, o, sizeof *o, what, seq);
    if (err != cudaSuccess)
        free(o);
    return err;
}

/* Which sides of a runtime copy of `kind` are device memory. */
cudaError_t emu_copy_kind(enum cudaMemcpyKind kind, bool *dst_device, bool *src_device)
{
    switch (kind) {
    case cudaMemcpyHostToHost:
    case cudaMemcpyDefault:   /* UVA: untracked pointers are host memory */
        *dst_device = *src_device = false;
        return cudaSuccess;
    case cudaMemcpyHostToDevice:
        *dst_device = true;
        *src_device = false;
        return cudaSuccess;
    case cudaMemcpyDeviceToHost:
        *dst_device = false;
        *src_device = true;
        return cudaSuccess;
    case cudaMemcpyDeviceToDevice:
        *dst_device = *src_device = true;
        return cudaSuccess;
    default:
        return cudaErrorInvalidMemcpyDirection;
    }
}

static cudaError_t copy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                        cudaStream_t stream, bool ptsz, bool wait)
{
    struct CUstream_st *s;
    cudaError_t err = emu_stream_resolve(stream, ptsz, &s);
    if (err == cudaSuccess && wait)
        err = emu_capture_unsafe();   /* a synchronous copy */
    if (err != cudaSuccess)
        return err;
    struct emu_copy c = {dst, src, count, count, count, count, count, 1, 1, false, false};
    if ((err = emu_copy_kind(kind, &c.dst_device, &c.src_device)) != cudaSuccess)
        return err;
    if (count == 0)
        return cudaSuccess;
    char what[80];
    snprintf(what, sizeof what, "cudaMemcpy%s %zu bytes", wait ? "" : "Async", count);
    uint64_t seq = 0;
    err = emu_copy_enqueue(s, &c, what, &seq);
    if (err == cudaSuccess && wait)
        emu_stream_wait_seq(s, seq);
    return err;
}

/* cudaMemcpyAsync reports cuMemcpyAsync (a unified-addressing copy of the same bytes). */
static cudaError_t copy_async(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream,
                              bool ptsz)
{
    cuMemcpyAsync_params d = {(CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, count, (CUstream)stream};
    return ptsz ? EMU_NESTED(CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz, "cuMemcpyAsync_ptsz", &d,
                             copy(dst, src, count, kind, stream, true, false))
                : EMU_NESTED(CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync, "cuMemcpyAsync", &d,
                             copy(dst, src, count, kind, stream, false, false));
}

EMU_EXPORT cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream)
{
    cudaMemcpyAsync_v3020_params p = {dst, src, count, kind, stream};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, "cudaMemcpyAsync", &p,
               copy_async(dst, src, count, kind, stream, false));
}

EMU_EXPORT cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream)
{
    cudaMemcpyAsync_ptsz_v7000_params p = {dst, src, count, kind, stream};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000, "cudaMemcpyAsync_ptsz", &p,
               copy_async(dst, src, count, kind, stream, true));
}

/* cudaMemcpyBatchAsync (CUDA 13's signature): the copies run as one stream operation.  What CUDA
 * refuses is refused: no copies, no attributes or more than copies, an index list that does not
 * start at 0 or does not increase, an unknown source access order, the legacy stream, a zero
 * size or a NULL pointer. */
struct batch_op {
    size_t n;
    struct emu_copy c[];
};

static void batch_run(void *arg)
{
    struct batch_op *b = arg;
    for (size_t i = 0; i < b->n; i++)
        memmove(b->c[i].dst, b->c[i].src, b->c[i].width);
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
        if (sizes[i] == 0 || !dsts[i] || !srcs[i]) {
            free(b);
            return cudaErrorInvalidValue;
        }
        b->c[i] = (struct emu_copy){.dst = dsts[i], .src = srcs[i], .width = sizes[i], .height = 1, .depth = 1};
    }
    char what[80];
    snprintf(what, sizeof what, "cudaMemcpyBatchAsync %zu copies", count);
    err = emu_enqueue_flat(s, batch_run, b, sizeof *b + count * sizeof b->c[0], what, NULL);
    if (err != cudaSuccess)
        free(b);
    return err;
}

/* Reported as cuMemcpyBatchAsync_v2 (device pointers are addresses; the attribute structs of
 * the two APIs have one layout). */
static cudaError_t copy_batch_nested(void *const *dsts, const void *const *srcs, const size_t *sizes, size_t count,
                                     struct cudaMemcpyAttributes *attrs, size_t *idxs, size_t n_attrs,
                                     cudaStream_t stream, bool ptsz)
{
    _Static_assert(sizeof(CUmemcpyAttributes) == sizeof(struct cudaMemcpyAttributes), "one attribute layout");
    cuMemcpyBatchAsync_v2_params d = {(CUdeviceptr *)(uintptr_t)dsts, (CUdeviceptr *)(uintptr_t)srcs,
                                      (size_t *)(uintptr_t)sizes, count, (CUmemcpyAttributes *)attrs, idxs, n_attrs,
                                      (CUstream)stream};
    return ptsz ? EMU_NESTED(CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync_v2_ptsz, "cuMemcpyBatchAsync_v2_ptsz", &d,
                             copy_batch(dsts, srcs, sizes, count, attrs, idxs, n_attrs, stream, true))
                : EMU_NESTED(CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync_v2, "cuMemcpyBatchAsync_v2", &d,
                             copy_batch(dsts, srcs, sizes, count, attrs, idxs, n_attrs, stream, false));
}

EMU_EXPORT cudaError_t cudaMemcpyBatchAsync(void *const *dsts, const void *const *srcs, const size_t *sizes, size_t count,
                                            struct cudaMemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
                                            cudaStream_t stream)
{
    cudaMemcpyBatchAsync_v13000_params p = {dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, stream};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_v13000, "cudaMemcpyBatchAsync", &p,
               copy_batch_nested(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, stream, false));
}

EMU_EXPORT cudaError_t cudaMemcpyBatchAsync_ptsz(void *const *dsts, const void *const *srcs, const size_t *sizes,
                                                 size_t count, struct cudaMemcpyAttributes *attrs, size_t *attrsIdxs,
                                                 size_t numAttrs, cudaStream_t stream)
{
    cudaMemcpyBatchAsync_ptsz_v13000_params p = {dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, stream};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_ptsz_v13000, "cudaMemcpyBatchAsync_ptsz", &p,
               copy_batch_nested(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, stream, true));
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

/* ---- memsets ---- */
struct set_op {
    char *dst;
    size_t pitch, slice, width, height, depth;
    uint32_t value;
    unsigned elem;
};

static void set_row(char *row, size_t width, uint32_t value, unsigned elem)
{
    if (elem == 1) {
        memset(row, (int)(value & 0xff), width);
        return;
    }
    uint16_t v16 = (uint16_t)value;
    for (size_t i = 0; i < width; i++)
        memcpy(row + elem * i, elem == 2 ? (const void *)&v16 : (const void *)&value, elem);
}

static void set_run(void *arg)
{
    struct set_op *o = arg;
    for (size_t z = 0; z < o->depth; z++)
        for (size_t y = 0; y < o->height; y++)
            set_row(o->dst + z * o->slice + y * o->pitch, o->width, o->value, o->elem);
    free(o);
}

cudaError_t emu_set_enqueue(struct CUstream_st *s, void *dst, size_t pitch, size_t slice, uint32_t value,
                            unsigned elem_size, size_t width, size_t height, size_t depth, const char *what,
                            uint64_t *seq)
{
    if (width == 0 || height == 0 || depth == 0)
        return cudaSuccess;
    size_t row = width * elem_size;
    if ((height > 1 && pitch < row) || (depth > 1 && slice < pitch * height))
        return cudaErrorInvalidPitchValue;
    if ((uintptr_t)dst % elem_size != 0 || (height > 1 && pitch % elem_size != 0) ||
        !emu_range_valid(dst, (depth - 1) * slice + (height - 1) * pitch + row))
        return cudaErrorInvalidValue;
    struct set_op *o = malloc(sizeof *o);
    if (o == NULL)
        return cudaErrorMemoryAllocation;
    *o = (struct set_op){dst, pitch, slice, width, height, depth, value, elem_size};
    cudaError_t err = emu_enqueue_flat(s, set_run, o, sizeof *o, what, seq);
    if (err != cudaSuccess)
        free(o);
    return err;
}

static cudaError_t set(void *dst, int value, size_t count, cudaStream_t stream, bool ptsz, bool wait)
{
    struct CUstream_st *s;
    cudaError_t err = emu_stream_resolve(stream, ptsz, &s);
    if (err == cudaSuccess && wait)
        err = emu_capture_unsafe();
    if (err != cudaSuccess)
        return err;
    char what[80];
    snprintf(what, sizeof what, "cudaMemset%s %zu bytes", wait ? "" : "Async", count);
    uint64_t seq = 0;
    err = emu_set_enqueue(s, dst, count, 0, (uint32_t)(unsigned char)value, 1, count, 1, 1, what, &seq);
    if (err == cudaSuccess && wait && seq)
        emu_stream_wait_seq(s, seq);
    return err;
}

/* cudaMemsetAsync reports cuMemsetD8Async. */
static cudaError_t set_async(void *dst, int value, size_t count, cudaStream_t stream, bool ptsz)
{
    cuMemsetD8Async_params d = {(CUdeviceptr)(uintptr_t)dst, (unsigned char)value, count, (CUstream)stream};
    return ptsz ? EMU_NESTED(CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz, "cuMemsetD8Async_ptsz", &d,
                             set(dst, value, count, stream, true, false))
                : EMU_NESTED(CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async, "cuMemsetD8Async", &d,
                             set(dst, value, count, stream, false, false));
}

EMU_EXPORT cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream)
{
    cudaMemsetAsync_v3020_params p = {devPtr, value, count, stream};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020, "cudaMemsetAsync", &p,
               set_async(devPtr, value, count, stream, false));
}

EMU_EXPORT cudaError_t cudaMemsetAsync_ptsz(void *devPtr, int value, size_t count, cudaStream_t stream)
{
    cudaMemsetAsync_ptsz_v7000_params p = {devPtr, value, count, stream};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000, "cudaMemsetAsync_ptsz", &p,
               set_async(devPtr, value, count, stream, true));
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

/* ---- emulated kernels ---- */
typedef void (*usbyteEmuKernelFn)(void **args);

struct kernel_op {
    usbyteEmuKernelFn fn;
    void **args;
    int device;
};

static void kernel_call(void *arg)
{
    struct kernel_op *k = arg;
    k->fn(k->args);
}

static void kernel_run(void *arg)
{
    struct kernel_op *k = arg;
    emu_compute_run(k->device, kernel_call, k);
    free(k);
}

cudaError_t emu_kernel_enqueue(struct CUstream_st *s, const void *func, void **args, const char *what)
{
    if (func == NULL)
        return cudaErrorInvalidDeviceFunction;
    /* "A kernel launch will fail if it is issued to a stream that is not associated to the
     * current device" (copies and event waits may cross devices). */
    if (!s->is_legacy && !s->implicit && s->device != emu_current_device())
        return cudaErrorInvalidResourceHandle;
    struct kernel_op *k = malloc(sizeof *k);
    if (k == NULL)
        return cudaErrorMemoryAllocation;
    usbyteEmuKernelFn fn;
    memcpy(&fn, &func, sizeof fn);   /* object-to-function pointer, as the convention says */
    *k = (struct kernel_op){fn, args, emu_stream_device(s)};
    cudaError_t err = emu_enqueue_flat(s, kernel_run, k, sizeof *k, what, NULL);
    if (err != cudaSuccess)
        free(k);
    return err;
}

/* The emulated device's resident blocks: its multiprocessor count (cuDeviceGetAttribute says
 * 132) times at most 32 blocks and 2048 threads each. */
#define EMU_SMS 132u

cudaError_t emu_check_launch(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                             bool cooperative)
{
    if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0 || (uint64_t)bx * by * bz > 1024)
        return cudaErrorInvalidConfiguration;
    if (cooperative) {
        uint64_t threads = (uint64_t)bx * by * bz, per_sm = 2048 / threads < 32 ? 2048 / threads : 32;
        if ((uint64_t)gx * gy * gz > per_sm * EMU_SMS)
            return cudaErrorCooperativeLaunchTooLarge;
    }
    return cudaSuccess;
}

/* ---- host functions and stream callbacks ---- */
struct host_fn_op {
    void (*fn)(void *);
    cudaStreamCallback_t callback;
    cudaStream_t stream;
    void *user_data;
    int device;
};

static void host_fn_call(void *arg)
{
    struct host_fn_op *h = arg;
    if (h->fn)
        h->fn(h->user_data);
    else
        h->callback(h->stream, cudaSuccess, h->user_data);
}

static void host_fn_run(void *arg)
{
    struct host_fn_op *h = arg;
    emu_compute_run(h->device, host_fn_call, h);
    free(h);
}

static cudaError_t host_op(struct CUstream_st *s, cudaStream_t stream, void (*fn)(void *), cudaStreamCallback_t callback,
                           void *user_data, const char *what)
{
    if (fn == NULL && callback == NULL)
        return cudaErrorInvalidValue;
    struct host_fn_op *h = malloc(sizeof *h);
    if (h == NULL)
        return cudaErrorMemoryAllocation;
    *h = (struct host_fn_op){fn, callback, stream, user_data, emu_stream_device(s)};
    cudaError_t err = emu_enqueue_flat(s, host_fn_run, h, sizeof *h, what, NULL);
    if (err != cudaSuccess)
        free(h);
    return err;
}

cudaError_t emu_host_enqueue(struct CUstream_st *s, void (*fn)(void *), void *arg, const char *what)
{
    return host_op(s, NULL, fn, NULL, arg, what);
}

static cudaError_t host_fn(cudaStream_t stream, cudaHostFn_t fn, cudaStreamCallback_t callback, void *user_data, bool ptsz)
{
    if (fn == NULL && callback == NULL)
        return cudaErrorInvalidValue;
    struct CUstream_st *s;
    cudaError_t err = emu_stream_resolve(stream, ptsz, &s);
    if (err != cudaSuccess)
        return err;
    return host_op(s, stream, fn, callback, user_data, fn ? "cudaLaunchHostFunc" : "cudaStreamAddCallback");
}

/* cudaLaunchHostFunc reports cuLaunchHostFunc. */
static cudaError_t launch_host_func(cudaStream_t stream, cudaHostFn_t fn, void *user_data, bool ptsz)
{
    cuLaunchHostFunc_params d = {(CUstream)stream, fn, user_data};
    return ptsz ? EMU_NESTED(CUPTI_DRIVER_TRACE_CBID_cuLaunchHostFunc_ptsz, "cuLaunchHostFunc_ptsz", &d,
                             host_fn(stream, fn, NULL, user_data, true))
                : EMU_NESTED(CUPTI_DRIVER_TRACE_CBID_cuLaunchHostFunc, "cuLaunchHostFunc", &d,
                             host_fn(stream, fn, NULL, user_data, false));
}

EMU_EXPORT cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData)
{
    cudaLaunchHostFunc_v10000_params p = {stream, fn, userData};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchHostFunc_v10000, "cudaLaunchHostFunc", &p,
               launch_host_func(stream, fn, userData, false));
}

EMU_EXPORT cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t stream, cudaHostFn_t fn, void *userData)
{
    cudaLaunchHostFunc_ptsz_v10000_params p = {stream, fn, userData};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchHostFunc_ptsz_v10000, "cudaLaunchHostFunc_ptsz", &p,
               launch_host_func(stream, fn, userData, true));
}

/* cudaStreamAddCallback reports cuStreamAddCallback. */
static cudaError_t add_callback(cudaStream_t stream, cudaStreamCallback_t callback, void *user_data, unsigned flags, bool ptsz)
{
    if (flags != 0)
        return cudaErrorInvalidValue;
    return host_fn(stream, NULL, callback, user_data, ptsz);
}

static cudaError_t add_callback_nested(cudaStream_t stream, cudaStreamCallback_t callback, void *user_data,
                                       unsigned flags, bool ptsz)
{
    CUstreamCallback cb;
    _Static_assert(sizeof cb == sizeof callback, "one callback ABI");
    memcpy(&cb, &callback, sizeof cb);
    cuStreamAddCallback_params d = {(CUstream)stream, cb, user_data, flags};
    return ptsz ? EMU_NESTED(CUPTI_DRIVER_TRACE_CBID_cuStreamAddCallback_ptsz, "cuStreamAddCallback_ptsz", &d,
                             add_callback(stream, callback, user_data, flags, true))
                : EMU_NESTED(CUPTI_DRIVER_TRACE_CBID_cuStreamAddCallback, "cuStreamAddCallback", &d,
                             add_callback(stream, callback, user_data, flags, false));
}

EMU_EXPORT cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback, void *userData, unsigned int flags)
{
    cudaStreamAddCallback_v5000_params p = {stream, callback, userData, flags};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaStreamAddCallback_v5000, "cudaStreamAddCallback", &p,
               add_callback_nested(stream, callback, userData, flags, false));
}

EMU_EXPORT cudaError_t cudaStreamAddCallback_ptsz(cudaStream_t stream, cudaStreamCallback_t callback, void *userData, unsigned int flags)
{
    cudaStreamAddCallback_ptsz_v7000_params p = {stream, callback, userData, flags};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaStreamAddCallback_ptsz_v7000, "cudaStreamAddCallback_ptsz", &p,
               add_callback_nested(stream, callback, userData, flags, true));
}
