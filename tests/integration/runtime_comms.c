/* Communicators that usbyte must recognise for what they are, each running a self-checking loop
 * of allreduces (distinct sizes, exact sums checked on the host every iteration).  Run under
 * emu-run with libusbyte.so (runtime_comms.sh), which checks the reports.
 *
 *   --mode world            the world communicator from ncclCommInitRank (NCCL_COMM_BLOCKING in
 *                           the environment decides whether it blocks)
 *   --mode split-of-nonblocking
 *                           a nonblocking world communicator (config.blocking = 0), split with a
 *                           NULL config: the child inherits nonblocking mode, as in NCCL
 *   --mode shared-stream    the world communicator and a split of it, their calls alternating on
 *                           one stream (as PyTorch's stream pool may hand two process groups)
 *   --mode cuda-only        CUDA work only, no NCCL call (as a job whose NCCL is linked statically:
 *                           usbyte sees no communicator)
 *   --iters N --calls M */
#include <stdbool.h>
#include <stdint.h>

#include "emu_common.h"

/* Call c goes to comms[c % ncomms], every call on one stream. */
static void loop(const ncclComm_t *comms, int ncomms, int rank, int world, int iters, int calls)
{
    cudaStream_t s;
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    int most = 64 + 8 * calls;
    float *h, *in, *d; /* in: one pinned input per call (an async copy reads it when it runs) */
    CUDA_OK(cudaMallocHost((void **)&h, (size_t)most * sizeof *h));
    CUDA_OK(cudaMallocHost((void **)&in, (size_t)calls * (size_t)most * sizeof *in));
    CUDA_OK(cudaMalloc((void **)&d, (size_t)calls * (size_t)most * sizeof *d));
    for (int it = 0; it < iters; it++) {
        for (int c = 0; c < calls; c++) {
            int n = 64 + 8 * c;
            float *x = in + (size_t)c * most;
            for (int i = 0; i < n; i++)
                x[i] = (float)selfcheck_value(rank, it, c, i);
            CUDA_OK(cudaMemcpyAsync(d + (size_t)c * most, x, (size_t)n * sizeof *x, cudaMemcpyHostToDevice, s));
            NCCL_OK(ncclAllReduce(d + (size_t)c * most, d + (size_t)c * most, (size_t)n, ncclFloat32, ncclSum,
                                  comms[c % ncomms], s));
        }
        CUDA_OK(cudaStreamSynchronize(s));
        for (int c = 0; c < calls; c++) {
            int n = 64 + 8 * c;
            CUDA_OK(cudaMemcpy(h, d + (size_t)c * most, (size_t)n * sizeof *h, cudaMemcpyDeviceToHost));
            for (int i = 0; i < n; i++) {
                int want = selfcheck_sum(world, it, c, i);
                EXPECT((int)h[i] == want, "iteration %d call %d element %d: %d, expected %d", it, c, i, (int)h[i], want);
            }
        }
    }
    CUDA_OK(cudaFreeHost(h));
    CUDA_OK(cudaFreeHost(in));
    CUDA_OK(cudaFree(d));
    CUDA_OK(cudaStreamDestroy(s));
}

int main(int argc, char **argv)
{
    const char *mode = "world";
    int iters = 20, calls = 6;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--mode") && i + 1 < argc) mode = argv[++i];
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--calls") && i + 1 < argc) calls = atoi(argv[++i]);
        else {
            fprintf(stderr, "runtime_comms: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    EXPECT(iters > 0 && calls > 0 && calls < 1000, "--iters %d --calls %d", iters, calls);
    int rank = env_int("RANK"), world = env_int("WORLD_SIZE");
    CUDA_OK(cudaSetDevice(env_int("LOCAL_RANK")));
    if (!strcmp(mode, "world")) {
        ncclComm_t comm = world_comm(&rank, &world);
        loop(&comm, 1, rank, world, iters, calls);
        NCCL_OK(ncclCommDestroy(comm));
    } else if (!strcmp(mode, "split-of-nonblocking")) {
        ncclUniqueId id;
        NCCL_OK(ncclGetUniqueId(&id));
        ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
        config.blocking = 0;
        ncclComm_t parent, child;
        ncclResult_t r = ncclCommInitRankConfig(&parent, world, id, rank, &config);
        EXPECT(r == ncclSuccess || r == ncclInProgress, "ncclCommInitRankConfig: %s", ncclGetErrorString(r));
        for (ncclResult_t a = ncclInProgress; a == ncclInProgress;)
            NCCL_OK(ncclCommGetAsyncError(parent, &a));
        r = ncclCommSplit(parent, 0, rank, &child, NULL);
        EXPECT(r == ncclSuccess || r == ncclInProgress, "ncclCommSplit: %s", ncclGetErrorString(r));
        for (ncclResult_t a = ncclInProgress; a == ncclInProgress;)
            NCCL_OK(ncclCommGetAsyncError(child, &a));
        loop(&child, 1, rank, world, iters, calls);
        NCCL_OK(ncclCommDestroy(child));
        NCCL_OK(ncclCommDestroy(parent));
    } else if (!strcmp(mode, "shared-stream")) {
        ncclComm_t comms[2];
        comms[0] = world_comm(&rank, &world);
        NCCL_OK(ncclCommSplit(comms[0], 0, rank, &comms[1], NULL));
        loop(comms, 2, rank, world, iters, calls);
        NCCL_OK(ncclCommDestroy(comms[1]));
        NCCL_OK(ncclCommDestroy(comms[0]));
    } else if (!strcmp(mode, "cuda-only")) {
        float *d, h = 0;
        cudaStream_t s;
        CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        CUDA_OK(cudaMalloc((void **)&d, sizeof *d));
        CUDA_OK(cudaMemsetAsync(d, 0, sizeof *d, s));
        CUDA_OK(cudaMemcpyAsync(&h, d, sizeof h, cudaMemcpyDeviceToHost, s));
        CUDA_OK(cudaStreamSynchronize(s));
        EXPECT(h == 0, "the copy back read %g", (double)h);
        CUDA_OK(cudaFree(d));
        CUDA_OK(cudaStreamDestroy(s));
    } else {
        fprintf(stderr, "runtime_comms: unknown mode %s\n", mode);
        return 2;
    }
    printf("runtime_comms ok: rank %d, %s, %d iterations of %d calls checked\n", rank, mode, iters, calls);
    return 0;
}
