/* A stream operation: what it is (for the hardware-queue model, queue.c, and its deadlock
 * analysis, queue_check.c), where it stands on its stream and in its queue, and what its
 * worker runs.  stream.c makes them, queue.c orders them, and capture.c records them instead
 * while a stream captures. */
#ifndef USBYTE_EMU_CUDART_OP_H
#define USBYTE_EMU_CUDART_OP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../emu_internal.h"

/* What an operation is, for the hardware-queue model (queue.c): a wait begins when it is
 * satisfied, anything else when its worker starts it; the deadlock analysis (queue_check.c)
 * needs to know what each pending wait waits for and what each pending op would release. */
enum emu_op_kind {
    EMU_OP_WORK,            /* kernel, copy, memset, host function, collective... */
    EMU_OP_RECORD,          /* cudaEventRecord: rec */
    EMU_OP_WAIT_EVENT,      /* cudaStreamWaitEvent: rec */
    EMU_OP_WAIT_VALUE,      /* cuStreamWaitValue32/64: addr, value, condition, is64 */
    EMU_OP_WRITE_VALUE,     /* cuStreamWriteValue32/64: addr, value, is64 */
    EMU_OP_WAIT_POSITION,   /* the legacy stream's implicit wait: target's op number target_seq */
};

struct CUstream_st;
struct emu_queue;
struct emu_record;

struct emu_op_info {
    enum emu_op_kind kind;
    struct emu_record *rec;
    void *addr;
    uint64_t value;
    unsigned condition;
    bool is64;
    struct CUstream_st *target;
    uint64_t target_seq;
    /* For graph capture (capture.c): how a captured op is run again at each launch of its
     * graph.  arg_size: arg is one flat malloc'd block that run frees (copied per launch);
     * else clone makes a fresh arg per launch and drop frees one never run.  An op with
     * neither cannot be captured. */
    size_t arg_size;
    void *(*clone)(const void *arg);
    void (*drop)(void *arg);
};

static inline bool emu_op_is_wait(enum emu_op_kind k)
{
    return k == EMU_OP_WAIT_EVENT || k == EMU_OP_WAIT_VALUE || k == EMU_OP_WAIT_POSITION;
}

struct emu_op {
    struct emu_op *next;          /* the stream's FIFO (under the stream's mu) */
    struct emu_op *qnext;         /* the queue's list of ops not yet begun (under the queue's mu) */
    struct CUstream_st *stream;
    struct emu_queue *queue;
    uint64_t ticket;              /* position in the queue, in submission order */
    uint64_t seq;                 /* position on the stream (1, 2, ...) */
    bool begun;                   /* under the queue's mu */
    /* Scratch of the deadlock analysis, written only with every queue's mu held. */
    bool sim_begun;
    uint64_t sim_order;
    struct emu_op_info info;
    usbyteEmuOpFn run;
    void *arg;
    char what[96];
};

#endif
