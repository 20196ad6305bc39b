/* One process drives two emulated devices from two threads, as a single-process multi-GPU job
 * does: ncclCommInitAll makes the two ranks of one communicator, rank t on device t; thread t
 * makes its streams and events on device t, then makes the OTHER device current (as a thread
 * whose device a library switched, which NCCL allows: a communicator carries its device), runs a
 * self-checking loop of allreduces on its own NCCL stream, each
 * input produced on a compute stream that the NCCL stream waits for (exact sums checked on the
 * host every iteration), launches a kernel on the compute stream each iteration, and
 * checks after every call that its current device is still the other one.  Under libusbyte.so in schedule
 * mode (runtime_devices.sh) each communicator's private streams, events and buffers must be on
 * its own device: the emulator refuses an event recorded on a stream of another device and a
 * kernel launched on a stream of another device than the current one.
 *
 * With --one-thread the main thread drives both ranks, as nccl-tests -g 2 does: each call is one
 * group holding both ranks' allreduces (NCCL requires it: every call may block until the other
 * ranks arrive), with each rank's device current while its inputs are made.
 *
 *   --iters N --calls M [--one-thread] */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "emu_common.h"

#define NDEV 2

static int iters = 24, calls = 8;
static ncclComm_t comms[NDEV];

static void same_device(int want, const char *after)
{
    int now = -1;
    CUDA_OK(cudaGetDevice(&now));
    EXPECT(now == want, "thread of device %d: the current device is %d after %s", want, now, after);
}

static void count_kernel(void **args)
{
    (*(int *)args[0])++;
}

static void *loop(void *arg)
{
    int rank = (int)(intptr_t)arg;
    CUDA_OK(cudaSetDevice(rank));
    cudaStream_t s, compute;
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CUDA_OK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
    cudaEvent_t *ready = calloc((size_t)calls, sizeof *ready);
    EXPECT(ready != NULL, "out of memory");
    for (int c = 0; c < calls; c++)
        CUDA_OK(cudaEventCreateWithFlags(&ready[c], cudaEventDisableTiming));
    int other = (rank + 1) % NDEV;
    CUDA_OK(cudaSetDevice(other));
    int most = 64 + 8 * calls;
    float *h, *in, *d;
    CUDA_OK(cudaMallocHost((void **)&h, (size_t)most * sizeof *h));
    CUDA_OK(cudaMallocHost((void **)&in, (size_t)calls * (size_t)most * sizeof *in));
    CUDA_OK(cudaMalloc((void **)&d, (size_t)calls * (size_t)most * sizeof *d));
    int kernels = 0;
    void *kargs[] = {&kernels};
    for (int it = 0; it < iters; it++) {
        for (int c = 0; c < calls; c++) {
            int n = 64 + 8 * c;
            float *x = in + (size_t)c * most;
            for (int i = 0; i < n; i++)
                x[i] = (float)selfcheck_value(rank, it, c, i);
            CUDA_OK(cudaMemcpyAsync(d + (size_t)c * most, x, (size_t)n * sizeof *x, cudaMemcpyHostToDevice, compute));
            CUDA_OK(cudaEventRecord(ready[c], compute));
            CUDA_OK(cudaStreamWaitEvent(s, ready[c], 0));
            same_device(other, "cudaStreamWaitEvent");
            NCCL_OK(ncclAllReduce(d + (size_t)c * most, d + (size_t)c * most, (size_t)n, ncclFloat32, ncclSum,
                                  comms[rank], s));
            same_device(other, "ncclAllReduce");
        }
        /* A kernel goes to a stream of the current device only. */
        EXPECT(cudaLaunchKernel((const void *)(uintptr_t)count_kernel, (dim3){1, 1, 1}, (dim3){1, 1, 1}, kargs, 0,
                                compute) == cudaErrorInvalidResourceHandle,
               "a kernel launched on a stream of another device than the current one was accepted");
        cudaGetLastError();
        CUDA_OK(cudaSetDevice(rank));
        CUDA_OK(cudaLaunchKernel((const void *)(uintptr_t)count_kernel, (dim3){1, 1, 1}, (dim3){1, 1, 1}, kargs, 0,
                                 compute));
        CUDA_OK(cudaSetDevice(other));
        CUDA_OK(cudaStreamSynchronize(s));
        CUDA_OK(cudaStreamSynchronize(compute));
        same_device(other, "cudaStreamSynchronize");
        for (int c = 0; c < calls; c++) {
            int n = 64 + 8 * c;
            CUDA_OK(cudaMemcpy(h, d + (size_t)c * most, (size_t)n * sizeof *h, cudaMemcpyDeviceToHost));
            for (int i = 0; i < n; i++) {
                int want = selfcheck_sum(NDEV, it, c, i);
                EXPECT((int)h[i] == want, "device %d iteration %d call %d element %d: %d, expected %d", rank, it, c,
                       i, (int)h[i], want);
            }
        }
    }
    EXPECT(kernels == iters, "device %d: %d of %d kernels ran", rank, kernels, iters);
    NCCL_OK(ncclCommDestroy(comms[rank]));
    same_device(other, "ncclCommDestroy");
    CUDA_OK(cudaFreeHost(h));
    CUDA_OK(cudaFreeHost(in));
    CUDA_OK(cudaFree(d));
    for (int c = 0; c < calls; c++)
        CUDA_OK(cudaEventDestroy(ready[c]));
    free(ready);
    CUDA_OK(cudaStreamDestroy(s));
    CUDA_OK(cudaStreamDestroy(compute));
    return NULL;
}

