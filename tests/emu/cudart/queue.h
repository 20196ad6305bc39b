/* The hardware queues (queue.c): the streams of a device share CUDA_DEVICE_MAX_CONNECTIONS
 * queues, each processed in submission order. */
#ifndef USBYTE_EMU_CUDART_QUEUE_H
#define USBYTE_EMU_CUDART_QUEUE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct CUstream_st;
struct emu_op;

/* CUDA_DEVICE_MAX_CONNECTIONS queues per device.  Every op takes a ticket in its stream's
 * queue when it is enqueued (under the stream's mu, so tickets follow stream order) and may
 * not begin before every earlier ticket of the queue has begun. */
struct emu_queue {
    pthread_mutex_t mu;
    int device, index;
    uint64_t next_ticket;      /* tickets handed out */
    uint64_t begun;            /* tickets 0..begun-1 have begun */
    struct emu_op *head, *tail;   /* ops not yet begun, in ticket order */
    struct emu_op *sim_cursor;    /* the deadlock analysis' scratch */
};

/* The number of queues per device (reads CUDA_DEVICE_MAX_CONNECTIONS on the first call of the
 * process: the emulated context's creation). */
int emu_queue_count(void);
/* The queue of a new stream on `device`: queue 0 for the legacy stream, else the next in
 * round-robin order.  Called with the stream table's lock held. */
struct emu_queue *emu_queue_assign(int device, bool legacy);
/* Under the stream's mu: gives op its ticket and appends it to its queue's list. */
void emu_queue_push(struct CUstream_st *s, struct emu_op *op);
/* On the worker, before running op: waits until every earlier ticket has begun; a non-wait
 * op then begins.  False when the process is exiting (op must not run). */
bool emu_queue_take_turn(struct CUstream_st *s, struct emu_op *op);
/* Marks op (at the head of its queue) begun, if not yet, and lets the next ticket go. */
void emu_queue_begin(struct emu_op *op);
/* Wakes every worker waiting for its turn (the process is exiting). */
void emu_queues_wake_all(void);
/* fork handlers, called by stream.c's with the stream table's lock held. */
void emu_queues_fork_prepare(void);
void emu_queues_fork_parent(void);
void emu_queues_fork_child(void);
/* Calls fn on every queue of this process (device order, then index order). */
void emu_queues_for_each(void (*fn)(struct emu_queue *q, void *ctx), void *ctx);

#endif
