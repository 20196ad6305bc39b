/* Internal structures of the emulated NCCL (libnccl.so.2).  Nothing here is seen outside
 * tests/emu/nccl.
 *
 * Ranks are processes.  A communicator is a POSIX shared-memory segment named from its unique
 * id, where the ranks rendezvous: every rank posts the signature of its k-th collective, waits
 * for the others (checking their signatures as they arrive), moves data through per-rank slots
 * (collectives) or per-pair mailboxes (send/recv), and sleeps until the modelled end time.
 * Synchronisation uses C11 atomics and one futex word per segment, so a zero-filled segment is
 * a valid initial state and no rank has to "create" it first.
 *
 * Every operation runs on the worker thread of the stream it was issued on (through
 * usbyteEmuStreamEnqueue of the emulated libcudart).  Operations of one communicator run in
 * the order they were issued on the host (a per-communicator ticket taken at issue time),
 * whatever stream carries them: NCCL serialises the operations of a communicator. */
#ifndef USBYTE_EMU_NCCL_EMU_H
#define USBYTE_EMU_NCCL_EMU_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <nccl.h>

#include "../emu_internal.h"
#include "model.h"

#define EMU_EXPORT __attribute__((visibility("default")))

/* Exports a function the way real NCCL does: pnccl<name> is the strong (GLOBAL) definition and
 * nccl<name> a WEAK alias at the same address, without symbol versions. */
