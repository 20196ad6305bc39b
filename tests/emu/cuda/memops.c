/* Stream memory operations: cuStreamWaitValue32/64 and cuStreamWriteValue32/64 (all the names
 * the real libcuda.so.1 exports: plain, _v2, _ptsz and _v2_ptsz).
 *
 * A wait is a stream op that blocks the stream's worker until the condition holds on the word;
 * a write is a stream op that stores the value with release semantics and wakes every waiter
 * in the process at once.  Waiters also re-check every few milliseconds, because a word may be
 * changed by plain host stores too (as a GPU would eventually see host writes to mapped memory);
 * that re-check is only a fallback: no test relies on it. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cupti.h>   /* the driver params structs need its v1 typedefs */

#include "../emu_internal.h"
#include "driver.h"

#undef cuStreamWaitValue32
#undef cuStreamWaitValue64
#undef cuStreamWriteValue32
#undef cuStreamWriteValue64

#define FALLBACK_RECHECK_NS 5000000L

static pthread_mutex_t values_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t values_cv = PTHREAD_COND_INITIALIZER;

struct mem_op {
    void *addr;
    uint64_t value;
    unsigned condition;   /* CU_STREAM_WAIT_VALUE_GEQ/EQ/AND/NOR for waits */
    bool is64;
};

static uint64_t load_word(const struct mem_op *op)
{
    return op->is64 ? __atomic_load_n((uint64_t *)op->addr, __ATOMIC_ACQUIRE)
                    : __atomic_load_n((uint32_t *)op->addr, __ATOMIC_ACQUIRE);
}

static bool satisfied(const struct mem_op *op, uint64_t now)
{
    switch (op->condition) {
    case CU_STREAM_WAIT_VALUE_GEQ:
        return op->is64 ? (int64_t)(now - op->value) >= 0 : (int32_t)(uint32_t)(now - op->value) >= 0;
    case CU_STREAM_WAIT_VALUE_EQ:
        return now == op->value;
    case CU_STREAM_WAIT_VALUE_AND:
        return (now & op->value) != 0;
    default: /* CU_STREAM_WAIT_VALUE_NOR */
        return op->is64 ? ~(now | op->value) != 0 : (uint32_t)~(now | op->value) != 0;
    }
}

static const char *condition_name(unsigned c)
{
    static const char *const names[] = {">=", "==", "&", "nor"};
    return names[c & 3];
}

static void wait_run(void *arg)
{
    struct mem_op *op = arg;
    pthread_mutex_lock(&values_mu);
    uint64_t now = load_word(op);
    uint64_t shown = now + 1;
    while (!satisfied(op, now)) {
        if (shown != now) {
            char what[160];
            snprintf(what, sizeof what, "cuStreamWaitValue%d %p %s %" PRIu64 " (now %" PRIu64 ")",
                     op->is64 ? 64 : 32, op->addr, condition_name(op->condition), op->value, now);
            usbyteEmuSetActivity(what);
            shown = now;
        }
        struct timespec deadline;
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_nsec += FALLBACK_RECHECK_NS;
        if (deadline.tv_nsec >= 1000000000L) {
            deadline.tv_sec++;
            deadline.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&values_cv, &values_mu, &deadline);
        now = load_word(op);
    }
    pthread_mutex_unlock(&values_mu);
    free(op);
}

static void write_run(void *arg)
{
    struct mem_op *op = arg;
    pthread_mutex_lock(&values_mu);
    if (op->is64)
        __atomic_store_n((uint64_t *)op->addr, op->value, __ATOMIC_RELEASE);
    else
        __atomic_store_n((uint32_t *)op->addr, (uint32_t)op->value, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&values_cv);
    pthread_mutex_unlock(&values_mu);
    free(op);
}

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
    struct mem_op *op = malloc(sizeof *op);
    if (op == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *op = (struct mem_op){p, is64 ? value : (uint32_t)value, flags & 3u, is64};
    char what[96];
    snprintf(what, sizeof what, "cuStream%sValue%d %p %s %" PRIu64, is_wait ? "Wait" : "Write",
             is64 ? 64 : 32, p, is_wait ? condition_name(op->condition) : "=", op->value);
    cudaError_t err = usbyteEmuStreamEnqueueEx((cudaStream_t)stream, ptsz, is_wait ? wait_run : write_run, op, what);
    if (err != cudaSuccess)
        free(op);
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
