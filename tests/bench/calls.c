/* make bench-overhead's count of schedule mode's CUDA calls: a training loop shaped like a
 * framework's, run under emu-run -n 1 with libusbyte.so; the runtime counts the real CUDA calls it
 * makes and the allreduces it defers and puts both in the report (schedule.cuda_calls,
 * schedule.deferred_calls), which overhead.sh reads.
 *
 *   calls ITERS CALLS SHAPE
 *   SHAPE ddp: per call, the compute stream records the gradient's ready event, the NCCL stream
 *              waits on it, the allreduce, and an end event recorded on the NCCL stream right after
 *              it (PyTorch's work event); at the iteration's end the compute stream waits on the
 *              last end event and the host synchronizes the compute stream (the optimizer step).
 *   SHAPE bare: only the allreduces, and a synchronization of the NCCL stream per iteration. */
#include <stdbool.h>

#include "../integration/emu_common.h"

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 400;
    int calls = argc > 2 ? atoi(argv[2]) : 16;
    const char *shape = argc > 3 ? argv[3] : "ddp";
    bool ddp = !strcmp(shape, "ddp");
    EXPECT(ddp || !strcmp(shape, "bare"), "unknown shape %s", shape);
    EXPECT(iters > 0 && calls > 0 && calls <= 4096, "iterations %d, calls %d", iters, calls);
    int rank, world;
    ncclComm_t comm = world_comm(&rank, &world);
    cudaStream_t nccl, compute;
    CUDA_OK(cudaStreamCreateWithFlags(&nccl, cudaStreamNonBlocking));
    CUDA_OK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
    float *buf;
    size_t total = 0;
    for (int k = 0; k < calls; k++)
        total += (size_t)(64 * (k + 1));
    CUDA_OK(cudaMalloc((void **)&buf, total * sizeof(float)));
    cudaEvent_t *ready = calloc((size_t)calls, sizeof *ready), *end = calloc((size_t)calls, sizeof *end);
    for (int k = 0; k < calls; k++) {
        CUDA_OK(cudaEventCreateWithFlags(&ready[k], cudaEventDisableTiming));
        CUDA_OK(cudaEventCreateWithFlags(&end[k], cudaEventDisableTiming));
    }
    for (int it = 0; it < iters; it++) {
        size_t at = 0;
        for (int k = 0; k < calls; k++) {
            size_t n = (size_t)(64 * (k + 1));
            if (ddp) {
                CUDA_OK(cudaEventRecord(ready[k], compute));
                CUDA_OK(cudaStreamWaitEvent(nccl, ready[k], 0));
            }
            NCCL_OK(ncclAllReduce(buf + at, buf + at, n, ncclFloat32, ncclSum, comm, nccl));
            if (ddp)
                CUDA_OK(cudaEventRecord(end[k], nccl));
            at += n;
        }
        if (ddp) {
            CUDA_OK(cudaStreamWaitEvent(compute, end[calls - 1], 0));
            CUDA_OK(cudaStreamSynchronize(compute));
        } else {
            CUDA_OK(cudaStreamSynchronize(nccl));
        }
    }
    CUDA_OK(cudaStreamSynchronize(nccl));
    NCCL_OK(ncclCommDestroy(comm));
    printf("calls: %d iterations of %d allreduces (%s)\n", iters, calls, shape);
    return 0;
}
