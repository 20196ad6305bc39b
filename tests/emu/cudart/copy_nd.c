/* Pitched and peer copies and memsets: cudaMemcpy2DAsync, cudaMemcpy3DAsync, cudaMemcpyPeerAsync,
 * cudaMemcpy3DPeerAsync, cudaMemset2DAsync and cudaMemset3DAsync (and their _ptsz forms), each one
 * stream operation that reports the driver function it corresponds to; and the private entries
 * the driver stand-in's copies and memsets enqueue through.  The emulator has no CUDA arrays: a
 * copy that names one is refused with cudaErrorNotSupported. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <cupti.h>   /* the runtime and driver callback ids and params structs */

#include "device.h"
#include "errors.h"
#include "export.h"
#include "stream.h"
#include "trace.h"
#include "work.h"

static CUmemorytype memory_type(bool device, enum cudaMemcpyKind kind)
{
    return kind == cudaMemcpyDefault ? CU_MEMORYTYPE_UNIFIED : device ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
}

static cudaError_t enqueue(const struct emu_copy *c, cudaStream_t stream, bool ptsz, const char *what)
{
    struct CUstream_st *s;
    cudaError_t err = emu_stream_resolve(stream, ptsz, &s);
    if (err != cudaSuccess)
        return err;
    return emu_copy_enqueue(s, c, what, NULL);
}

/* ---- cudaMemcpy2DAsync, reported as cuMemcpy2DAsync_v2 ---- */
static cudaError_t copy_2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                           enum cudaMemcpyKind kind, cudaStream_t stream, bool ptsz)
{
    struct emu_copy c = {dst, src, dpitch, spitch, 0, 0, width, height, 1, false, false};
    cudaError_t err = emu_copy_kind(kind, &c.dst_device, &c.src_device);
    if (err != cudaSuccess)
        return err;
    if (width > dpitch || width > spitch)
        return cudaErrorInvalidPitchValue;
    return enqueue(&c, stream, ptsz, "cudaMemcpy2DAsync");
}

static cudaError_t copy_2d_nested(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                                  enum cudaMemcpyKind kind, cudaStream_t stream, bool ptsz)
{
    bool dst_device = false, src_device = false;
    emu_copy_kind(kind, &dst_device, &src_device);
    CUDA_MEMCPY2D m = {.srcMemoryType = memory_type(src_device, kind), .srcHost = src,
                       .srcDevice = (CUdeviceptr)(uintptr_t)src, .srcPitch = spitch,
                       .dstMemoryType = memory_type(dst_device, kind), .dstHost = dst,
                       .dstDevice = (CUdeviceptr)(uintptr_t)dst, .dstPitch = dpitch, .WidthInBytes = width,
                       .Height = height};
    cuMemcpy2DAsync_v2_params d = {&m, (CUstream)stream};
    return ptsz ? EMU_NESTED(CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DAsync_v2_ptsz, "cuMemcpy2DAsync_v2_ptsz", &d,
                             copy_2d(dst, dpitch, src, spitch, width, height, kind, stream, true))
                : EMU_NESTED(CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DAsync_v2, "cuMemcpy2DAsync_v2", &d,
                             copy_2d(dst, dpitch, src, spitch, width, height, kind, stream, false));
}

EMU_EXPORT cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                         size_t height, enum cudaMemcpyKind kind, cudaStream_t stream)
{
    cudaMemcpy2DAsync_v3020_params p = {dst, dpitch, src, spitch, width, height, kind, stream};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_v3020, "cudaMemcpy2DAsync", &p,
               copy_2d_nested(dst, dpitch, src, spitch, width, height, kind, stream, false));
}

EMU_EXPORT cudaError_t cudaMemcpy2DAsync_ptsz(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                              size_t height, enum cudaMemcpyKind kind, cudaStream_t stream)
{
    cudaMemcpy2DAsync_ptsz_v7000_params p = {dst, dpitch, src, spitch, width, height, kind, stream};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_ptsz_v7000, "cudaMemcpy2DAsync_ptsz", &p,
               copy_2d_nested(dst, dpitch, src, spitch, width, height, kind, stream, true));
}

/* ---- cudaMemcpy3DAsync and cudaMemcpy3DPeerAsync ---- */
static char *at(struct cudaPitchedPtr p, struct cudaPos pos)
{
    return (char *)p.ptr + pos.z * p.pitch * p.ysize + pos.y * p.pitch + pos.x;
}

