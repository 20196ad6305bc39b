/* Stream memory operations: cuStreamWaitValue32/64 and cuStreamWriteValue32/64 (all the names
 * the real libcuda.so.1 exports: plain, _v2, _ptsz and _v2_ptsz).  This library checks the
 * arguments as the driver does and reports the call to CUPTI; the emulated runtime executes
 * the ops (usbyteEmuStreamMemOp, tests/emu/cudart/values.c), where the hardware-queue model
 * sees what each wait waits for. */
#include <stdbool.h>
#include <stdint.h>

#include <cupti.h>   /* the driver params structs need its v1 typedefs */

#include "../emu_internal.h"
#include "driver.h"

#undef cuStreamWaitValue32
#undef cuStreamWaitValue64
#undef cuStreamWriteValue32
#undef cuStreamWriteValue64

static CUresult enqueue_mem_op(CUstream stream, bool ptsz, CUdeviceptr addr, uint64_t value,
                               unsigned flags, bool is64, bool is_wait)
{
    size_t size = is64 ? 8 : 4;
    void *p = (void *)(uintptr_t)addr;
    if ((uintptr_t)p % size != 0 || !usbyteEmuValidRange(p, size))
        return CUDA_ERROR_INVALID_VALUE;
    if (is_wait ? (flags & ~(unsigned)CU_STREAM_WAIT_VALUE_FLUSH) > CU_STREAM_WAIT_VALUE_NOR
                : (flags & ~(unsigned)CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    cudaError_t err = usbyteEmuStreamMemOp((cudaStream_t)stream, ptsz, is_wait, p, value,
                                           is_wait ? flags & 3u : 0, is64);
    return emu_cu_result(err);
}

/* Each entry point reports itself to a CUPTI driver-domain subscriber, then enqueues. */
#define MEM_OP_ENTRY(NAME, VALUE_T, IS64, IS_WAIT, PTSZ, PARAMS_T)                                   \
    EMU_CU_EXPORT CUresult NAME(CUstream stream, CUdeviceptr addr, VALUE_T value, unsigned int flags) \
    {                                                                                                 \
        PARAMS_T params = {stream, addr, value, flags};                                               \
        uint64_t correlation = 0;                                                                     \
        uint32_t id = usbyteEmuApiCallback(1, CUPTI_DRIVER_TRACE_CBID_##NAME, 0, #NAME, &params,     \
                                           NULL, 0, &correlation);                                    \
        CUresult r = enqueue_mem_op(stream, PTSZ, addr, value, flags, IS64, IS_WAIT);                 \
        usbyteEmuApiCallback(1, CUPTI_DRIVER_TRACE_CBID_##NAME, 1, #NAME, &params, &r, id, &correlation); \
        return r;                                                                                     \
    }

MEM_OP_ENTRY(cuStreamWaitValue32, cuuint32_t, false, true, false, cuStreamWaitValue32_params)
MEM_OP_ENTRY(cuStreamWaitValue32_ptsz, cuuint32_t, false, true, true, cuStreamWaitValue32_ptsz_params)
MEM_OP_ENTRY(cuStreamWaitValue32_v2, cuuint32_t, false, true, false, cuStreamWaitValue32_v2_params)
MEM_OP_ENTRY(cuStreamWaitValue32_v2_ptsz, cuuint32_t, false, true, true, cuStreamWaitValue32_v2_ptsz_params)
MEM_OP_ENTRY(cuStreamWaitValue64, cuuint64_t, true, true, false, cuStreamWaitValue64_params)
MEM_OP_ENTRY(cuStreamWaitValue64_ptsz, cuuint64_t, true, true, true, cuStreamWaitValue64_ptsz_params)
MEM_OP_ENTRY(cuStreamWaitValue64_v2, cuuint64_t, true, true, false, cuStreamWaitValue64_v2_params)
MEM_OP_ENTRY(cuStreamWaitValue64_v2_ptsz, cuuint64_t, true, true, true, cuStreamWaitValue64_v2_ptsz_params)
MEM_OP_ENTRY(cuStreamWriteValue32, cuuint32_t, false, false, false, cuStreamWriteValue32_params)
MEM_OP_ENTRY(cuStreamWriteValue32_ptsz, cuuint32_t, false, false, true, cuStreamWriteValue32_ptsz_params)
MEM_OP_ENTRY(cuStreamWriteValue32_v2, cuuint32_t, false, false, false, cuStreamWriteValue32_v2_params)
MEM_OP_ENTRY(cuStreamWriteValue32_v2_ptsz, cuuint32_t, false, false, true, cuStreamWriteValue32_v2_ptsz_params)
MEM_OP_ENTRY(cuStreamWriteValue64, cuuint64_t, true, false, false, cuStreamWriteValue64_params)
MEM_OP_ENTRY(cuStreamWriteValue64_ptsz, cuuint64_t, true, false, true, cuStreamWriteValue64_ptsz_params)
MEM_OP_ENTRY(cuStreamWriteValue64_v2, cuuint64_t, true, false, false, cuStreamWriteValue64_v2_params)
MEM_OP_ENTRY(cuStreamWriteValue64_v2_ptsz, cuuint64_t, true, false, true, cuStreamWriteValue64_v2_ptsz_params)
