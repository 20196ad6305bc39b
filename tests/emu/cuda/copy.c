/* Driver-API asynchronous copies and memsets: cuMemcpyHtoDAsync, cuMemcpyDtoHAsync,
 * cuMemcpyDtoDAsync, cuMemcpy2DAsync, cuMemcpy3DAsync (the _v2 entry points cuda.h binds to),
 * cuMemcpyAsync, cuMemcpyPeerAsync, cuMemsetD8/D16/D32Async and cuMemsetD2D8/D2D16/D2D32Async,
 * each with its _ptsz form.  Each checks its arguments as the driver does, reports itself to a
 * CUPTI driver-domain subscriber, and enqueues one stream operation through the emulated
 * runtime's private interface.  The emulator has no CUDA arrays (CUDA_ERROR_NOT_SUPPORTED). */
#include <stdbool.h>
#include <stdint.h>

#include <cupti.h>   /* the driver params structs need its v1 typedefs */

#include "../emu_internal.h"
#include "driver.h"

#undef cuMemcpyHtoDAsync
#undef cuMemcpyDtoHAsync
#undef cuMemcpyDtoDAsync
#undef cuMemcpy2DAsync
#undef cuMemcpy3DAsync
#undef cuMemcpyAsync
#undef cuMemcpyPeerAsync
#undef cuMemsetD8Async
#undef cuMemsetD16Async
#undef cuMemsetD32Async
#undef cuMemsetD2D8Async
#undef cuMemsetD2D16Async
#undef cuMemsetD2D32Async

static void *ptr(CUdeviceptr p)
{
    return (void *)(uintptr_t)p;
}

static CUresult copy_1d(void *dst, bool dst_device, const void *src, bool src_device, size_t bytes, CUstream stream,
                        bool ptsz, const char *what)
{
    struct usbyteEmuCopy c = {dst, src, bytes, bytes, bytes, bytes, bytes, 1, 1, dst_device, src_device};
    return emu_cu_result(usbyteEmuCopyAsync(&c, (cudaStream_t)stream, ptsz, what));
}