#define EMU_NCCL_ALIAS(name) \
    extern __typeof(p##name) name __attribute__((weak, alias("p" #name), visibility("default")))

#define EMU_MAX_RANKS 128
#define EMU_MAX_PREMUL_OPS 64                /* live ncclRedOpCreatePreMulSum ops per communicator */
#define EMU_SLOT_BYTES ((size_t)1 << 20)     /* per-rank staging slot for collectives */
#define EMU_CHAN_BYTES ((size_t)64 << 10)    /* per-pair mailbox for send/recv */
#define EMU_ID_MAGIC "usbyte-emu:"
#define EMU_EXIT_MISMATCH 3                  /* exit status of every rank after a mismatch */
#define EMU_COMM_MAGIC 0x75736279636f6d6dull /* "usbycomm" */

/* ---- shared memory layout ---- */

/* The signature of one collective as a rank posts it.  `index1` is the collective's index + 1
 * (0: nothing posted); it is stored last, with release order, so that a reader who sees it sees
 * the rest.  Each rank has two of these, used alternately (index % 2): a rank can be at most
 * one collective ahead of the slowest, so the one a slow rank reads is never overwritten. */
struct emu_sig {
    _Atomic uint64_t index1;
    uint64_t arrival_ns;
    uint64_t count;
    int32_t kind, dtype, op, root;
};

struct emu_rank_area {
    _Atomic uint32_t present;
    _Atomic uint32_t left;       /* destroyed or aborted its communicator: gone on purpose */
    int32_t pid;
    struct emu_sig sig[2];
    /* ncclCommSplit exchange, valid for split number split_seq */
    _Atomic uint64_t split_seq;
    int32_t split_color, split_key;
    /* Collectives this rank's host has launched (its next collective index after its latest
     * outermost ncclGroupEnd or ungrouped call): ranks of one process wait for each other's. */
    _Atomic uint64_t launched;
    /* The algorithms whose connections this rank has set up, a bit each (group.c). */
    _Atomic uint32_t connected;
};

/* A one-message mailbox from one rank to another, one chunk at a time. */
struct emu_chan {
    _Atomic uint32_t full;        /* 1: a chunk is waiting for the receiver */
    uint32_t last;                /* this chunk ends the message */
    uint64_t ordinal;             /* n-th message on this (sender, receiver) pair */
    uint64_t count;
    int32_t dtype;
    uint64_t offset, len;         /* bytes of this chunk within the message */
    uint64_t send_arrival_ns;     /* when the sender entered the operation */
    uint64_t recv_arrival_ns;     /* written by the receiver when it takes the first chunk */
};

struct emu_shm_hdr {
    char magic[16];
    _Atomic uint32_t nranks;        /* set by the first rank to attach */
    _Atomic uint32_t attached, detached;
    _Atomic uint32_t wake;          /* futex word bumped on every state change */
    _Atomic uint32_t aborted;       /* 1: a rank is printing the diagnostic, 2: printed, stop */
    _Atomic uint32_t op_bar_count, op_bar_gen;       /* barrier of stream operations */
    _Atomic uint32_t host_bar_count, host_bar_gen;   /* barrier of host calls (split) */
    _Atomic uint32_t model_set;     /* the model below was written by the first rank */
    struct emu_model model;         /* one model for all ranks, so they end operations together */
    char id_text[NCCL_UNIQUE_ID_BYTES];
};

/* ---- local objects ---- */

struct emu_coll {
    enum emu_kind kind;
    const void *send;
    void *recv;
    size_t count;
    int dtype, op, root;     /* root: root of broadcast/reduce, peer of send/recv */
    /* A PreMulSum op (op >= ncclNumOps): this rank's input is multiplied by the scalar (the value
     * captured at the call, or read from device memory when the operation runs), then summed. */
    bool premul;
    unsigned char scalar[8];
    const void *scalar_dev;
    uint64_t index;          /* collective index (collectives) or message ordinal (p2p) */
};

struct emu_premul_op {
    bool live;
    int dtype;
    ncclScalarResidence_t residence;
    unsigned char value[8];       /* ncclScalarHostImmediate: the scalar, copied at creation */
    const void *dev;              /* ncclScalarDevice: where it is read when an operation runs */
};

struct ncclComm {
    uint64_t magic;
    int rank, nranks, device;
    int blocking;
    char hash[9];                /* 8 hex digits naming the communicator in messages */
    char id_text[NCCL_UNIQUE_ID_BYTES];
    char shm_name[256];
    struct emu_shm_hdr *shm;
    size_t shm_bytes;
    struct emu_rank_area *ranks;
    unsigned char *slots;        /* nranks * EMU_SLOT_BYTES */
    unsigned char *chans;        /* nranks * nranks mailboxes */
    struct emu_model model;
    bool init_pending;           /* attached inside a group: wait for the others at group end */
    uint64_t split_seq;

    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t issued;             /* tickets handed out (host) */
    uint64_t run_ticket;         /* next ticket allowed to run (workers) */
    uint64_t next_coll;          /* next collective index (host) */
    uint64_t *send_ordinal, *recv_ordinal;   /* per peer (host) */
    struct emu_premul_op premul[EMU_MAX_PREMUL_OPS];
    atomic_bool local_abort;
    atomic_int async_error;
    _Atomic uint64_t async_scanned_ns; /* when the peers were last looked at for a death */
};

/* A batch of operations of one communicator that runs as one stream operation: a single call,
 * or a group's operations on that communicator (collectives in issue order, then all the
 * point-to-point operations together, which is what lets a ring of sends and receives in one
 * group complete). When the batch uses several streams it is enqueued on each, and the last
 * stream worker to reach it runs it while the others wait. */
struct emu_unit {
    struct ncclComm *comm;
    uint64_t ticket;
    int ncoll, np2p;
    struct emu_coll *coll;
    struct emu_coll *p2p;
    int nstreams;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int arrived, left;
    bool sealed;     /* the host finished enqueueing: nstreams is final */
    bool claimed;    /* a worker is running the batch */
    bool done;
    uint64_t enqueued_ns;   /* when the host enqueued it (the op log's queued time) */
    char what[96];
};

/* ---- peers.c ---- */
/* The communicator's asynchronous error: ncclRemoteError from the moment a peer's process is
 * found gone without leaving the communicator (looked for at most every few milliseconds). */
ncclResult_t emu_async_error(struct ncclComm *comm);

/* ---- shm.c: segments, unique ids, synchronisation ---- */
uint64_t emu_now_ns(void);
void emu_sleep_until_ns(uint64_t t);
void emu_wake(struct ncclComm *c);
/* Waits (bounded, so aborts are noticed) for a change of the wake word from `seen`. */
void emu_wait_change(struct ncclComm *c, uint32_t seen);
/* Stops this process if a rank flagged the communicator aborted after a mismatch. */
void emu_check_aborted(struct ncclComm *c);
/* Claims the right to print the one diagnostic; returns 0 when another rank already did. */
int emu_claim_abort(struct ncclComm *c);
/* Prints msg (already claimed), flags the comm and exits every rank. */
_Noreturn void emu_abort_all(struct ncclComm *c, const char *msg);
/* Barrier of all ranks on (count, gen); returns -1 when the local comm was aborted. */
int emu_barrier(struct ncclComm *c, _Atomic uint32_t *count, _Atomic uint32_t *gen);
struct emu_chan *emu_chan(struct ncclComm *c, int from, int to);
unsigned char *emu_chan_data(struct emu_chan *ch);

void emu_make_unique_id(ncclUniqueId *id);
/* An id private to this process (ncclCommInitAll), outside the launch-wide sequence. */
void emu_make_local_unique_id(ncclUniqueId *id);
ncclResult_t emu_comm_attach(struct ncclComm **out, int nranks, const ncclUniqueId *id, int rank);
void emu_comm_wait_all_attached(struct ncclComm *c);
void emu_comm_detach(struct ncclComm *c);

/* ---- exec.c: running operations on stream workers ---- */
void emu_unit_run(void *arg);
/* Collective op (its index set) against what the other ranks posted for that index: a rank that
 * posted another signature stops every rank with the mismatch line (EMU_EXIT_MISMATCH), as the
 * operation's own rendezvous would; returns when none did. */
void emu_coll_check_posted(struct ncclComm *c, const struct emu_coll *op);
void emu_unit_release(struct emu_unit *u);

/* ---- errors.c ---- */
ncclResult_t emu_error(ncclResult_t code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *emu_last_error(void);
/* snprintf where truncating a diagnostic is fine (keeps -Wformat-truncation quiet). */
void emu_fmt(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* "allreduce count=1024 float32 sum" (root/peer where the kind has one) */
void emu_format_sig(char *buf, size_t size, enum emu_kind kind, uint64_t count, int dtype, int op, int root);
const char *emu_kind_name(enum emu_kind kind);
const char *emu_kind_api_name(enum emu_kind kind);

#endif