static cudaError_t copy_3d_of(cudaArray_t src_array, struct cudaPos src_pos, struct cudaPitchedPtr src_ptr,
                              cudaArray_t dst_array, struct cudaPos dst_pos, struct cudaPitchedPtr dst_ptr,
                              struct cudaExtent extent, enum cudaMemcpyKind kind, cudaStream_t stream, bool ptsz,
                              const char *what)
{
    if (src_array != NULL || dst_array != NULL)
        return cudaErrorNotSupported;
    if (src_ptr.ptr == NULL || dst_ptr.ptr == NULL)
        return cudaErrorInvalidValue;
    if (extent.width > src_ptr.pitch || extent.width > dst_ptr.pitch)
        return cudaErrorInvalidPitchValue;
    struct emu_copy c = {at(dst_ptr, dst_pos), at(src_ptr, src_pos), dst_ptr.pitch, src_ptr.pitch,
                         dst_ptr.pitch * dst_ptr.ysize, src_ptr.pitch * src_ptr.ysize,
                         extent.width, extent.height, extent.depth, false, false};
    cudaError_t err = emu_copy_kind(kind, &c.dst_device, &c.src_device);
    if (err != cudaSuccess)
        return err;
    return enqueue(&c, stream, ptsz, what);
}

static cudaError_t copy_3d(const struct cudaMemcpy3DParms *p, cudaStream_t stream, bool ptsz)
{
    if (p == NULL)
        return cudaErrorInvalidValue;
    return copy_3d_of(p->srcArray, p->srcPos, p->srcPtr, p->dstArray, p->dstPos, p->dstPtr, p->extent, p->kind, stream,
                      ptsz, "cudaMemcpy3DAsync");
}

static void fill_3d(CUDA_MEMCPY3D *m, struct cudaPos src_pos, struct cudaPitchedPtr src_ptr, struct cudaPos dst_pos,
                    struct cudaPitchedPtr dst_ptr, struct cudaExtent extent, enum cudaMemcpyKind kind)
{
    bool dst_device = false, src_device = false;
    emu_copy_kind(kind, &dst_device, &src_device);
    *m = (CUDA_MEMCPY3D){.srcXInBytes = src_pos.x, .srcY = src_pos.y, .srcZ = src_pos.z,
                         .srcMemoryType = memory_type(src_device, kind), .srcHost = src_ptr.ptr,
                         .srcDevice = (CUdeviceptr)(uintptr_t)src_ptr.ptr, .srcPitch = src_ptr.pitch,
                         .srcHeight = src_ptr.ysize, .dstXInBytes = dst_pos.x, .dstY = dst_pos.y, .dstZ = dst_pos.z,
                         .dstMemoryType = memory_type(dst_device, kind), .dstHost = dst_ptr.ptr,
                         .dstDevice = (CUdeviceptr)(uintptr_t)dst_ptr.ptr, .dstPitch = dst_ptr.pitch,
                         .dstHeight = dst_ptr.ysize, .WidthInBytes = extent.width, .Height = extent.height,
                         .Depth = extent.depth};
}

static cudaError_t copy_3d_nested(const struct cudaMemcpy3DParms *p, cudaStream_t stream, bool ptsz)
{
    if (p == NULL)
        return copy_3d(p, stream, ptsz);
    CUDA_MEMCPY3D m;
    fill_3d(&m, p->srcPos, p->srcPtr, p->dstPos, p->dstPtr, p->extent, p->kind);
    cuMemcpy3DAsync_v2_params d = {&m, (CUstream)stream};
    return ptsz ? EMU_NESTED(CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DAsync_v2_ptsz, "cuMemcpy3DAsync_v2_ptsz", &d,
                             copy_3d(p, stream, true))
                : EMU_NESTED(CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DAsync_v2, "cuMemcpy3DAsync_v2", &d,
                             copy_3d(p, stream, false));
}

EMU_EXPORT cudaError_t cudaMemcpy3DAsync(const struct cudaMemcpy3DParms *p, cudaStream_t stream)
{
    cudaMemcpy3DAsync_v3020_params q = {p, stream};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DAsync_v3020, "cudaMemcpy3DAsync", &q, copy_3d_nested(p, stream, false));
}

EMU_EXPORT cudaError_t cudaMemcpy3DAsync_ptsz(const struct cudaMemcpy3DParms *p, cudaStream_t stream)
{
    cudaMemcpy3DAsync_ptsz_v7000_params q = {p, stream};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DAsync_ptsz_v7000, "cudaMemcpy3DAsync_ptsz", &q,
               copy_3d_nested(p, stream, true));
}

static bool device_ok(int device)
{
    return device >= 0 && device < emu_device_count();
}

/* Peer copies are device to device: both sides must be device memory of valid devices (one
 * address space here, so the devices change nothing else). */
