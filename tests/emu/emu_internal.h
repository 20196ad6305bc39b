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
/* stream may be NULL or cudaStreamLegacy (the legacy stream, with its implicit synchronization),
 * cudaStreamPerThread, or a created stream.  Returns cudaErrorInvalidResourceHandle for any
 * other handle, cudaErrorInvalidValue for a NULL run, cudaErrorCudartUnloading once the process
 * is exiting; `what` is copied (up to 95 characters). */

/* Updates the description of what the calling stream worker is doing right now (e.g. "waiting
 * for rank 3 in ncclAllReduce #12"); no-op outside a worker. */
void usbyteEmuSetActivity(const char *what);

/* Host memory allocated by cudaMalloc/cudaMallocHost: 1 when [ptr, ptr+bytes) lies inside one
 * live allocation, 0 otherwise. */
int usbyteEmuValidRange(const void *ptr, size_t bytes);

/* Writes one line per stream (its id, depth and what its worker is doing) to fd. */
void usbyteEmuDumpStreams(int fd);

/* On a stream worker: stores in *ns when its stream got through its previous operation
 * (CLOCK_MONOTONIC nanoseconds: what an event recorded after it is stamped with) and returns 1;
 * returns 0 outside a worker. */
#include <stdint.h>
int usbyteEmuWorkerReachedNs(uint64_t *ns);
/* On a stream worker: the running operation ends, in the stream's time, at ns (CLOCK_MONOTONIC
 * nanoseconds) instead of when its function returns (what it does after that, such as logging,
 * takes no device time); no-op outside a worker. */
void usbyteEmuWorkerOpEndsAtNs(uint64_t ns);

/* The NCCL stand-in's operations occupy `device` between Begin and End (one pair per operation,
 * from the rank's arrival to the release of its stream at end_ns, CLOCK_MONOTONIC nanoseconds, 0
 * for now; what it does after that, such as logging, takes no device time): compute work of the
 * device that runs beside them is stretched by USBYTE_EMU_INTERFERENCE (cudart/interference.c). */
void usbyteEmuDeviceCommBegin(int device);
void usbyteEmuDeviceCommEnd(int device, uint64_t end_ns);
/* On a stream worker: the time USBYTE_EMU_INTERFERENCE has added after the stream's compute ops
 * so far, in nanoseconds (0 elsewhere, and without interference).  The trainers look it up with
 * dlsym (absent on a GPU). */
uint64_t usbyteEmuComputeStretchNs(void);


/* ---- Additions (cudart side), used by libcuda.so.1, libcupti.so.13 and the unit tests ---- */
#include <stdint.h>

/* Like usbyteEmuStreamEnqueue, for the _ptsz entry points: with ptsz != 0 a NULL stream means
 * the calling thread's per-thread default stream instead of the legacy stream. */
cudaError_t usbyteEmuStreamEnqueueEx(cudaStream_t stream, int ptsz, usbyteEmuOpFn run, void *arg, const char *what);

/* API callback hook, the mechanism behind the emulated CUPTI.  libcudart calls the hook (when
 * set) at entry (site 0) and exit (site 1) of each traced runtime function, with the CUPTI
 * domain and callback id, the function name, a pointer to the parameter struct laid out as
 * CUPTI's generated_*_meta.h define it, the return value (exit only, else NULL), a
 * correlation id shared by the enter/exit pair and a per-call uint64_t the subscriber may use
 * as CUpti_CallbackData.correlationData.  One hook at a time; NULL detaches. */
typedef void (*usbyteEmuApiHookFn)(int domain, uint32_t cbid, int site, const char *functionName,
                                   const void *params, const void *returnValue,
                                   uint32_t correlationId, uint64_t *correlationData);
void usbyteEmuSetApiHook(usbyteEmuApiHookFn hook);

/* For other stand-ins (the driver API): reports one traced call through the hook, if any.
 * Call with site 0 before the work and site 1 after it, with the same correlationId (0 at
 * enter asks for a new one, returned) and the same correlationData storage. */
uint32_t usbyteEmuApiCallback(int domain, uint32_t cbid, int site, const char *functionName,
                              const void *params, const void *returnValue,
                              uint32_t correlationId, uint64_t *correlationData);

/* The one emulated context (what cuCtxGetCurrent and CUPTI report). */
void *usbyteEmuContext(void);

/* Stream work for the driver API stand-in (tests/emu/cuda/launch.c, copy.c).  The driver checks
 * its own arguments (memory types, contexts, flags, launch dimensions) as the real one does;
 * these check the stream (ptsz as usbyteEmuStreamEnqueueEx) and the memory ranges, and enqueue
 * one operation; what: its description for the hang dump.
 * A copy: depth slices of height rows of width bytes; a side with *_device set must lie inside
 * one cudaMalloc/cudaMallocHost allocation, any other non-NULL pointer is host memory.
 * cudaErrorInvalidPitchValue when a pitch is below the width or a slice below the rows. */
struct usbyteEmuCopy {
    void *dst;
    const void *src;
    size_t dpitch, spitch, dslice, sslice;
    size_t width, height, depth;
    int dst_device, src_device;
};
cudaError_t usbyteEmuCopyAsync(const struct usbyteEmuCopy *c, cudaStream_t stream, int ptsz, const char *what);
/* height rows of width elements of elem_size (1, 2 or 4) bytes set to value, pitch bytes apart. */
cudaError_t usbyteEmuSetAsync(void *dst, size_t pitch, uint32_t value, unsigned elem_size, size_t width,
                              size_t height, cudaStream_t stream, int ptsz, const char *what);
