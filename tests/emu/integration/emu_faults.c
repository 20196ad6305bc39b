/* Programs that break NCCL's rules on purpose, for the emulator's guards.
 *
 *   emu_faults count K      rank 1 passes twice the count on collective #K (others: 1024)
 *   emu_faults kind K       rank 1 issues a broadcast where the others allreduce on #K
 *   emu_faults dtype K      rank 1 allreduces int32 where the others allreduce float32 on #K
 *                           (equal bytes: caught only by USBYTE_EMU_CHECK=strict, the default;
 *                           with bytes it finishes, as real NCCL would, with mixed-up sums)
 *   emu_faults p2p          rank 1 receives fewer elements than rank 0 sends
 *   emu_faults skip K       rank 1 skips collective #K of 4, then everyone allreduces on a
 *                           second communicator: rank 0 hangs in #3 of the first, rank 1 in #0
 *                           of the second (for the launcher's timeout dump)
 *   emu_faults dead         rank 1 exits after one allreduce; rank 0 issues another (stuck, or
 *                           refused at enqueue with ncclRemoteError if the death is known) and
 *                           polls ncclCommGetAsyncError until it says ncclRemoteError, then aborts
 *                           (prints "faults: remote error after S s")
 *
 * Each must never print "faults: finished" (dtype: unless USBYTE_EMU_CHECK=bytes). */
#include <unistd.h>

#include "../../integration/emu_common.h"

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: emu_faults count|kind|dtype|skip K | p2p\n");
        return 2;
    }
    int rank, p;
    ncclComm_t comm = world_comm(&rank, &p);
    const char *mode = argv[1];
    int k = argc > 2 ? atoi(argv[2]) : 0;
    cudaStream_t s;
    CUDA_OK(cudaStreamCreate(&s));
    float *buf;
    CUDA_OK(cudaMalloc((void **)&buf, 4096 * sizeof(float)));
    CUDA_OK(cudaMemset(buf, 0, 4096 * sizeof(float)));

    if (strcmp(mode, "dead") == 0) {
        NCCL_OK(ncclAllReduce(buf, buf, 1024, ncclFloat32, ncclSum, comm, s));
        CUDA_OK(cudaStreamSynchronize(s));
        if (rank == 1)
            _exit(0);
        /* The peer's death may already be the communicator's asynchronous error when this
         * call enqueues; NCCL's enqueue check (ncclCommEnsureReady) then returns that error
         * instead of queueing, and the poll below sees it at once. */
        ncclResult_t r = ncclAllReduce(buf, buf, 1024, ncclFloat32, ncclSum, comm, s);
        EXPECT(r == ncclSuccess || r == ncclRemoteError, "ncclAllReduce: %s", ncclGetErrorString(r));
        double t0 = now_s();
        ncclResult_t a = ncclSuccess;
        while (a == ncclSuccess && now_s() - t0 < 20) {
            NCCL_OK(ncclCommGetAsyncError(comm, &a));
            usleep(10000);
        }
        EXPECT(a == ncclRemoteError, "ncclCommGetAsyncError: %s", ncclGetErrorString(a));
        printf("faults: remote error after %.1f s\n", now_s() - t0);
        fflush(stdout);
        NCCL_OK(ncclCommAbort(comm));
        _exit(0); /* the stuck allreduce is skipped by the abort; nothing else to wait for */
    } else if (strcmp(mode, "p2p") == 0) {
        NCCL_OK(ncclGroupStart());
        if (rank == 0)
            NCCL_OK(ncclSend(buf, 1000, ncclFloat32, 1, comm, s));
        if (rank == 1)
            NCCL_OK(ncclRecv(buf, 999, ncclFloat32, 0, comm, s));
        NCCL_OK(ncclGroupEnd());
    } else if (strcmp(mode, "skip") == 0) {
        ncclUniqueId id;
        NCCL_OK(ncclGetUniqueId(&id));
        ncclComm_t other;
        NCCL_OK(ncclCommInitRank(&other, p, id, rank));
        for (int i = 0; i < 4; i++)
            if (!(rank == 1 && i == k))
                NCCL_OK(ncclAllReduce(buf, buf, 1024, ncclFloat32, ncclSum, comm, s));
        NCCL_OK(ncclAllReduce(buf, buf, 16, ncclFloat32, ncclSum, other, s));
    } else {
        for (int i = 0; i <= k + 2; i++) {
            size_t count = 1024;
            ncclDataType_t dt = ncclFloat32;
            if (rank == 1 && i == k && strcmp(mode, "count") == 0)
                count = 2048;
            if (rank == 1 && i == k && strcmp(mode, "dtype") == 0)
                dt = ncclInt32;
            if (rank == 1 && i == k && strcmp(mode, "kind") == 0)
                NCCL_OK(ncclBroadcast(buf, buf, count, ncclFloat32, 0, comm, s));
            else
                NCCL_OK(ncclAllReduce(buf, buf, count, dt, ncclSum, comm, s));
        }
    }
    CUDA_OK(cudaStreamSynchronize(s));
    NCCL_OK(ncclCommDestroy(comm));
    CUDA_OK(cudaFree(buf));
    CUDA_OK(cudaStreamDestroy(s));
    printf("faults: finished\n");
    return 0;
}