/* Both ranks from this thread: per call one group with both ranks' allreduces. */
static void one_thread(void)
{
    cudaStream_t s[NDEV], compute[NDEV];
    cudaEvent_t *ready[NDEV];
    float *h, *in[NDEV], *d[NDEV];
    int most = 64 + 8 * calls;
    CUDA_OK(cudaMallocHost((void **)&h, (size_t)most * sizeof *h));
    for (int r = 0; r < NDEV; r++) {
        CUDA_OK(cudaSetDevice(r));
        CUDA_OK(cudaStreamCreateWithFlags(&s[r], cudaStreamNonBlocking));
        CUDA_OK(cudaStreamCreateWithFlags(&compute[r], cudaStreamNonBlocking));
        ready[r] = calloc((size_t)calls, sizeof *ready[r]);
        EXPECT(ready[r] != NULL, "out of memory");
        for (int c = 0; c < calls; c++)
            CUDA_OK(cudaEventCreateWithFlags(&ready[r][c], cudaEventDisableTiming));
        CUDA_OK(cudaMallocHost((void **)&in[r], (size_t)calls * (size_t)most * sizeof *in[r]));
        CUDA_OK(cudaMalloc((void **)&d[r], (size_t)calls * (size_t)most * sizeof *d[r]));
    }
    for (int it = 0; it < iters; it++) {
        for (int c = 0; c < calls; c++) {
            int n = 64 + 8 * c;
            for (int r = 0; r < NDEV; r++) {
                CUDA_OK(cudaSetDevice(r));
                float *x = in[r] + (size_t)c * most;
                for (int i = 0; i < n; i++)
                    x[i] = (float)selfcheck_value(r, it, c, i);
                CUDA_OK(cudaMemcpyAsync(d[r] + (size_t)c * most, x, (size_t)n * sizeof *x, cudaMemcpyHostToDevice,
                                        compute[r]));
                CUDA_OK(cudaEventRecord(ready[r][c], compute[r]));
                CUDA_OK(cudaStreamWaitEvent(s[r], ready[r][c], 0));
            }
            NCCL_OK(ncclGroupStart());
            for (int r = 0; r < NDEV; r++)
                NCCL_OK(ncclAllReduce(d[r] + (size_t)c * most, d[r] + (size_t)c * most, (size_t)n, ncclFloat32,
                                      ncclSum, comms[r], s[r]));
            NCCL_OK(ncclGroupEnd());
        }
        for (int r = 0; r < NDEV; r++) {
            CUDA_OK(cudaSetDevice(r));
            CUDA_OK(cudaStreamSynchronize(s[r]));
            for (int c = 0; c < calls; c++) {
                int n = 64 + 8 * c;
                CUDA_OK(cudaMemcpy(h, d[r] + (size_t)c * most, (size_t)n * sizeof *h, cudaMemcpyDeviceToHost));
                for (int i = 0; i < n; i++) {
                    int want = selfcheck_sum(NDEV, it, c, i);
                    EXPECT((int)h[i] == want, "rank %d iteration %d call %d element %d: %d, expected %d", r, it, c, i,
                           (int)h[i], want);
                }
            }
        }
    }
    for (int r = 0; r < NDEV; r++) {
        NCCL_OK(ncclCommDestroy(comms[r]));
        CUDA_OK(cudaSetDevice(r));
        for (int c = 0; c < calls; c++)
            CUDA_OK(cudaEventDestroy(ready[r][c]));
        free(ready[r]);
        CUDA_OK(cudaFreeHost(in[r]));
        CUDA_OK(cudaFree(d[r]));
        CUDA_OK(cudaStreamDestroy(s[r]));
        CUDA_OK(cudaStreamDestroy(compute[r]));
    }
    CUDA_OK(cudaFreeHost(h));
}

int main(int argc, char **argv)
{
    bool single = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--calls") && i + 1 < argc) calls = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--one-thread")) single = true;
        else {
            fprintf(stderr, "runtime_devices: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    EXPECT(iters > 0 && calls > 0 && calls < 1000, "--iters %d --calls %d", iters, calls);
    int devices[NDEV] = {0, 1};
    NCCL_OK(ncclCommInitAll(comms, NDEV, devices));
    for (int t = 0; t < NDEV; t++) {
        int dev = -1;
        NCCL_OK(ncclCommCuDevice(comms[t], &dev));
        EXPECT(dev == t, "communicator %d is on device %d", t, dev);
    }
    if (single) {
        one_thread();
    } else {
        pthread_t threads[NDEV];
        for (int t = 0; t < NDEV; t++)
            EXPECT(pthread_create(&threads[t], NULL, loop, (void *)(intptr_t)t) == 0, "pthread_create");
        for (int t = 0; t < NDEV; t++)
            pthread_join(threads[t], NULL);
    }
    printf("runtime_devices ok: %d devices, %d iterations of %d calls checked\n", NDEV, iters, calls);
    return 0;
}
