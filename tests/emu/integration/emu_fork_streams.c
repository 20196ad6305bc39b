/* A rank forks after usbyte planned its communicator, having destroyed a stream just before:
 * the child's own streams (created, the legacy default stream) run its work through the
 * preloaded wrappers, and it exits normally.  The emulator used to hand the child the parent's
 * destroyed stream object, whose worker thread the child does not have: it hung.  Run by
 * emu_fork_streams.sh with and without libusbyte.so preloaded. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../integration/emu_common.h"

static void set_flag(void *arg)
{
    *(volatile int *)arg = 1;
}

/* Returns 0, or the step that failed; a hang is ended by the alarm. */
static int child(void)
{
    alarm(30);
    volatile int ran[3] = {0};
    cudaStream_t c;
    cudaEvent_t ev;
    if (cudaStreamCreate(&c) != cudaSuccess || cudaLaunchHostFunc(c, set_flag, (void *)&ran[0]) != cudaSuccess)
        return 1;
    if (cudaEventCreate(&ev) != cudaSuccess || cudaEventRecord(ev, c) != cudaSuccess ||
        cudaEventSynchronize(ev) != cudaSuccess || !ran[0])
        return 2;
    if (cudaLaunchHostFunc(c, set_flag, (void *)&ran[1]) != cudaSuccess || cudaStreamSynchronize(c) != cudaSuccess ||
        !ran[1])
        return 3;
    if (cudaLaunchHostFunc(NULL, set_flag, (void *)&ran[2]) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess ||
        !ran[2])
        return 4;
    if (cudaEventDestroy(ev) != cudaSuccess || cudaStreamDestroy(c) != cudaSuccess)
        return 5;
    printf("forked child ok\n");
    fflush(stdout);
    return 0;
}

/* Whether the file named by the pattern FORK_AFTER (with %d the rank) exists: with usbyte, its
 * report, which it writes once it has planned.  Without FORK_AFTER, always. */
static int ready_to_fork(int rank)
{
    const char *pattern = getenv("FORK_AFTER");
    if (pattern == NULL)
        return 1;
    char path[512];
    snprintf(path, sizeof path, pattern, rank);
    return access(path, F_OK) == 0;
}

int main(void)
{
    int rank, world;
    ncclComm_t comm = world_comm(&rank, &world);
    cudaStream_t s;
    float *buf;
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CUDA_OK(cudaMalloc((void **)&buf, 64 * sizeof(float)));
    /* Every rank runs the same iterations; each forks once, at the first iteration from the
     * fifth on where it is ready.  The bound is generous: usbyte plans a few iterations after
     * its warm-up, once the agreement's result is read at a later call. */
    enum { FIRST = 4, ITERATIONS = 400 };
    int forked = 0;
    for (int it = 0; it < ITERATIONS; it++) {
        for (int k = 0; k < 4; k++)
            NCCL_OK(ncclAllReduce(buf, buf, (size_t)(8 * (k + 1)), ncclFloat32, ncclSum, comm, s));
        CUDA_OK(cudaStreamSynchronize(s));
        if (forked || it < FIRST || (!ready_to_fork(rank) && it < ITERATIONS - 1))
            continue;
        EXPECT(ready_to_fork(rank), "no report after %d iterations: usbyte did not plan", ITERATIONS);
        forked = 1;
        /* Destroyed and drained just before the fork: the emulator recycles such objects. */
        cudaStream_t gone;
        CUDA_OK(cudaStreamCreate(&gone));
        CUDA_OK(cudaStreamSynchronize(gone));
        CUDA_OK(cudaStreamDestroy(gone));
        fflush(stdout);
        pid_t pid = fork();
        EXPECT(pid >= 0, "fork failed");
        if (pid == 0)
            exit(child());
        int status;
        EXPECT(waitpid(pid, &status, 0) == pid, "waitpid failed");
        EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: %s %d",
               WIFSIGNALED(status) ? (WTERMSIG(status) == SIGALRM ? "hung, signal" : "killed by signal")
                                   : "failed at step",
               WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        printf("forked at iteration %d\n", it);
    }
    NCCL_OK(ncclCommDestroy(comm));
    printf("fork streams done\n");
    return 0;
}
