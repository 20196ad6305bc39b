/* One execution of one cudaEventRecord: what a record op completes and a wait op waits for.
 * event.c makes, completes and releases them; the queue model (queue.c) tracks where a
 * record's op stands, which the deadlock analysis (queue_check.c) reads. */
#ifndef USBYTE_EMU_CUDART_RECORD_H
#define USBYTE_EMU_CUDART_RECORD_H

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

struct emu_op;

enum emu_record_state {
    EMU_RECORD_UNSUBMITTED,      /* its op is not in a queue yet */
    EMU_RECORD_QUEUED,           /* op points at its op, not yet begun */
    EMU_RECORD_BEGUN,
};
struct emu_record {               /* one execution of one cudaEventRecord */
    atomic_int refs;
    atomic_bool done;
    /* Under the queue's mu of the record's stream (for the deadlock analysis). */
    enum emu_record_state state;
    struct emu_op *op;
    struct timespec when;         /* CLOCK_MONOTONIC time the stream reached the record: the later of
                                   * the end of the work before it and the cudaEventRecord call */
    struct timespec enqueued;     /* when the host called cudaEventRecord */
    uint64_t event_id, stream_id; /* for the hang dump: who waits on what */
};

#endif
