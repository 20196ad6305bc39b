/* What a stream is (struct CUstream_st) and the part of stream objects that the whole runtime
 * reads (stream_object.c): every object ever made, which process runs each one's worker, and
 * the worker's activity text.
 *
 * Object lifetime rule: stream and event objects are never freed while the process runs.  A
 * destroyed one is marked dead and recycled by a later create.  That keeps every pointer a
 * worker, a pending wait or the SIGUSR2 dump may hold valid, and lets handle validation look a
 * pointer up in a table of every object ever made without touching freed memory. */
#ifndef USBYTE_EMU_CUDART_STREAM_OBJECT_H
#define USBYTE_EMU_CUDART_STREAM_OBJECT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <uthash.h>

#include "device.h"

struct emu_capture;
struct emu_op;
struct emu_queue;

#define EMU_ACTIVITY_LEN 160

struct CUstream_st {
    uint64_t id;              /* 1, 2, 3... in creation order; never reused by a recycled object */
    unsigned flags;
    int priority;
    int device;
    bool is_legacy;
    bool implicit;            /* a per-thread default stream */
    bool alive;               /* under stream.c's table lock; false once destroyed */
    /* Graph capture (capture.c, under its lock): the capture this stream records into (NULL:
     * none), the nodes it captured and how many of them were joined back to the origin. */
    struct emu_capture *capture;
    uint64_t cap_nodes, cap_joined;
    pid_t owner;              /* the process that made it and runs its worker (never changes):
                                 a forked child inherits the object but not the thread */

    pthread_mutex_t mu;
    pthread_cond_t work_cv;   /* worker waits for ops */
    pthread_cond_t done_cv;   /* host threads and other workers wait for progress */
    struct emu_op *head, *tail;
    uint64_t enqueued;        /* ops ever enqueued */
    uint64_t completed;       /* ops ever completed: an op's sequence number is enqueued after adding it */
    bool running;
    bool stop;
    /* The hardware queue (queue.c), assigned at creation.  turn_cv is waited on with the
     * queue's mu: the worker's next op may not begin before every earlier op of the queue. */
    struct emu_queue *queue;
    atomic_int queue_index;   /* for the dump; -1 before the first assignment */
    pthread_cond_t turn_cv;
    uint64_t begun_ops;       /* ops of this stream that have begun (under the queue's mu) */
    uint64_t sim_begun_ops;   /* the deadlock analysis' scratch */
    pthread_t thread;
    bool thread_started;
    bool worker_ready;        /* under mu: the worker thread runs worker_main (take_object) */

    /* Activity text, written by the worker only, read by the dump (in a signal handler too)
     * without a lock: a sequence lock over atomic characters, so that a reader never sees a
     * half-written string and never races with the writer. */
    atomic_uint activity_seq;   /* odd while the worker writes */
    _Atomic char activity[EMU_ACTIVITY_LEN];
    atomic_ullong depth;      /* enqueued - completed, readable without the lock */
    /* The modelled time at which the stream got through its latest op (its worker only).  A GPU
     * stamps an event when the work before it is done, whether or not anything else runs; the
     * worker is a thread that a loaded machine deschedules between and inside ops, so an op
     * that takes no device time (an event record) ends in the model when the work before it
     * did, not when the worker got to it. */
    struct timespec reached;

    struct CUstream_st *self;       /* uthash key */
    struct CUstream_st *all_next;   /* append-only list of every stream object (for dumps) */
    UT_hash_handle hh;
};

/* Every stream object ever made (append-only list through all_next). */
struct CUstream_st *emu_all_streams(void);
/* Adds a new object, this process's, to that list. */
void emu_stream_object_add(struct CUstream_st *s);
/* Whether this process runs s's worker.  A forked child inherits every object but none of the
 * threads: an inherited stream would accept work and never run it. */
bool emu_stream_owned(const struct CUstream_st *s);
/* In a forked child (with only the calling thread): the objects made so far are its parent's. */
void emu_stream_objects_forked(void);
/* Sets s's activity text (its worker only); a consistent copy of it, in a signal handler too
 * (after a few tries against a busy writer, "(changing)"). */
void emu_stream_set_activity(struct CUstream_st *s, const char *what);
void emu_stream_read_activity(struct CUstream_st *s, char out[EMU_ACTIVITY_LEN]);

/* The device whose compute a kernel or host function on s is (interference.c): a created
 * stream's, or the calling thread's current device for the legacy and per-thread streams. */
static inline int emu_stream_device(const struct CUstream_st *s)
{
    return s->is_legacy || s->implicit ? emu_current_device() : s->device;
}

#endif