#define COPY_1D(NAME, DST_T, DST, DST_DEV, SRC_T, SRC, SRC_DEV, PTSZ)                                    \
    EMU_CU_EXPORT CUresult NAME(DST_T dst, SRC_T src, size_t ByteCount, CUstream hStream)                \
    {                                                                                                    \
        NAME##_params p = {dst, src, ByteCount, hStream};                                                \
        EMU_CU_TRACED(NAME, &p, copy_1d(DST, DST_DEV, SRC, SRC_DEV, ByteCount, hStream, PTSZ, #NAME));    \
    }
COPY_1D(cuMemcpyHtoDAsync_v2, CUdeviceptr, ptr(dst), true, const void *, src, false, false)
COPY_1D(cuMemcpyHtoDAsync_v2_ptsz, CUdeviceptr, ptr(dst), true, const void *, src, false, true)
COPY_1D(cuMemcpyDtoHAsync_v2, void *, dst, false, CUdeviceptr, ptr(src), true, false)
COPY_1D(cuMemcpyDtoHAsync_v2_ptsz, void *, dst, false, CUdeviceptr, ptr(src), true, true)
COPY_1D(cuMemcpyDtoDAsync_v2, CUdeviceptr, ptr(dst), true, CUdeviceptr, ptr(src), true, false)
COPY_1D(cuMemcpyDtoDAsync_v2_ptsz, CUdeviceptr, ptr(dst), true, CUdeviceptr, ptr(src), true, true)
/* Unified addressing: either side may be host or device memory. */
COPY_1D(cuMemcpyAsync, CUdeviceptr, ptr(dst), false, CUdeviceptr, ptr(src), false, false)
COPY_1D(cuMemcpyAsync_ptsz, CUdeviceptr, ptr(dst), false, CUdeviceptr, ptr(src), false, true)

/* One side of a pitched copy: its address at (x, y, z) and whether it must be device memory. */
static CUresult side(CUmemorytype type, const void *host, CUdeviceptr device, size_t x, size_t y, size_t z,
                     size_t pitch, size_t height, const char **at, bool *is_device)
{
    switch (type) {
    case CU_MEMORYTYPE_HOST:
        *at = host;
        *is_device = false;
        break;
    case CU_MEMORYTYPE_DEVICE:
    case CU_MEMORYTYPE_UNIFIED:
        *at = ptr(device);
        *is_device = type == CU_MEMORYTYPE_DEVICE;
        break;
    case CU_MEMORYTYPE_ARRAY:
        return CUDA_ERROR_NOT_SUPPORTED;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (*at == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *at += z * pitch * height + y * pitch + x;
    return CUDA_SUCCESS;
}

static CUresult copy_3d(const CUDA_MEMCPY3D *m, CUstream stream, bool ptsz, const char *what)
{
    if (m == NULL || m->reserved0 != NULL || m->reserved1 != NULL)
        return CUDA_ERROR_INVALID_VALUE;
    const char *src, *dst;
    bool src_device, dst_device;
    CUresult r = side(m->srcMemoryType, m->srcHost, m->srcDevice, m->srcXInBytes, m->srcY, m->srcZ, m->srcPitch,
                      m->srcHeight, &src, &src_device);
    if (r == CUDA_SUCCESS)
        r = side(m->dstMemoryType, m->dstHost, m->dstDevice, m->dstXInBytes, m->dstY, m->dstZ, m->dstPitch,
                 m->dstHeight, &dst, &dst_device);
    if (r != CUDA_SUCCESS)
        return r;
    struct usbyteEmuCopy c = {(void *)(uintptr_t)dst, src, m->dstPitch, m->srcPitch, m->dstPitch * m->dstHeight,
                              m->srcPitch * m->srcHeight, m->WidthInBytes, m->Height, m->Depth, dst_device, src_device};
    return emu_cu_result(usbyteEmuCopyAsync(&c, (cudaStream_t)stream, ptsz, what));
}

static CUresult copy_2d(const CUDA_MEMCPY2D *m, CUstream stream, bool ptsz, const char *what)
{
    if (m == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_MEMCPY3D d = {.srcXInBytes = m->srcXInBytes, .srcY = m->srcY, .srcMemoryType = m->srcMemoryType,
                       .srcHost = m->srcHost, .srcDevice = m->srcDevice, .srcArray = m->srcArray,
                       .srcPitch = m->srcPitch, .srcHeight = m->Height, .dstXInBytes = m->dstXInBytes,
                       .dstY = m->dstY, .dstMemoryType = m->dstMemoryType, .dstHost = m->dstHost,
                       .dstDevice = m->dstDevice, .dstArray = m->dstArray, .dstPitch = m->dstPitch,
                       .dstHeight = m->Height, .WidthInBytes = m->WidthInBytes, .Height = m->Height, .Depth = 1};
    return copy_3d(&d, stream, ptsz, what);
}

#define COPY_ND(NAME, STRUCT, FN, PTSZ)                                               \
    EMU_CU_EXPORT CUresult NAME(const STRUCT *pCopy, CUstream hStream)                \
    {                                                                                 \
        NAME##_params p = {pCopy, hStream};                                           \
        EMU_CU_TRACED(NAME, &p, FN(pCopy, hStream, PTSZ, #NAME));                     \
    }
COPY_ND(cuMemcpy2DAsync_v2, CUDA_MEMCPY2D, copy_2d, false)
COPY_ND(cuMemcpy2DAsync_v2_ptsz, CUDA_MEMCPY2D, copy_2d, true)
COPY_ND(cuMemcpy3DAsync_v2, CUDA_MEMCPY3D, copy_3d, false)
COPY_ND(cuMemcpy3DAsync_v2_ptsz, CUDA_MEMCPY3D, copy_3d, true)

/* Peer copies name each side's context: the one emulated context is the only valid one. */
static CUresult copy_peer(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t bytes,
                          CUstream stream, bool ptsz, const char *what)
{
    if (dst_ctx != (CUcontext)usbyteEmuContext() || src_ctx != (CUcontext)usbyteEmuContext())
        return CUDA_ERROR_INVALID_CONTEXT;
    return copy_1d(ptr(dst), true, ptr(src), true, bytes, stream, ptsz, what);
}

#define COPY_PEER(NAME, PTSZ)                                                                              \
    EMU_CU_EXPORT CUresult NAME(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,        \
                                CUcontext srcContext, size_t ByteCount, CUstream hStream)                  \
    {                                                                                                      \
        NAME##_params p = {dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream};              \
        EMU_CU_TRACED(NAME, &p, copy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream, \
                                          PTSZ, #NAME));                                                   \
    }
COPY_PEER(cuMemcpyPeerAsync, false)
COPY_PEER(cuMemcpyPeerAsync_ptsz, true)

/* ---- memsets: N elements of 1, 2 or 4 bytes (dst aligned to them), or Height rows of Width ---- */
#define MEMSET(NAME, VALUE_T, ELEM, PTSZ)                                                                    \
    EMU_CU_EXPORT CUresult NAME(CUdeviceptr dstDevice, VALUE_T value, size_t N, CUstream hStream)           \
    {                                                                                                       \
        NAME##_params p = {dstDevice, value, N, hStream};                                                   \
        EMU_CU_TRACED(NAME, &p, emu_cu_result(usbyteEmuSetAsync(ptr(dstDevice), N * ELEM, value, ELEM, N, 1, \
                                                                (cudaStream_t)hStream, PTSZ, #NAME)));      \
    }
MEMSET(cuMemsetD8Async, unsigned char, 1, false)
MEMSET(cuMemsetD8Async_ptsz, unsigned char, 1, true)
MEMSET(cuMemsetD16Async, unsigned short, 2, false)
MEMSET(cuMemsetD16Async_ptsz, unsigned short, 2, true)
MEMSET(cuMemsetD32Async, unsigned int, 4, false)
MEMSET(cuMemsetD32Async_ptsz, unsigned int, 4, true)

#define MEMSET_2D(NAME, VALUE_T, ELEM, PTSZ)                                                                 \
    EMU_CU_EXPORT CUresult NAME(CUdeviceptr dstDevice, size_t dstPitch, VALUE_T value, size_t Width,         \
                                size_t Height, CUstream hStream)                                             \
    {                                                                                                        \
        NAME##_params p = {dstDevice, dstPitch, value, Width, Height, hStream};                              \
        EMU_CU_TRACED(NAME, &p, emu_cu_result(usbyteEmuSetAsync(ptr(dstDevice), dstPitch, value, ELEM, Width, \
                                                                Height, (cudaStream_t)hStream, PTSZ, #NAME))); \
    }
MEMSET_2D(cuMemsetD2D8Async, unsigned char, 1, false)
MEMSET_2D(cuMemsetD2D8Async_ptsz, unsigned char, 1, true)
MEMSET_2D(cuMemsetD2D16Async, unsigned short, 2, false)
MEMSET_2D(cuMemsetD2D16Async_ptsz, unsigned short, 2, true)
MEMSET_2D(cuMemsetD2D32Async, unsigned int, 4, false)
MEMSET_2D(cuMemsetD2D32Async_ptsz, unsigned int, 4, true)