static cudaError_t copy_3d_peer(const struct cudaMemcpy3DPeerParms *p, cudaStream_t stream, bool ptsz)
{
    if (p == NULL)
        return cudaErrorInvalidValue;
    if (!device_ok(p->srcDevice) || !device_ok(p->dstDevice))
        return cudaErrorInvalidDevice;
    return copy_3d_of(p->srcArray, p->srcPos, p->srcPtr, p->dstArray, p->dstPos, p->dstPtr, p->extent,
                      cudaMemcpyDeviceToDevice, stream, ptsz, "cudaMemcpy3DPeerAsync");
}

static cudaError_t copy_3d_peer_nested(const struct cudaMemcpy3DPeerParms *p, cudaStream_t stream, bool ptsz)
{
    if (p == NULL)
        return copy_3d_peer(p, stream, ptsz);
    CUDA_MEMCPY3D m;
    fill_3d(&m, p->srcPos, p->srcPtr, p->dstPos, p->dstPtr, p->extent, cudaMemcpyDeviceToDevice);
    CUcontext ctx = (CUcontext)usbyteEmuContext();
    CUDA_MEMCPY3D_PEER q = {.srcXInBytes = m.srcXInBytes, .srcY = m.srcY, .srcZ = m.srcZ,
                            .srcMemoryType = m.srcMemoryType, .srcDevice = m.srcDevice, .srcContext = ctx,
                            .srcPitch = m.srcPitch, .srcHeight = m.srcHeight, .dstXInBytes = m.dstXInBytes,
                            .dstY = m.dstY, .dstZ = m.dstZ, .dstMemoryType = m.dstMemoryType,
                            .dstDevice = m.dstDevice, .dstContext = ctx, .dstPitch = m.dstPitch,
                            .dstHeight = m.dstHeight, .WidthInBytes = m.WidthInBytes, .Height = m.Height,
                            .Depth = m.Depth};
    cuMemcpy3DPeerAsync_params d = {&q, (CUstream)stream};
    return ptsz ? EMU_NESTED(CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DPeerAsync_ptsz, "cuMemcpy3DPeerAsync_ptsz", &d,
                             copy_3d_peer(p, stream, true))
                : EMU_NESTED(CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DPeerAsync, "cuMemcpy3DPeerAsync", &d,
                             copy_3d_peer(p, stream, false));
}

EMU_EXPORT cudaError_t cudaMemcpy3DPeerAsync(const struct cudaMemcpy3DPeerParms *p, cudaStream_t stream)
{
    cudaMemcpy3DPeerAsync_v4000_params q = {p, stream};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DPeerAsync_v4000, "cudaMemcpy3DPeerAsync", &q,
               copy_3d_peer_nested(p, stream, false));
}

EMU_EXPORT cudaError_t cudaMemcpy3DPeerAsync_ptsz(const struct cudaMemcpy3DPeerParms *p, cudaStream_t stream)
{
    cudaMemcpy3DPeerAsync_ptsz_v7000_params q = {p, stream};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DPeerAsync_ptsz_v7000, "cudaMemcpy3DPeerAsync_ptsz", &q,
               copy_3d_peer_nested(p, stream, true));
}

/* ---- cudaMemcpyPeerAsync, reported as cuMemcpyPeerAsync (no _ptsz form in CUDA) ---- */
static cudaError_t copy_peer(void *dst, int dst_device, const void *src, int src_device, size_t count,
                             cudaStream_t stream)
{
    if (!device_ok(dst_device) || !device_ok(src_device))
        return cudaErrorInvalidDevice;
    struct emu_copy c = {dst, src, count, count, count, count, count, 1, 1, true, true};
    return enqueue(&c, stream, false, "cudaMemcpyPeerAsync");
}

EMU_EXPORT cudaError_t cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src, int srcDevice, size_t count,
                                           cudaStream_t stream)
{
    cudaMemcpyPeerAsync_v4000_params p = {dst, dstDevice, src, srcDevice, count, stream};
    CUcontext ctx = (CUcontext)usbyteEmuContext();
    cuMemcpyPeerAsync_params d = {(CUdeviceptr)(uintptr_t)dst, ctx, (CUdeviceptr)(uintptr_t)src, ctx, count,
                                  (CUstream)stream};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeerAsync_v4000, "cudaMemcpyPeerAsync", &p,
               EMU_NESTED(CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync, "cuMemcpyPeerAsync", &d,
                          copy_peer(dst, dstDevice, src, srcDevice, count, stream)));
}

/* ---- cudaMemset2DAsync (reported as cuMemsetD2D8Async) and cudaMemset3DAsync (the driver has
 * no 3D memset: no driver function is reported) ---- */
