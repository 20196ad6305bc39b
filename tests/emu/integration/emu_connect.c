/* NCCL's connection set-up at an algorithm's first use (tests/emu/nccl/group.c): the host call
 * of the first small and of the first large allreduce blocks until every rank gets to its own;
 * a later one is asynchronous again.  Two ranks; FLAGS names a folder both can write.
 *
 *   phase small: rank 1 sleeps 300 ms, stamps its entry (CLOCK_REALTIME) and calls; rank 0
 *                calls at once and stamps its return: a return before rank 1's entry is wrong;
 *   phase again: rank 0 calls another small allreduce, then writes FLAGS/returned; rank 1 calls
 *                its own only once that file exists (20 s at most): a call that blocked until
 *                the peer's would never return (the launcher's timeout, or rank 1's wait, says so);
 *   phase large: as the first, above USBYTE_EMU_TREE_BELOW (64 KiB by default).
 * Each phase prints "connect: PHASE rank R enter|return SECONDS". */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "../../integration/emu_common.h"

static double realtime_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void call(const char *phase, int rank, float *buf, size_t count, ncclComm_t comm, cudaStream_t s)
{
    if (rank == 1)
        printf("connect: %s rank 1 enter %.6f\n", phase, realtime_s());
    NCCL_OK(ncclAllReduce(buf, buf, count, ncclFloat32, ncclSum, comm, s));
    if (rank == 0)
        printf("connect: %s rank 0 return %.6f\n", phase, realtime_s());
    fflush(stdout);
}

int main(void)
{
    int rank, world;
    ncclComm_t comm = world_comm(&rank, &world);
    EXPECT(world == 2, "two ranks, got %d", world);
    const char *flags = getenv("FLAGS");
    EXPECT(flags != NULL, "FLAGS names a folder");
    char returned[512];
    snprintf(returned, sizeof returned, "%s/returned", flags);
    cudaStream_t s;
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    size_t small = 256, large = 1 << 16; /* floats: 1 KiB and 256 KiB */
    float *buf;
    CUDA_OK(cudaMalloc((void **)&buf, large * sizeof *buf));
    CUDA_OK(cudaMemset(buf, 0, large * sizeof *buf));

    if (rank == 1)
        usleep(300000);
    call("small", rank, buf, small, comm, s);

    if (rank == 1) {
        int waited = 0;
        while (access(returned, F_OK) != 0 && waited < 2000) {
            usleep(10000);
            waited++;
        }
        EXPECT(waited < 2000, "rank 0's second small allreduce did not return while rank 1 had not called its own");
    }
    call("again", rank, buf, small, comm, s);
    if (rank == 0) {
        FILE *f = fopen(returned, "w");
        EXPECT(f != NULL, "cannot write %s", returned);
        fclose(f);
    }

    if (rank == 1)
        usleep(300000);
    call("large", rank, buf, large, comm, s);

    CUDA_OK(cudaStreamSynchronize(s));
    NCCL_OK(ncclCommDestroy(comm));
    printf("connect: rank %d ok\n", rank);
    return 0;
}
