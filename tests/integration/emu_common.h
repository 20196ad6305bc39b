/* Shared helpers of the multi-rank test programs (the emulator's, tests/emu/integration/emu_NAME.c;
 * the runtime's, tests/integration/; gpu/).
 * Each is an ordinary CUDA + NCCL program started by emu-run: it reads RANK and WORLD_SIZE like a torchrun
 * program, gets the communicator id from ncclGetUniqueId on every rank (the emulator derives it
 * from the launch) or, where TRAINER_NCCL_ID_FILE names a file, from rank 0 through that file (as
 * real NCCL needs: the GPU kit's launcher sets it), and fails with a message and a non-zero exit. */
#ifndef USBYTE_EMU_TEST_COMMON_H
#define USBYTE_EMU_TEST_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

/* The id of the world communicator: rank 0's, passed through the file TRAINER_NCCL_ID_FILE names
 * (written whole under another name, then renamed), or each rank's own under emu-run. */
static inline void world_id(int rank, ncclUniqueId *id)
{
    const char *file = getenv("TRAINER_NCCL_ID_FILE");
    if (file == NULL || *file == '\0') {
        NCCL_OK(ncclGetUniqueId(id));
        return;
    }
    if (rank == 0) {
        NCCL_OK(ncclGetUniqueId(id));
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp.%d", file, (int)getpid());
        FILE *f = fopen(tmp, "wb");
        EXPECT(f && fwrite(id, sizeof *id, 1, f) == 1 && fclose(f) == 0 && rename(tmp, file) == 0,
               "TRAINER_NCCL_ID_FILE %s: cannot write it", file);
        return;
    }
    for (int tries = 0;; tries++) {
        FILE *f = fopen(file, "rb");
        if (f) {
            size_t got = fread(id, sizeof *id, 1, f);
            fclose(f);
            if (got == 1)
                return;
        }
        EXPECT(tries < 60000, "TRAINER_NCCL_ID_FILE %s: rank 0 did not write it within 60 s", file);
        usleep(1000);
    }
}

/* A communicator of all ranks of the launch. */
static inline ncclComm_t world_comm(int *rank, int *nranks)
{
    *rank = env_int("RANK");
    *nranks = env_int("WORLD_SIZE");
    CUDA_OK(cudaSetDevice(env_int("LOCAL_RANK"))); /* as torchrun-launched programs do */
    ncclUniqueId id;
    world_id(*rank, &id);
    ncclComm_t comm;
    NCCL_OK(ncclCommInitRank(&comm, *nranks, id, *rank));
    return comm;
}

/* The self-checking loops' data: rank r's element i of call c in iteration it, a small integer
 * so that float sums over ranks are exact; and the sum over `world` ranks an allreduce must
 * give. */
static inline int selfcheck_value(int r, int it, int c, int i) { return ((r + 1) * 3 + it * 7 + c * 5 + i % 13) % 61 + 1; }

static inline int selfcheck_sum(int world, int it, int c, int i)
{
    int sum = 0;
    for (int r = 0; r < world; r++)
        sum += selfcheck_value(r, it, c, i);
    return sum;
}

static inline double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

#endif
