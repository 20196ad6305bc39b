/* A rank that forks after its communicator is profiled: the child (which may not touch CUDA or
 * NCCL state it inherited) forwards through the wrappers without touching usbyte's state (its
 * locks may have been held by another thread at the fork) and writes no report; the parent keeps
 * working and reports as usual.  Run by runtime_modes.sh under emu-run with libusbyte.so preloaded. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "emu_common.h"


int main(void)
{
    int rank = atoi(getenv("RANK") ? getenv("RANK") : "0");
    int world = atoi(getenv("WORLD_SIZE") ? getenv("WORLD_SIZE") : "1");
    ncclUniqueId id;
    ncclComm_t comm;
    cudaStream_t s;
    float *buf;
    CUDA_OK(cudaSetDevice(0));
    NCCL_OK(ncclGetUniqueId(&id));
    NCCL_OK(ncclCommInitRank(&comm, world, id, rank));
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CUDA_OK(cudaMalloc((void **)&buf, 64 * sizeof(float)));
    for (int it = 0; it < 12; it++) {
        for (int k = 0; k < 4; k++)
            NCCL_OK(ncclAllReduce(buf, buf, (size_t)(8 * (k + 1)), ncclFloat32, ncclSum, comm, s));
        CUDA_OK(cudaStreamSynchronize(s));
        if (it == 8) {
            pid_t child = fork();
            if (child == 0) {
                /* The child goes through wrappers (it must forward, touching no usbyte state) and
                 * ends with exit(), so every exit handler (usbyte's report writer, the emulator's
                 * destructors) runs in a child that owns none of the parent's threads. */
                cudaError_t q = cudaStreamQuery(s);
                exit(q == cudaSuccess || q == cudaErrorNotReady ? 0 : 3);
            }
            int status;
            EXPECT(waitpid(child, &status, 0) == child, "waitpid failed");
            if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
                fprintf(stderr, "child: exited %d status %d, signal %d\n", WIFEXITED(status), WEXITSTATUS(status),
                        WIFSIGNALED(status) ? WTERMSIG(status) : 0);
                exit(1);
            }
        }
    }
    NCCL_OK(ncclCommDestroy(comm));
    printf("fork test done\n");
    return 0;
}
