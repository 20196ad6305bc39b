/* Stream memory operations as stream ops: the value waits and writes behind
 * cuStreamWaitValue32/64 and cuStreamWriteValue32/64.  libcuda.so.1 checks the arguments and
 * reports the call to CUPTI; the ops live here, next to the queues, because the queue model
 * must know what a pending wait waits for and which pending write would release it.
 *
 * A wait blocks its stream's worker until the condition holds on the word; a write stores the
 * value with release semantics and wakes every waiter in the process at once.  Waiters also
 * re-check every few milliseconds, because a word may be changed by plain host stores too (as
 * a GPU would eventually see host writes to mapped memory); that re-check is only a fallback:
 * no test relies on it. */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cuda.h>

#include "export.h"
#include "op.h"
#include "stream.h"
#include "values.h"

#define FALLBACK_RECHECK_NS 5000000L

static pthread_mutex_t values_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t values_cv = PTHREAD_COND_INITIALIZER;

struct mem_op {
    void *addr;
    uint64_t value;
    unsigned condition;   /* CU_STREAM_WAIT_VALUE_GEQ/EQ/AND/NOR for waits */
    bool is64;
};

uint64_t emu_value_load(const void *addr, bool is64)
{
    return is64 ? __atomic_load_n((const uint64_t *)addr, __ATOMIC_ACQUIRE)
                : __atomic_load_n((const uint32_t *)addr, __ATOMIC_ACQUIRE);
}

bool emu_value_satisfied(unsigned condition, bool is64, uint64_t wanted, uint64_t now)
{
    switch (condition) {
    case CU_STREAM_WAIT_VALUE_GEQ:
        return is64 ? (int64_t)(now - wanted) >= 0 : (int32_t)(uint32_t)(now - wanted) >= 0;
    case CU_STREAM_WAIT_VALUE_EQ:
        return now == wanted;
    case CU_STREAM_WAIT_VALUE_AND:
        return (now & wanted) != 0;
    default: /* CU_STREAM_WAIT_VALUE_NOR */
        return is64 ? ~(now | wanted) != 0 : (uint32_t)~(now | wanted) != 0;
    }
}

const char *emu_value_condition_name(unsigned condition)
{
    static const char *const names[] = {">=", "==", "&", "nor"};
    return names[condition & 3];
}

static void wait_run(void *arg)
{
    struct mem_op *op = arg;
    pthread_mutex_lock(&values_mu);
    uint64_t now = emu_value_load(op->addr, op->is64);
    uint64_t shown = now + 1;
    while (!emu_value_satisfied(op->condition, op->is64, op->value, now)) {
        if (shown != now) {
            char what[160];
            snprintf(what, sizeof what, "cuStreamWaitValue%d %p %s %" PRIu64 " (now %" PRIu64 ")",
                     op->is64 ? 64 : 32, op->addr, emu_value_condition_name(op->condition), op->value, now);
            emu_worker_set_activity(what);
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
        now = emu_value_load(op->addr, op->is64);
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

/* For libcuda.so.1, which has checked the address, the value and the flags. */
EMU_EXPORT cudaError_t usbyteEmuStreamMemOp(cudaStream_t stream, int ptsz, int is_wait, void *addr, uint64_t value,
                                            unsigned condition, int is64)
{
    if (addr == NULL)
        return cudaErrorInvalidValue;
    struct CUstream_st *s;
    cudaError_t err = emu_stream_resolve(stream, ptsz != 0, &s);
    if (err != cudaSuccess)
        return err;
    struct mem_op *op = malloc(sizeof *op);
    if (op == NULL)
        return cudaErrorMemoryAllocation;
    *op = (struct mem_op){addr, is64 ? value : (uint32_t)value, condition & 3u, is64 != 0};
    struct emu_op_info info = {.kind = is_wait ? EMU_OP_WAIT_VALUE : EMU_OP_WRITE_VALUE, .addr = addr,
                               .value = op->value, .condition = op->condition, .is64 = op->is64,
                               .arg_size = sizeof *op};
    char what[96];
    snprintf(what, sizeof what, "cuStream%sValue%d %p %s %" PRIu64, is_wait ? "Wait" : "Write", is64 ? 64 : 32, addr,
             is_wait ? emu_value_condition_name(op->condition) : "=", op->value);
    err = emu_enqueue_op(s, &info, is_wait ? wait_run : write_run, op, what, NULL);
    if (err != cudaSuccess)
        free(op);
    return err;
}
