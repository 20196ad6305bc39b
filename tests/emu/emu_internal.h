/* The emulator's private interface between its stand-in libraries (never used by usbyte or
 * by test programs).  The emulated libcudart.so.13 owns streams, events and device memory;
 * libnccl.so.2, libcuda.so.1 and libcupti.so.13 reach them only through these functions, never
 * through the public CUDA runtime API, because real NCCL links its CUDA runtime statically and
 * so never passes through an LD_PRELOAD interposer: the emulator must not either.
 *
 * Owner: tests/emu (cudart side).  Names start with usbyteEmu and are exported with the
 * version node USBYTE_EMU (see the cudart version script). */
#ifndef USBYTE_EMU_INTERNAL_H
#define USBYTE_EMU_INTERNAL_H

#include <stddef.h>
#include <cuda_runtime_api.h>

/* An operation executed by the stream's worker thread in FIFO order.  `what` is a short
 * description ("ncclAllReduce comm 0x.. op #12") that the hang dump prints while the worker is
 * inside run(); run() may block (a rendezvous) and must return when its work is done. */
typedef void (*usbyteEmuOpFn)(void *arg);
cudaError_t usbyteEmuStreamEnqueue(cudaStream_t stream, usbyteEmuOpFn run, void *arg, const char *what);

/* Updates the description of what the calling stream worker is doing right now (e.g. "waiting
 * for rank 3 in ncclAllReduce #12"); no-op outside a worker. */
void usbyteEmuSetActivity(const char *what);

/* Host memory allocated by cudaMalloc/cudaMallocHost: 1 when [ptr, ptr+bytes) lies inside one
 * live allocation, 0 otherwise. */
int usbyteEmuValidRange(const void *ptr, size_t bytes);

/* Writes one line per stream (its id, depth and what its worker is doing) to fd. */
void usbyteEmuDumpStreams(int fd);

#endif
