/* Measurements for the emulator's network knobs (emu_net.sh judges them against the op log).
 *
 *   emu_net curve BYTES[:i] ...   one allreduce of each size (":i" in place), each after a
 *                                 4-byte in-place allreduce that lines the ranks up; prints
 *                                 "op INDEX BYTES INPLACE EVENT_MS RECORDED_NS END_RECORDED_NS"
 *                                 (the stream time between events recorded around it, and the host
 *                                 clock when each event was recorded)
 *   emu_net interference MS       compute of MS milliseconds on a compute stream of the
 *                                 communicator's device: alone, beside an allreduce of the
 *                                 communicator as a host function and as a kernel, and on another
 *                                 device beside it, each 5 times; prints
 *                                 "compute KIND OP_INDEX EVENT_MS FN_START_NS FN_END_NS" (OP_INDEX:
 *                                 the allreduce beside it, -1 for none)
 *   emu_net small-ops COUNT US    COUNT host functions of US microseconds each on a compute stream,
 *                                 all beside one long allreduce of the communicator; prints
 *                                 "small OP_INDEX EVENT_MS SUM_FN_MS FIRST_START_NS LAST_END_NS"
 *                                 (the stream time between events around them all, and the time
 *                                 the functions themselves ran)
 * The curve mode checks each result. */
#include <stdint.h>

#include "../../integration/emu_common.h"

#define INTERFERENCE_REPS 5   /* each measurement, so that two a busy machine delayed are outvoted */

static long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

struct compute {
    double ms;
    long long start_ns, end_ns;
};

static void sleep_ms(struct compute *c)
{
    c->start_ns = now_ns();
    struct timespec d = {(time_t)(c->ms / 1000), (long)(((long long)(c->ms * 1e6)) % 1000000000LL)};
    while (nanosleep(&d, &d) != 0) {
    }
    c->end_ns = now_ns();
}

static void CUDART_CB host_compute(void *arg) { sleep_ms(arg); }
static void kernel_compute(void **args) { sleep_ms(args[0]); }

static long long op_index;   /* collectives issued on the communicator so far */

static void line_up(ncclComm_t comm, float *sync, cudaStream_t s)
{
    NCCL_OK(ncclAllReduce(sync, sync, 1, ncclFloat32, ncclSum, comm, s));
    op_index++;
    CUDA_OK(cudaStreamSynchronize(s));
}

static void curve(int argc, char **argv, ncclComm_t comm, int rank, int p)
{
    cudaStream_t s;
    CUDA_OK(cudaStreamCreate(&s));
    cudaEvent_t start, end;
    CUDA_OK(cudaEventCreate(&start));
    CUDA_OK(cudaEventCreate(&end));
    float *sync;
    CUDA_OK(cudaMalloc((void **)&sync, sizeof(float)));
    for (int a = 0; a < argc; a++) {
        char *rest;
        size_t bytes = strtoull(argv[a], &rest, 10), n = bytes / sizeof(float);
        int in_place = strcmp(rest, ":i") == 0;
        EXPECT(n > 0 && n * sizeof(float) == bytes && (in_place || *rest == '\0'), "bad size %s", argv[a]);
        float *in, *out, *host = malloc(bytes);
        CUDA_OK(cudaMalloc((void **)&in, bytes));
        out = in;
        if (!in_place)
            CUDA_OK(cudaMalloc((void **)&out, bytes));
        for (size_t i = 0; i < n; i++)
            host[i] = (float)(rank + 1);
        CUDA_OK(cudaMemcpy(in, host, bytes, cudaMemcpyHostToDevice));
        line_up(comm, sync, s);
        long long recorded = now_ns();
        CUDA_OK(cudaEventRecord(start, s));
        NCCL_OK(ncclAllReduce(in, out, n, ncclFloat32, ncclSum, comm, s));
        long long index = op_index++;
        long long end_recorded = now_ns();
        CUDA_OK(cudaEventRecord(end, s));
        CUDA_OK(cudaEventSynchronize(end));
        float ms;
        CUDA_OK(cudaEventElapsedTime(&ms, start, end));
        printf("op %lld %zu %d %.6f %lld %lld\n", index, bytes, in_place, ms, recorded, end_recorded);
        CUDA_OK(cudaMemcpy(host, out, bytes, cudaMemcpyDeviceToHost));
        EXPECT(host[0] == (float)p * (p + 1) / 2 && host[n - 1] == host[0], "allreduce of %zu bytes: %g", bytes, host[0]);
        free(host);
        CUDA_OK(cudaFree(in));
        if (!in_place)
            CUDA_OK(cudaFree(out));
    }
    CUDA_OK(cudaFree(sync));
}

/* One compute measurement: the work between two events on `compute` (of device compute_dev),
 * with an allreduce issued on `comm_stream` just before it when `beside` is set. */
