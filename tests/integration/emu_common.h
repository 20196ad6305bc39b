/* Shared helpers of the multi-rank emulator tests (tests/integration/emu_*.c).  Each test is an
 * ordinary CUDA + NCCL program started by emu-run: it reads RANK and WORLD_SIZE like a torchrun
 * program, gets the communicator id from ncclGetUniqueId on every rank (the emulator derives it
 * from the launch), and fails with a message and a non-zero exit. */
#ifndef USBYTE_EMU_TEST_COMMON_H
#define USBYTE_EMU_TEST_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#define CUDA_OK(x)                                                                              \
    do {                                                                                        \
        cudaError_t e_ = (x);                                                                   \
        if (e_ != cudaSuccess) {                                                                \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                            \
        }                                                                                       \
    } while (0)

#define NCCL_OK(x)                                                                              \
    do {                                                                                        \
        ncclResult_t r_ = (x);                                                                  \
        if (r_ != ncclSuccess) {                                                                \
            fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__, #x,              \
                    ncclGetErrorString(r_), ncclGetLastError(NULL));                            \
            exit(1);                                                                            \
        }                                                                                       \
    } while (0)

#define EXPECT(cond, ...)                                                                       \
    do {                                                                                        \
        if (!(cond)) {                                                                          \
            fprintf(stderr, "%s:%d: expected %s: ", __FILE__, __LINE__, #cond);                 \
            fprintf(stderr, __VA_ARGS__);                                                       \
            fprintf(stderr, "\n");                                                              \
            exit(1);                                                                            \
        }                                                                                       \
    } while (0)

static inline int env_int(const char *name)
{
    const char *s = getenv(name);
    if (s == NULL) {
        fprintf(stderr, "%s is not set: run this program through emu-run\n", name);
        exit(2);
    }
    return atoi(s);
}

/* A communicator of all ranks of the launch. */
static inline ncclComm_t world_comm(int *rank, int *nranks)
{
    *rank = env_int("RANK");
    *nranks = env_int("WORLD_SIZE");
    CUDA_OK(cudaSetDevice(env_int("LOCAL_RANK"))); /* as torchrun-launched programs do */
    ncclUniqueId id;
    NCCL_OK(ncclGetUniqueId(&id));
    ncclComm_t comm;
    NCCL_OK(ncclCommInitRank(&comm, *nranks, id, *rank));
    return comm;
}

static inline double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

#endif