static cudaError_t set_3d(void *dst, size_t pitch, size_t slice, int value, size_t width, size_t height, size_t depth,
                          cudaStream_t stream, bool ptsz, const char *what)
{
    if (width > pitch && height > 1)
        return cudaErrorInvalidPitchValue;
    struct CUstream_st *s;
    cudaError_t err = emu_stream_resolve(stream, ptsz, &s);
    if (err != cudaSuccess)
        return err;
    if (depth > 1 && slice < pitch * height)
        return cudaErrorInvalidValue;
    return emu_set_enqueue(s, dst, pitch, slice, (uint32_t)(unsigned char)value, 1, width, height, depth, what, NULL);
}

static cudaError_t set_2d_nested(void *dst, size_t pitch, int value, size_t width, size_t height, cudaStream_t stream,
                                 bool ptsz)
{
    cuMemsetD2D8Async_params d = {(CUdeviceptr)(uintptr_t)dst, pitch, (unsigned char)value, width, height,
                                  (CUstream)stream};
    return ptsz ? EMU_NESTED(CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D8Async_ptsz, "cuMemsetD2D8Async_ptsz", &d,
                             set_3d(dst, pitch, 0, value, width, height, 1, stream, true, "cudaMemset2DAsync"))
                : EMU_NESTED(CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D8Async, "cuMemsetD2D8Async", &d,
                             set_3d(dst, pitch, 0, value, width, height, 1, stream, false, "cudaMemset2DAsync"));
}

EMU_EXPORT cudaError_t cudaMemset2DAsync(void *devPtr, size_t pitch, int value, size_t width, size_t height,
                                         cudaStream_t stream)
{
    cudaMemset2DAsync_v3020_params p = {devPtr, pitch, value, width, height, stream};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaMemset2DAsync_v3020, "cudaMemset2DAsync", &p,
               set_2d_nested(devPtr, pitch, value, width, height, stream, false));
}

EMU_EXPORT cudaError_t cudaMemset2DAsync_ptsz(void *devPtr, size_t pitch, int value, size_t width, size_t height,
                                              cudaStream_t stream)
{
    cudaMemset2DAsync_ptsz_v7000_params p = {devPtr, pitch, value, width, height, stream};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaMemset2DAsync_ptsz_v7000, "cudaMemset2DAsync_ptsz", &p,
               set_2d_nested(devPtr, pitch, value, width, height, stream, true));
}

static cudaError_t set_3d_pitched(struct cudaPitchedPtr p, int value, struct cudaExtent e, cudaStream_t stream, bool ptsz)
{
    return set_3d(p.ptr, p.pitch, p.pitch * p.ysize, value, e.width, e.height, e.depth, stream, ptsz,
                  "cudaMemset3DAsync");
}

EMU_EXPORT cudaError_t cudaMemset3DAsync(struct cudaPitchedPtr pitchedDevPtr, int value, struct cudaExtent extent,
                                         cudaStream_t stream)
{
    cudaMemset3DAsync_v3020_params p = {pitchedDevPtr, value, extent, stream};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaMemset3DAsync_v3020, "cudaMemset3DAsync", &p,
               set_3d_pitched(pitchedDevPtr, value, extent, stream, false));
}

EMU_EXPORT cudaError_t cudaMemset3DAsync_ptsz(struct cudaPitchedPtr pitchedDevPtr, int value, struct cudaExtent extent,
                                              cudaStream_t stream)
{
    cudaMemset3DAsync_ptsz_v7000_params p = {pitchedDevPtr, value, extent, stream};
    EMU_TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaMemset3DAsync_ptsz_v7000, "cudaMemset3DAsync_ptsz", &p,
               set_3d_pitched(pitchedDevPtr, value, extent, stream, true));
}

/* ---- the private entries of the driver stand-in (../emu_internal.h) ---- */
EMU_EXPORT cudaError_t usbyteEmuCopyAsync(const struct usbyteEmuCopy *c, cudaStream_t stream, int ptsz, const char *what)
{
    if (c == NULL)
        return cudaErrorInvalidValue;
    struct emu_copy e = {c->dst, c->src, c->dpitch, c->spitch, c->dslice, c->sslice, c->width, c->height, c->depth,
                         c->dst_device != 0, c->src_device != 0};
    return enqueue(&e, stream, ptsz != 0, what);
}

EMU_EXPORT cudaError_t usbyteEmuSetAsync(void *dst, size_t pitch, uint32_t value, unsigned elem_size, size_t width,
                                         size_t height, cudaStream_t stream, int ptsz, const char *what)
{
    if (elem_size != 1 && elem_size != 2 && elem_size != 4)
        return cudaErrorInvalidValue;
    struct CUstream_st *s;
    cudaError_t err = emu_stream_resolve(stream, ptsz != 0, &s);
    if (err != cudaSuccess)
        return err;
    return emu_set_enqueue(s, dst, pitch, 0, value, elem_size, width, height, 1, what, NULL);
}