static void measure(const char *kind, int as_kernel, int beside, double ms, ncclComm_t comm, cudaStream_t comm_stream,
                    int compute_dev, cudaStream_t compute, float *buf, size_t n, float *sync)
{
    int dev;
    CUDA_OK(cudaGetDevice(&dev));
    struct compute c = {ms, 0, 0};
    void *args[1] = {&c};
    line_up(comm, sync, comm_stream);
    long long index = -1;
    if (beside) {
        NCCL_OK(ncclAllReduce(buf, buf, n, ncclFloat32, ncclSum, comm, comm_stream));
        index = op_index++;
    }
    CUDA_OK(cudaSetDevice(compute_dev));
    cudaEvent_t start, end;
    CUDA_OK(cudaEventCreate(&start));
    CUDA_OK(cudaEventCreate(&end));
    CUDA_OK(cudaEventRecord(start, compute));
    if (as_kernel)
        CUDA_OK(cudaLaunchKernel((const void *)kernel_compute, (dim3){1, 1, 1}, (dim3){1, 1, 1}, args, 0, compute));
    else
        CUDA_OK(cudaLaunchHostFunc(compute, host_compute, &c));
    CUDA_OK(cudaEventRecord(end, compute));
    CUDA_OK(cudaEventSynchronize(end));
    CUDA_OK(cudaStreamSynchronize(comm_stream));
    float got;
    CUDA_OK(cudaEventElapsedTime(&got, start, end));
    printf("compute %s %lld %.6f %lld %lld\n", kind, index, got, c.start_ns, c.end_ns);
    CUDA_OK(cudaEventDestroy(start));
    CUDA_OK(cudaEventDestroy(end));
    CUDA_OK(cudaSetDevice(dev));
}

/* A communicator's stream, a compute stream, an allreduce buffer of n floats and a sync float. */
static void beside_setup(cudaStream_t *comm_stream, cudaStream_t *compute, float **buf, size_t n, float **sync)
{
    CUDA_OK(cudaStreamCreate(comm_stream));
    CUDA_OK(cudaStreamCreate(compute));
    CUDA_OK(cudaMalloc((void **)buf, n * sizeof(float)));
    CUDA_OK(cudaMalloc((void **)sync, sizeof(float)));
    CUDA_OK(cudaMemset(*buf, 0, n * sizeof(float)));
}

static void interference(double ms, ncclComm_t comm)
{
    cudaStream_t comm_stream, compute, other;
    const size_t n = 1024;
    float *buf, *sync;
    beside_setup(&comm_stream, &compute, &buf, n, &sync);
    int dev, count;
    CUDA_OK(cudaGetDevice(&dev));
    CUDA_OK(cudaGetDeviceCount(&count));
    EXPECT(count > 1, "needs two devices");
    CUDA_OK(cudaSetDevice((dev + 1) % count));
    CUDA_OK(cudaStreamCreate(&other));
    CUDA_OK(cudaSetDevice(dev));
    for (int rep = 0; rep < INTERFERENCE_REPS; rep++) {
        measure("alone", 0, 0, ms, comm, comm_stream, dev, compute, buf, n, sync);
        measure("host", 0, 1, ms, comm, comm_stream, dev, compute, buf, n, sync);
        measure("kernel", 1, 1, ms, comm, comm_stream, dev, compute, buf, n, sync);
        measure("other-device", 0, 1, ms, comm, comm_stream, (dev + 1) % count, other, buf, n, sync);
    }
    CUDA_OK(cudaFree(buf));
    CUDA_OK(cudaFree(sync));
}

/* Many short layers beside one collective: what the emulator adds must be F times their overlap,
 * not a sleep's granularity per layer. */
static void small_ops(int count, double us, ncclComm_t comm)
{
    cudaStream_t comm_stream, compute;
    const size_t n = 1024;
    float *buf, *sync;
    beside_setup(&comm_stream, &compute, &buf, n, &sync);
    struct compute *c = calloc((size_t)count, sizeof *c);
    EXPECT(c != NULL, "out of memory");
    line_up(comm, sync, comm_stream);
    NCCL_OK(ncclAllReduce(buf, buf, n, ncclFloat32, ncclSum, comm, comm_stream));
    long long index = op_index++;
    cudaEvent_t start, end;
    CUDA_OK(cudaEventCreate(&start));
    CUDA_OK(cudaEventCreate(&end));
    CUDA_OK(cudaEventRecord(start, compute));
    for (int i = 0; i < count; i++) {
        c[i].ms = us / 1000.0;
        CUDA_OK(cudaLaunchHostFunc(compute, host_compute, &c[i]));
    }
    CUDA_OK(cudaEventRecord(end, compute));
    CUDA_OK(cudaEventSynchronize(end));
    CUDA_OK(cudaStreamSynchronize(comm_stream));
    float got;
    CUDA_OK(cudaEventElapsedTime(&got, start, end));
    double fn_ms = 0.0;
    for (int i = 0; i < count; i++)
        fn_ms += (double)(c[i].end_ns - c[i].start_ns) / 1e6;
    printf("small %lld %.6f %.6f %lld %lld\n", index, got, fn_ms, c[0].start_ns, c[count - 1].end_ns);
    free(c);
    CUDA_OK(cudaEventDestroy(start));
    CUDA_OK(cudaEventDestroy(end));
    CUDA_OK(cudaFree(buf));
    CUDA_OK(cudaFree(sync));
}

int main(int argc, char **argv)
{
    EXPECT(argc >= 3, "usage: emu_net curve BYTES[:i]... | emu_net interference MS | emu_net small-ops COUNT US");
    int rank, p;
    ncclComm_t comm = world_comm(&rank, &p);
    if (strcmp(argv[1], "curve") == 0)
        curve(argc - 2, argv + 2, comm, rank, p);
    else if (strcmp(argv[1], "interference") == 0)
        interference(atof(argv[2]), comm);
    else if (strcmp(argv[1], "small-ops") == 0 && argc >= 4)
        small_ops(atoi(argv[2]), atof(argv[3]), comm);
    else
        EXPECT(0, "unknown mode %s", argv[1]);
    NCCL_OK(ncclCommDestroy(comm));
    printf("net: done\n");
    return 0;
}
