/* smoke: a plain allreduce across the ranks of the launch, the first thing to work before anything
 * else runs on several ranks: float32 sums of small integers (exact) at a few sizes, each checked
 * element by element on the host, and timed (mean of 5 after one warm-up).  One JSON object per
 * size on stdout from rank 0; exit 1 on a wrong element.  Launched like the other programs
 * (RANK, WORLD_SIZE, LOCAL_RANK; TRAINER_NCCL_ID_FILE for the id). */
#include "emu_common.h"

#include <stdint.h>

static float value(int rank, size_t i)
{
    return (float)((int)(i % 7) + rank + 1);
}

int main(void)
{
    int rank, world;
    ncclComm_t comm = world_comm(&rank, &world);
    cudaStream_t stream;
    CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    static const size_t sizes[] = {1, 1000, 1 << 18, 1 << 22};
    size_t max = sizes[sizeof sizes / sizeof sizes[0] - 1];
    float *h, *d;
    CUDA_OK(cudaMallocHost((void **)&h, max * sizeof *h));
    CUDA_OK(cudaMalloc((void **)&d, max * sizeof *d));
    cudaEvent_t t0, t1;
    CUDA_OK(cudaEventCreate(&t0));
    CUDA_OK(cudaEventCreate(&t1));
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        float ms_sum = 0;
        for (int rep = 0; rep < 6; rep++) {
            for (size_t i = 0; i < n; i++)
                h[i] = value(rank, i);
            CUDA_OK(cudaMemcpy(d, h, n * sizeof *h, cudaMemcpyHostToDevice));
            CUDA_OK(cudaEventRecord(t0, stream));
            NCCL_OK(ncclAllReduce(d, d, n, ncclFloat32, ncclSum, comm, stream));
            CUDA_OK(cudaEventRecord(t1, stream));
            CUDA_OK(cudaStreamSynchronize(stream));
            float ms = 0;
            CUDA_OK(cudaEventElapsedTime(&ms, t0, t1));
            if (rep > 0)
                ms_sum += ms;
            CUDA_OK(cudaMemcpy(h, d, n * sizeof *h, cudaMemcpyDeviceToHost));
            for (size_t i = 0; i < n; i++) {
                float want = 0;
                for (int r = 0; r < world; r++)
                    want += value(r, i);
                if (h[i] != want) {
                    fprintf(stderr, "smoke: rank %d: WRONG RESULT: %zu floats, element %zu: %g, expected %g\n", rank, n,
                            i, (double)h[i], (double)want);
                    return 1;
                }
            }
        }
        if (rank == 0)
            printf("{\"floats\": %zu, \"bytes\": %zu, \"ranks\": %d, \"mean_ms\": %.4f}\n", n, n * sizeof(float), world,
                   (double)ms_sum / 5);
    }
    NCCL_OK(ncclCommDestroy(comm));
    printf("smoke ok: rank %d of %d\n", rank, world);
    return 0;
}
