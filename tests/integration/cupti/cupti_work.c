/* Stream-ordered work on the NCCL stream, every way a program can put it there
 * (tests/emu/testing/stream_work.h), for usbyte to see (cupti_work.sh).  Three allreduces of
 * different sizes per iteration on a stream of their own, each waiting for its producer on a
 * compute stream and followed by an event the compute stream waits on; between the first and the
 * second allreduce of every iteration:
 *   cupti_work none      nothing
 *   cupti_work all       every kind of stream_work.h, in its order
 *   cupti_work KIND      that kind only (its id: rt_copy, cu_launch, ...)
 * Prints "kind NAME" for each kind it issues (the function name CUPTI reports) and checks every
 * allreduce's result. */
#include <stdbool.h>

#include "../emu_common.h"
#include "../../emu/testing/stream_work.h"

#define CALLS 3
#define ITERS 16

static float value(int rank, int it, int c, int i) { return (float)((rank + 1) * 5 + it * 3 + c * 7 + i % 11); }

int main(int argc, char **argv)
{
    EXPECT(argc == 2, "usage: cupti_work none|all|KIND");
    int rank, world;
    ncclComm_t comm = world_comm(&rank, &world);
    bool all = !strcmp(argv[1], "all");
    int chosen = -1;
    for (int k = 0; k < SW_N_KINDS; k++)
        if (!strcmp(argv[1], sw_kinds[k].id))
            chosen = k;
    EXPECT(all || chosen >= 0 || !strcmp(argv[1], "none"), "unknown kind %s", argv[1]);
    static struct stream_work work[SW_N_KINDS];
    for (int k = 0; k < SW_N_KINDS; k++)
        if (all || k == chosen) {
            EXPECT(sw_init(&work[k], (unsigned char)(k + 1)) == 0, "cannot set up %s", sw_kinds[k].id);
            if (rank == 0)
                printf("kind %s\n", sw_kinds[k].name);
        }

    cudaStream_t nccl, compute;
    CUDA_OK(cudaStreamCreateWithFlags(&nccl, cudaStreamNonBlocking));
    CUDA_OK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
    float *h[CALLS], *d[CALLS];
    cudaEvent_t ready[CALLS], done[CALLS];
    size_t n[CALLS];
    for (int c = 0; c < CALLS; c++) {
        n[c] = 256 + 128 * (size_t)c;
        CUDA_OK(cudaMallocHost((void **)&h[c], n[c] * sizeof(float)));
        CUDA_OK(cudaMalloc((void **)&d[c], n[c] * sizeof(float)));
        CUDA_OK(cudaEventCreateWithFlags(&ready[c], cudaEventDisableTiming));
        CUDA_OK(cudaEventCreateWithFlags(&done[c], cudaEventDisableTiming));
    }
    for (int it = 0; it < ITERS; it++) {
        for (int c = 0; c < CALLS; c++) {
            for (size_t i = 0; i < n[c]; i++)
                h[c][i] = value(rank, it, c, (int)i);
            CUDA_OK(cudaMemcpyAsync(d[c], h[c], n[c] * sizeof(float), cudaMemcpyHostToDevice, compute));
            CUDA_OK(cudaEventRecord(ready[c], compute));
            CUDA_OK(cudaStreamWaitEvent(nccl, ready[c], 0));
            NCCL_OK(ncclAllReduce(d[c], d[c], n[c], ncclFloat32, ncclSum, comm, nccl));
            CUDA_OK(cudaEventRecord(done[c], nccl));
            for (int k = 0; c == 0 && k < SW_N_KINDS; k++)
                if (all || k == chosen)
                    EXPECT(sw_kinds[k].issue(&work[k], nccl) == 0, "%s refused", sw_kinds[k].id);
        }
        for (int c = 0; c < CALLS; c++) {
            CUDA_OK(cudaStreamWaitEvent(compute, done[c], 0));
            CUDA_OK(cudaMemcpyAsync(h[c], d[c], n[c] * sizeof(float), cudaMemcpyDeviceToHost, compute));
        }
        CUDA_OK(cudaStreamSynchronize(compute));
        for (int c = 0; c < CALLS; c++)
            for (size_t i = 0; i < n[c]; i++) {
                float want = 0;
                for (int r = 0; r < world; r++)
                    want += value(r, it, c, (int)i);
                EXPECT(h[c][i] == want, "iteration %d call %d element %zu: %g, expected %g", it, c, i, h[c][i], want);
            }
    }
    CUDA_OK(cudaStreamSynchronize(nccl));
    NCCL_OK(ncclCommDestroy(comm));
    printf("cupti_work ok: rank %d, %d iterations\n", rank, ITERS);
    return 0;
}
