/* The emulated NCCL's time model and its environment settings: pure functions, unit-tested.
 *
 * A collective of p ranks occupies its stream for the ring-algorithm time after the last rank
 * arrives (alpha per step, bytes over the link bandwidth):
 *   allreduce                    2(p-1)*alpha + 2(p-1)/p * M / bw      M = count * size
 *   broadcast, reduce            (p-1)*alpha + M / bw                  M = count * size
 *   allgather, reducescatter     (p-1)*alpha + (p-1)/p * M / bw        M = p * count * size (the full buffer)
 *   send/recv (one rank's part)  alpha + max(sent, received) / bw       0 when only with itself
 * and 0 for p = 1.
 *
 * USBYTE_EMU_NET=FILE replaces the allreduce formula by a measured curve (a net table, below);
 * USBYTE_EMU_JITTER_PCT=P multiplies each collective's time by a repeatable factor in
 * [1-P/100, 1+P/100]. */
#ifndef USBYTE_EMU_NCCL_MODEL_H
#define USBYTE_EMU_NCCL_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "usbyte/net_table.h"

#define EMU_MODEL_DEFAULT_ALPHA_US 20.0
#define EMU_MODEL_DEFAULT_GBPS 10.0

enum emu_kind {
    EMU_ALLREDUCE,
    EMU_BROADCAST,
    EMU_REDUCE,
    EMU_ALLGATHER,
    EMU_REDUCESCATTER,
    EMU_SEND,
    EMU_RECV,
};

struct emu_model {
    double alpha_us;   /* USBYTE_EMU_ALPHA_US */
    double gbps;       /* USBYTE_EMU_GBPS, 1e9 bytes per second */
    int payload;       /* USBYTE_EMU_PAYLOAD: 0 skips data movement and arithmetic */
    int check;         /* USBYTE_EMU_CHECK: what must be equal across ranks per collective */
    double jitter_pct; /* USBYTE_EMU_JITTER_PCT, in [0, 100) */
    uint64_t jitter_seed;   /* USBYTE_EMU_JITTER_SEED */
    char net_file[512];     /* USBYTE_EMU_NET: "" for the formula, else a table that parsed */
    uint64_t tree_below;    /* USBYTE_EMU_TREE_BELOW: bytes under which an allreduce uses the tree */
};

/* USBYTE_EMU_CHECK: strict (default): kind, count, dtype, op and root, all NCCL requires;
 * bytes: kind, count x dtype size and root only, what real NCCL needs not to hang (it checks
 * nothing across ranks and silently combines a float32 buffer with an int32 one of equal bytes). */
enum emu_check { EMU_CHECK_STRICT, EMU_CHECK_BYTES };

/* Reads the variables; a bad value gets one warning line on `warn` naming the variable, the
 * value and the default used.  USBYTE_EMU_NET is loaded here (once per process and file: a bad
 * file gets its one line on the first call that names it, and net_file is left empty). */
void emu_model_from_env(struct emu_model *m, FILE *warn);

/* The algorithm a collective of `bytes` per rank runs with, whose connections NCCL sets up at its
 * first use (group.c): EMU_ALGO_TREE for an allreduce below tree_below bytes, else EMU_ALGO_RING.
 * NCCL's tuner decides from the topology; the emulator's rule only makes the first small and the
 * first large collective each a connection set-up. */
enum emu_algo { EMU_ALGO_RING, EMU_ALGO_TREE, EMU_ALGO_COUNT };
enum emu_algo emu_model_algorithm(const struct emu_model *m, enum emu_kind kind, uint64_t bytes);

/* Whether two models time every operation alike (what every rank of a communicator must share). */
int emu_model_same(const struct emu_model *a, const struct emu_model *b);

/* Modelled time in microseconds of one collective of `count` elements of `elem_size` bytes
 * (count as passed to the NCCL call: sendcount for allgather, recvcount for reducescatter). */
double emu_model_collective_us(const struct emu_model *m, enum emu_kind kind, size_t count,
                               size_t elem_size, int nranks);

/* The same for an in-place call where that matters (a net table's third column). */
double emu_model_collective_inplace_us(const struct emu_model *m, enum emu_kind kind, size_t count,
                                       size_t elem_size, int nranks, int in_place);

/* The jitter factor of collective `index` on `rank`: 1 without jitter, else uniform in
 * [1-P/100, 1+P/100], a pure function of (seed, rank, index). */
double emu_model_jitter(const struct emu_model *m, int rank, uint64_t index);

/* ---- net tables (USBYTE_EMU_NET) ----
 * A measured allreduce curve in the data/net/ format (usbyte/net_table.h, the reader usbyte-sim
 * shares).  The time of M bytes: the first row's below it, linear in bytes between rows, the last
 * row's times M / its bytes above it. */
double emu_net_us(const ub_net_table *t, double bytes, int in_place);

/* The table of `path`, read and parsed once per process (thread-safe); NULL when it does not
 * parse, after one warning line on `warn` (if not NULL) the first time. */
const ub_net_table *emu_net_load(const char *path, FILE *warn);

/* One rank's point-to-point part: `with_peer` is 0 when every send/recv is with itself. */
double emu_model_p2p_us(const struct emu_model *m, size_t sent_bytes, size_t recv_bytes, int with_peer);

#endif