/* An emulated kernel (func: void fn(void **args), called with args), its grid and block checked
 * as CUDA does (cudaErrorInvalidConfiguration, cudaErrorCooperativeLaunchTooLarge); or a host
 * function. */
cudaError_t usbyteEmuLaunchKernel(const void *func, const unsigned grid[3], const unsigned block[3], int cooperative,
                                  void **args, cudaStream_t stream, int ptsz, const char *what);
cudaError_t usbyteEmuLaunchHost(cudaStream_t stream, void (*fn)(void *), void *arg, int ptsz, const char *what);
/* An executable graph made by cudaGraphInstantiate (cudaErrorInvalidResourceHandle for any other). */
cudaError_t usbyteEmuGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream, int ptsz);

/* Graph capture, for the NCCL stand-in: 1 when stream records into a capture (its work is
 * captured, not run).  usbyteEmuStreamEnqueueCapturable enqueues like usbyteEmuStreamEnqueueEx;
 * on a capturing stream the op becomes a graph node, and each launch of the graph runs
 * run(clone(arg)); the captured arg itself is freed with drop when the graph goes. */
int usbyteEmuStreamCapturing(cudaStream_t stream, int ptsz);
cudaError_t usbyteEmuStreamEnqueueCapturable(cudaStream_t stream, int ptsz, usbyteEmuOpFn run, void *arg,
                                             const char *what, void *(*clone)(const void *arg),
                                             void (*drop)(void *arg));

/* Graph capture for the driver API stand-in (cuStreamBeginCapture and _v2, ToGraph,
 * cuStreamEndCapture, cuStreamIsCapturing and their _ptsz forms), which never passes through the
 * public runtime entry points: on the real stack a runtime interposer does not see driver calls.
 * Streams as usbyteEmuStreamEnqueueEx.  BeginCapture with graph NULL is cudaStreamBeginCapture;
 * with a graph it is cudaStreamBeginCaptureToGraph (deps: n_deps nodes of graph, edges NULL or
 * one per dependency).  Results are the runtime's codes; the thread's last runtime error is
 * left alone. */
cudaError_t usbyteEmuStreamBeginCapture(cudaStream_t stream, int ptsz, enum cudaStreamCaptureMode mode,
                                        cudaGraph_t graph, const cudaGraphNode_t *deps,
                                        const cudaGraphEdgeData *edges, size_t n_deps);
cudaError_t usbyteEmuStreamEndCapture(cudaStream_t stream, int ptsz, cudaGraph_t *graph);
cudaError_t usbyteEmuStreamIsCapturing(cudaStream_t stream, int ptsz, enum cudaStreamCaptureStatus *status);

/* Test control: sets the process's sticky error (as a device fault would).  From then on every
 * runtime call returns it and cudaGetLastError does not clear it. cudaSuccess clears it (the
 * emulator's equivalent of restarting the process). */
void usbyteEmuSetStickyError(cudaError_t err);

/* For the driver API stand-in: the emulated device count; what kind of memory ptr lies in
 * (0 unknown, 1 cudaMalloc "device" memory, 2 cudaMallocHost/cudaHostAlloc pinned memory);
 * and allocation without going through the public (interposable) runtime API. */
int usbyteEmuDeviceCount(void);
/* The calling thread's current device (cudaSetDevice), which ncclCommInitRank binds to. */
int usbyteEmuCurrentDevice(void);
int usbyteEmuPointerKind(const void *ptr);
cudaError_t usbyteEmuMemAlloc(void **ptr, size_t bytes);
cudaError_t usbyteEmuMemFree(void *ptr);   /* like cudaFree: waits for the device first */

/* For the driver API stand-in: enqueues a stream memory operation whose arguments it has
 * checked: a wait (is_wait != 0) until condition (CU_STREAM_WAIT_VALUE_GEQ/EQ/AND/NOR) holds
 * between the 32- or 64-bit word at addr and value, or a write of value to it. */
cudaError_t usbyteEmuStreamMemOp(cudaStream_t stream, int ptsz, int is_wait, void *addr, uint64_t value,
                                 unsigned condition, int is64);

/* Hardware queues (CUDA_DEVICE_MAX_CONNECTIONS, docs/emulator-cuda.md).  The number of queues
 * per device in this process (reading the variable if no call has yet); the queue of a stream
 * (handles as usbyteEmuStreamEnqueue, -1 for an invalid one); and the number of queue
 * deadlocks now: waits at the head of a queue that can never be satisfied because the op that
 * would satisfy them is queued behind them, in the same queue or behind another such wait.
 * When fd >= 0, one line per deadlock is written to fd:
 *   [pid N] queue <Q>: stream <S>'s <wait> blocks the queue; the <op> that would release it
 *   is queued behind it on stream <T> (same queue): deadlock
 * (device <D> queue <Q> for devices other than 0). */
int usbyteEmuQueueCount(void);
int usbyteEmuStreamQueue(cudaStream_t stream);
int usbyteEmuQueueDeadlocks(int fd);

/* Hang diagnosis: when the environment has USBYTE_EMU_LAUNCHED=1 (emu-run sets it), libcudart
 * installs a SIGUSR2 handler at load time that writes usbyteEmuDumpStreams(2) and then the
 * queue deadlock lines of usbyteEmuQueueDeadlocks, each line starting with "[pid N]", so the
 * launcher can ask every rank where its streams wait. The dump format is one line per stream:
 *   [pid N] stream <id> <legacy|per-thread|blocking|non-blocking> queue <Q> depth <D>: <activity>
 * where activity is "idle", the running op's description, what usbyteEmuSetActivity said, or
 * "<op>: queued in queue <Q> behind stream <S>'s <op>" while the op waits for its turn. */

#endif
