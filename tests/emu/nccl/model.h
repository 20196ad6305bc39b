/* The emulated NCCL's time model and its environment settings: pure functions, unit-tested.
 *
 * A collective of p ranks occupies its stream for the ring-algorithm time after the last rank
 * arrives (alpha per step, bytes over the link bandwidth):
 *   allreduce                    2(p-1)*alpha + 2(p-1)/p * M / bw      M = count * size
 *   broadcast, reduce            (p-1)*alpha + M / bw                  M = count * size
 *   allgather, reducescatter     (p-1)*alpha + (p-1)/p * M / bw        M = p * count * size (the full buffer)
 *   send/recv (one rank's part)  alpha + max(sent, received) / bw       0 when only with itself
 * and 0 for p = 1. */
#ifndef USBYTE_EMU_NCCL_MODEL_H
#define USBYTE_EMU_NCCL_MODEL_H

#include <stddef.h>
#include <stdio.h>

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
};

/* USBYTE_EMU_CHECK: strict (default): kind, count, dtype, op and root, all NCCL requires;
 * bytes: kind, count x dtype size and root only, what real NCCL needs not to hang (it checks
 * nothing across ranks and silently combines a float32 buffer with an int32 one of equal bytes). */
enum emu_check { EMU_CHECK_STRICT, EMU_CHECK_BYTES };

/* Reads the four variables; a bad value gets one warning line on `warn` naming the variable,
 * the value and the default used. */
void emu_model_from_env(struct emu_model *m, FILE *warn);

/* Modelled time in microseconds of one collective of `count` elements of `elem_size` bytes
 * (count as passed to the NCCL call: sendcount for allgather, recvcount for reducescatter). */
double emu_model_collective_us(const struct emu_model *m, enum emu_kind kind, size_t count,
                               size_t elem_size, int nranks);

/* One rank's point-to-point part: `with_peer` is 0 when every send/recv is with itself. */
double emu_model_p2p_us(const struct emu_model *m, size_t sent_bytes, size_t recv_bytes, int with_peer);

#endif
