/* Stream work shared by the emulated runtime's entry points (work.c, launch.c, copy_nd.c,
 * graph.c) and the private functions the driver stand-in calls: strided copies and memsets,
 * emulated kernels and host functions, each one stream operation (work.c). */
#ifndef USBYTE_EMU_CUDART_WORK_H
#define USBYTE_EMU_CUDART_WORK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

struct CUstream_st;

/* A copy of depth slices of height rows of width bytes; 1D copies have height = depth = 1.
 * dst_device/src_device: that side must lie inside one cudaMalloc/cudaMallocHost allocation
 * (device memory or pinned host memory); otherwise any non-NULL host pointer will do. */
struct emu_copy {
    char *dst;
    const char *src;
    size_t dpitch, spitch;     /* bytes between rows */
    size_t dslice, sslice;     /* bytes between slices */
    size_t width, height, depth;
    bool dst_device, src_device;
};

/* Checks c (pitches at least the width, ranges valid) and enqueues it on s as one operation.
 * A copy of nothing (a zero extent) enqueues nothing and succeeds. */
cudaError_t emu_copy_enqueue(struct CUstream_st *s, const struct emu_copy *c, const char *what, uint64_t *seq);
/* Which sides of a runtime copy of `kind` must be device memory (cudaErrorInvalidMemcpyDirection
 * for a kind that is none). */
cudaError_t emu_copy_kind(enum cudaMemcpyKind kind, bool *dst_device, bool *src_device);

/* Sets depth slices of height rows of width elements of elem_size bytes (1, 2 or 4) to value,
 * rows pitch bytes and slices slice bytes apart; dst must be aligned to elem_size and the whole
 * footprint lie inside one allocation.  A zero extent enqueues nothing and succeeds. */
cudaError_t emu_set_enqueue(struct CUstream_st *s, void *dst, size_t pitch, size_t slice, uint32_t value,
                            unsigned elem_size, size_t width, size_t height, size_t depth, const char *what,
                            uint64_t *seq);

/* An emulated kernel: func is a host function void fn(void **args) that the stream's worker
 * calls with args (docs/emulator-cuda.md, "No device code"). */
cudaError_t emu_kernel_enqueue(struct CUstream_st *s, const void *func, void **args, const char *what);

/* The launch configuration checks CUDA makes: every dimension at least 1, at most 1024 threads
 * a block; cooperative launches also need the whole grid resident at once. */
cudaError_t emu_check_launch(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                             bool cooperative);

/* A host function fn(arg) run by the stream's worker in stream order. */
cudaError_t emu_host_enqueue(struct CUstream_st *s, void (*fn)(void *), void *arg, const char *what);

#endif
