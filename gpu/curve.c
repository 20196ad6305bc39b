/* curve: the allreduce curve of the ranks of the launch, in the table format of data/net (what
 * USBYTE_EMU_NET reads): float32 sums from --min to --max bytes (factor 2), out of place and in
 * place.  Each sweep issues, for every size, --warmup untimed calls and --iters timed ones (events
 * around them, their mean); the same sweep --sweeps times, so that a preloaded usbyte in observe
 * mode finds the sweep as its iteration and fits its line from the same calls.  Each time written
 * is the median over the sweeps.  Rank 0 writes the table to --out; every rank checks the first
 * and last element of its last result.  Launched like the other programs (RANK, WORLD_SIZE,
 * LOCAL_RANK; TRAINER_NCCL_ID_FILE for the id). */
#include "emu_common.h"

#include <stdint.h>

#define MAX_SIZES 40
#define MAX_SWEEPS 64

struct options {
    size_t min_bytes, max_bytes;
    int warmup, iters, sweeps;
    const char *out;
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static struct options parse(int argc, char **argv)
{
    struct options o = {4096, (size_t)256 << 20, 1, 5, 7, NULL};
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (strcmp(k, "--min") == 0)
            o.min_bytes = strtoull(v, NULL, 10);
        else if (strcmp(k, "--max") == 0)
            o.max_bytes = strtoull(v, NULL, 10);
        else if (strcmp(k, "--warmup") == 0)
            o.warmup = atoi(v);
        else if (strcmp(k, "--iters") == 0)
            o.iters = atoi(v);
        else if (strcmp(k, "--sweeps") == 0)
            o.sweeps = atoi(v);
        else if (strcmp(k, "--out") == 0)
            o.out = v;
        else
            EXPECT(0, "unknown option %s", k);
    }
    EXPECT(o.min_bytes >= 4 && o.min_bytes % 4 == 0 && o.max_bytes >= o.min_bytes, "sizes %zu..%zu", o.min_bytes,
           o.max_bytes);
    EXPECT(o.warmup >= 0 && o.iters >= 1 && o.sweeps >= 1 && o.sweeps <= MAX_SWEEPS, "counts");
    return o;
}

int main(int argc, char **argv)
{
    struct options o = parse(argc, argv);
    int rank, world;
    ncclComm_t comm = world_comm(&rank, &world);
    EXPECT(rank != 0 || o.out != NULL, "rank 0 needs --out FILE");
    cudaStream_t stream;
    CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    size_t sizes[MAX_SIZES];
    int n = 0;
    for (size_t b = o.min_bytes; b <= o.max_bytes && n < MAX_SIZES; b *= 2)
        sizes[n++] = b;
    float *send, *recv, *host;
    CUDA_OK(cudaMalloc((void **)&send, o.max_bytes));
    CUDA_OK(cudaMalloc((void **)&recv, o.max_bytes));
    CUDA_OK(cudaMallocHost((void **)&host, o.max_bytes));
    size_t max_n = o.max_bytes / sizeof(float);
    for (size_t i = 0; i < max_n; i++)
        host[i] = 1.0f;
    CUDA_OK(cudaMemcpy(send, host, o.max_bytes, cudaMemcpyHostToDevice));
    cudaEvent_t t0, t1;
    CUDA_OK(cudaEventCreate(&t0));
    CUDA_OK(cudaEventCreate(&t1));
    static double us[2][MAX_SIZES][MAX_SWEEPS];
    for (int s = 0; s < o.sweeps; s++)
        for (int k = 0; k < n; k++)
            for (int in_place = 0; in_place < 2; in_place++) {
                size_t count = sizes[k] / sizeof(float);
                float *src = in_place ? recv : send;
                if (in_place)   /* a sum of ones stays exact however often it is repeated in place */
                    CUDA_OK(cudaMemcpyAsync(recv, host, sizes[k], cudaMemcpyHostToDevice, stream));
                for (int w = 0; w < o.warmup; w++)
                    NCCL_OK(ncclAllReduce(in_place ? recv : send, recv, count, ncclFloat32, ncclSum, comm, stream));
                if (in_place)
                    CUDA_OK(cudaMemcpyAsync(recv, host, sizes[k], cudaMemcpyHostToDevice, stream));
                CUDA_OK(cudaEventRecord(t0, stream));
                for (int i = 0; i < o.iters; i++)
                    NCCL_OK(ncclAllReduce(src, recv, count, ncclFloat32, ncclSum, comm, stream));
                CUDA_OK(cudaEventRecord(t1, stream));
                CUDA_OK(cudaEventSynchronize(t1));
                float ms = 0;
                CUDA_OK(cudaEventElapsedTime(&ms, t0, t1));
                us[in_place][k][s] = 1000.0 * ms / o.iters;
                if (s == o.sweeps - 1 && k == n - 1) {
                    /* out of place: world; in place, iters times from ones: world^iters */
                    double want = world;
                    for (int i = 1; in_place && i < o.iters; i++)
                        want *= world;
                    float got[2];
                    CUDA_OK(cudaMemcpy(&got[0], recv, sizeof(float), cudaMemcpyDeviceToHost));
                    CUDA_OK(cudaMemcpy(&got[1], recv + count - 1, sizeof(float), cudaMemcpyDeviceToHost));
                    EXPECT(got[0] == (float)want && got[1] == (float)want, "%s allreduce of %zu bytes: %g and %g, want %g",
                           in_place ? "in-place" : "out-of-place", sizes[k], got[0], got[1], want);
                }
            }
    if (rank == 0) {
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp", o.out);
        FILE *f = fopen(tmp, "w");
        EXPECT(f != NULL, "cannot write %s", tmp);
        int dev, runtime = 0, driver = 0, nccl = 0;
        struct cudaDeviceProp prop;
        CUDA_OK(cudaGetDevice(&dev));
        CUDA_OK(cudaGetDeviceProperties(&prop, dev));
        CUDA_OK(cudaRuntimeGetVersion(&runtime));
        CUDA_OK(cudaDriverGetVersion(&driver));
        NCCL_OK(ncclGetVersion(&nccl));
        char host_name[256] = "?";
        gethostname(host_name, sizeof host_name - 1);
        fprintf(f, "# source: usbyte GPU kit (gpu/curve.c) on %s: all_reduce of float32 sums, %zu to %zu bytes, factor 2\n",
                host_name, o.min_bytes, o.max_bytes);
        fprintf(f, "# hardware: rank 0 on %s; CUDA runtime %d, driver %d, NCCL %d (ranks placed by the launcher)\n",
                prop.name, runtime, driver, nccl);
        fprintf(f, "# ranks: %d\n", world);
        fprintf(f, "# note: median over %d sweeps of the mean of %d timed calls after %d untimed ones (events on the "
                "stream); rank 0's clock\n", o.sweeps, o.iters, o.warmup);
        fprintf(f, "# columns: bytes\ttime_us_out_of_place\ttime_us_in_place\n");
        for (int k = 0; k < n; k++)
            fprintf(f, "%zu\t%.2f\t%.2f\n", sizes[k], median(us[0][k], o.sweeps), median(us[1][k], o.sweeps));
        EXPECT(fclose(f) == 0 && rename(tmp, o.out) == 0, "cannot write %s", o.out);
    }
    NCCL_OK(ncclCommDestroy(comm));
    printf("curve ok: rank %d of %d, %d sizes\n", rank, world, n);
    return 0;
}
