/* Connection set-up on the host (docs/emulator-nccl.md, "Connection set-up"), on 2 ranks.
 *
 *   emu_connect late        rank 1 arrives 0.4 s late at each of three allreduces on its host;
 *                           rank 0 prints how long each of its ncclAllReduce calls blocked:
 *                           "connect: <what> blocked S s" for a first large one (a new class),
 *                           a second large one (set up already) and, inside a group, a first
 *                           one of another size class (USBYTE_EMU_CONNECT=size sets it up)
 *   emu_connect dead        rank 1 exits 0.3 s after the first allreduce; rank 0's first large
 *                           allreduce waits for it on the host, then returns ncclRemoteError
 *                           ("connect: remote error after S s")
 *
 * Every allreduce before the first is of 1024 floats; "large" is 64 Ki floats (256 KiB, above
 * the tree's limit). */
#include <unistd.h>

#include "emu_common.h"

#define LATE_S 0.4
#define SMALL 1024
#define LARGE (64 * 1024)

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: emu_connect late|dead\n");
        return 2;
    }
    int rank, p;
    ncclComm_t comm = world_comm(&rank, &p);
    cudaStream_t s;
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    float *buf;
    CUDA_OK(cudaMalloc((void **)&buf, 2 * LARGE * sizeof(float)));
    CUDA_OK(cudaMemset(buf, 0, 2 * LARGE * sizeof(float)));
    /* The ranks leave this together (within the rendezvous' wake-up). */
    NCCL_OK(ncclAllReduce(buf, buf, SMALL, ncclFloat32, ncclSum, comm, s));
    CUDA_OK(cudaStreamSynchronize(s));

    if (strcmp(argv[1], "dead") == 0) {
        if (rank == 1) {
            usleep((useconds_t)(0.3 * 1e6));
            _exit(0);
        }
        double t0 = now_s();
        ncclResult_t r = ncclAllReduce(buf, buf, LARGE, ncclFloat32, ncclSum, comm, s);
        EXPECT(r == ncclRemoteError, "the first large allreduce returned %s", ncclGetErrorString(r));
        printf("connect: remote error after %.3f s\n", now_s() - t0);
        fflush(stdout);
        NCCL_OK(ncclCommAbort(comm));
        _exit(0);
    }
    EXPECT(strcmp(argv[1], "late") == 0, "unknown mode %s", argv[1]);
    static const char *what[] = {"first large", "second large", "grouped 2 KiB"};
    for (int i = 0; i < 3; i++) {
        if (rank == 1)
            usleep((useconds_t)(LATE_S * 1e6));
        double t0 = now_s();
        if (i < 2) {
            NCCL_OK(ncclAllReduce(buf, buf + LARGE, LARGE, ncclFloat32, ncclSum, comm, s));
        } else {
            NCCL_OK(ncclGroupStart());
            NCCL_OK(ncclAllReduce(buf, buf, 512, ncclFloat32, ncclSum, comm, s));
            NCCL_OK(ncclGroupEnd());
        }
        if (rank == 0)
            printf("connect: %s blocked %.3f s\n", what[i], now_s() - t0);
        CUDA_OK(cudaStreamSynchronize(s));
    }
    printf("connect: finished\n");
    NCCL_OK(ncclCommDestroy(comm));
    return 0;
}
