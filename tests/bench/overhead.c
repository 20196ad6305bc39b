/* make bench-overhead: host nanoseconds per call of ncclAllReduce and cudaEventRecord as the
 * application sees them, run under build/emu/emu-run -n 1 with and without libusbyte.so.
 *
 * The program runs ITERS iterations of CALLS allreduces of distinct tiny sizes (so the period is
 * found at once), then times STEADY more iterations: with the library in observe mode that is
 * after the warm-up and the plan (the communicator's steady state); with USBYTE_MODE=off it is
 * the pass-through of the wrappers.  The emulator's link costs nothing (USBYTE_EMU_ALPHA_US=0,
 * USBYTE_EMU_PAYLOAD=0), and the stream is drained outside the timed windows, so the numbers are
 * the host cost of issuing.  To cancel the emulator's own cost and the machine's noise, every
 * measurement alternates batches through the symbol the program links (the wrapper when
 * preloaded) and through the real function taken directly from the library (pncclAllReduce,
 * cudaEventRecord@libcudart.so.13 by dlvsym on the runtime's handle); the difference of the
 * medians is the wrapper's cost.  Prints "name via-symbol-ns direct-ns". */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../integration/emu_common.h"

#define CALLS 8

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, by_value);
    return n ? v[n / 2] : 0;
}

static void iteration(float *buf, ncclComm_t comm, cudaStream_t s)
{
    for (int k = 0; k < CALLS; k++)
        NCCL_OK(ncclAllReduce(buf, buf, (size_t)(k + 1), ncclFloat32, ncclSum, comm, s));
}

int main(int argc, char **argv)
{
    int warm = argc > 1 ? atoi(argv[1]) : 40;       /* iterations before timing */
    int steady = argc > 2 ? atoi(argv[2]) : 2000;   /* timed iterations */
    int records = argc > 3 ? atoi(argv[3]) : 200000;
    ncclUniqueId id;
    ncclComm_t comm;
    cudaStream_t s, other;
    float *buf;
    CUDA_OK(cudaSetDevice(0));
    NCCL_OK(ncclGetUniqueId(&id));
    NCCL_OK(ncclCommInitRank(&comm, 1, id, 0));
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CUDA_OK(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
    CUDA_OK(cudaMalloc((void **)&buf, CALLS * sizeof(float)));
    for (int i = 0; i < warm; i++) {
        iteration(buf, comm, s);
        CUDA_OK(cudaStreamSynchronize(s));
    }
    void *nccl = dlopen("libnccl.so.2", RTLD_NOLOAD | RTLD_LAZY);
    void *cudart = dlopen("libcudart.so.13", RTLD_NOLOAD | RTLD_LAZY);
    __typeof__(pncclAllReduce) *real_allreduce = nccl ? (__typeof__(pncclAllReduce) *)dlsym(nccl, "pncclAllReduce") : NULL;
    __typeof__(cudaEventRecord) *real_record =
        cudart ? (__typeof__(cudaEventRecord) *)dlvsym(cudart, "cudaEventRecord", "libcudart.so.13") : NULL;
    if (!real_allreduce || !real_record) {
        fprintf(stderr, "cannot find the real pncclAllReduce / cudaEventRecord\n");
        return 1;
    }
    int rounds = steady / 50;
    double *sym = calloc((size_t)rounds, sizeof *sym), *dir = calloc((size_t)rounds, sizeof *dir);
    for (int i = 0; i < rounds; i++) {
        for (int which = 0; which < 2; which++) {
            double t0 = now();
            for (int j = 0; j < 50; j++)
                for (int k = 0; k < CALLS; k++)
                    NCCL_OK((which ? real_allreduce : ncclAllReduce)(buf, buf, (size_t)(k + 1), ncclFloat32, ncclSum, comm, s));
            (which ? dir : sym)[i] = 1e9 * (now() - t0) / (50.0 * CALLS);
            CUDA_OK(cudaStreamSynchronize(s));
        }
    }
    printf("ncclAllReduce %.1f %.1f\n", median(sym, rounds), median(dir, rounds));

    /* cudaEventRecord on a stream nothing of usbyte is involved with */
    cudaEvent_t ev;
    CUDA_OK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    rounds = records / 1000;
    sym = realloc(sym, (size_t)rounds * sizeof *sym);
    dir = realloc(dir, (size_t)rounds * sizeof *dir);
    for (int i = 0; i < rounds; i++) {
        for (int which = 0; which < 2; which++) {
            double t0 = now();
            for (int j = 0; j < 1000; j++)
                CUDA_OK((which ? real_record : cudaEventRecord)(ev, other));
            (which ? dir : sym)[i] = 1e9 * (now() - t0) / 1000.0;
            CUDA_OK(cudaStreamSynchronize(other));
        }
    }
    printf("cudaEventRecord %.1f %.1f\n", median(sym, rounds), median(dir, rounds));
    free(sym);
    free(dir);
    CUDA_OK(cudaEventDestroy(ev));
    CUDA_OK(cudaFree(buf));
    NCCL_OK(ncclCommDestroy(comm));
    return 0;
}
