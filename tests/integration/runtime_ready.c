/* The ready time the runtime reads for each allreduce is the application's own event time, for
 * the very record the NCCL stream waited on (tests/integration/runtime_ready.sh checks it).
 *
 * Per iteration, on a compute stream where each producer record and the work before it are held
 * back by a gate that opens once the host has issued them (so every record is issued before the
 * stream reaches it, and its time is the end of the work before it, whatever the threads'
 * scheduling; the gate opens before the call is issued, as the runtime may wait for the
 * producer there, at the agreement):
 *   work, record A (call 0's producer), work, record B (call 1's), work, record A again (call 2's:
 *   re-recorded before the runtime can have read the first record's time), work, record C (3's).
 * The NCCL stream waits on each record and allreduces; calls 0 and 1 are issued by the main
 * thread, calls 2 and 3 by a second thread (as Horovod's background thread does).  Right after
 * each producer record the program records a timing event of its own ("truth") on the compute
 * stream and prints, at the end, every truth time relative to the first one:
 *   truth call G offset SECONDS      (G: the call's index in the communicator's call sequence)
 * Calls have different sizes, so the period is the 4 calls of an iteration.
 *
 *   runtime_ready                  one gate per call
 *   runtime_ready iteration-gate   one gate per iteration, opened once the host has issued the
 *                                  whole iteration: the runtime must never wait for the producer of
 *                                  the call being issued (at the agreement), or this hangs */
#include <pthread.h>
#include <stdbool.h>

#include "emu_common.h"

#define N_CALLS 4
#define ITERS 14

/* Device work of a known duration on the compute stream (measured, not slept). */
static void spin_fn(void *arg)
{
    double until = now_s() + *(const double *)arg;
    while (now_s() < until) {
    }
}

struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int opened;   /* the gates of calls < opened are open */
};

struct gate_arg {
    struct gate *g;
    int call;
};

static void gate_fn(void *arg)
{
    struct gate_arg *a = arg;
    pthread_mutex_lock(&a->g->mu);
    while (a->g->opened <= a->call)
        pthread_cond_wait(&a->g->cv, &a->g->mu);
    pthread_mutex_unlock(&a->g->mu);
}

static void gate_open_through(struct gate *g, int call)
{
    pthread_mutex_lock(&g->mu);
    g->opened = call + 1;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

/* The second issuing thread: one job at a time (wait on an event, then an allreduce). */
struct issuer {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool has_job, done, quit;
    cudaEvent_t ev;
    size_t count;
    float *buf;
    ncclComm_t comm;
    cudaStream_t nccl;
    int device;
};

static void issue(cudaStream_t nccl, ncclComm_t comm, cudaEvent_t ev, float *buf, size_t count)
{
    CUDA_OK(cudaStreamWaitEvent(nccl, ev, 0));
    NCCL_OK(ncclAllReduce(buf, buf, count, ncclFloat32, ncclSum, comm, nccl));
}

static void *issuer_main(void *arg)
{
    struct issuer *is = arg;
    CUDA_OK(cudaSetDevice(is->device));
    pthread_mutex_lock(&is->mu);
    for (;;) {
        while (!is->has_job && !is->quit)
            pthread_cond_wait(&is->cv, &is->mu);
        if (is->quit)
            break;
        issue(is->nccl, is->comm, is->ev, is->buf, is->count);
        is->has_job = false;
        is->done = true;
        pthread_cond_broadcast(&is->cv);
    }
    pthread_mutex_unlock(&is->mu);
    return NULL;
}

/* Hands one call to the issuer and waits until it is issued (the application's own order: the
 * wait on a record is issued before the event is recorded again). */
static void issue_elsewhere(struct issuer *is, cudaEvent_t ev, float *buf, size_t count)
{
    pthread_mutex_lock(&is->mu);
    is->ev = ev;
    is->buf = buf;
    is->count = count;
    is->done = false;
    is->has_job = true;
    pthread_cond_broadcast(&is->cv);
    while (!is->done)
        pthread_cond_wait(&is->cv, &is->mu);
    pthread_mutex_unlock(&is->mu);
}

int main(int argc, char **argv)
{
    bool iteration_gate = argc > 1 && strcmp(argv[1], "iteration-gate") == 0;
    int rank, world;
    ncclComm_t comm = world_comm(&rank, &world);
    cudaStream_t compute, nccl;
    CUDA_OK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
    CUDA_OK(cudaStreamCreateWithFlags(&nccl, cudaStreamNonBlocking));
    cudaEvent_t a, b, c, truth[ITERS][N_CALLS];
    CUDA_OK(cudaEventCreate(&a));
    CUDA_OK(cudaEventCreateWithFlags(&b, cudaEventDisableTiming));
    CUDA_OK(cudaEventCreate(&c));
    for (int it = 0; it < ITERS; it++)
        for (int k = 0; k < N_CALLS; k++)
            CUDA_OK(cudaEventCreate(&truth[it][k]));
    float *buf;
    CUDA_OK(cudaMalloc((void **)&buf, 64 * sizeof(float)));
    CUDA_OK(cudaMemset(buf, 0, 64 * sizeof(float)));
    CUDA_OK(cudaDeviceSynchronize());

    struct issuer is = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .comm = comm,
                        .nccl = nccl, .device = env_int("LOCAL_RANK")};
    pthread_t thread;
    EXPECT(pthread_create(&thread, NULL, issuer_main, &is) == 0, "cannot start the issuing thread");
    struct gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    static struct gate_arg gates[ITERS * N_CALLS];
    /* Work before each producer record, different per call so that a reading of the wrong
     * record is off by at least 0.3 ms. */
    static const double work_s[N_CALLS] = {1.0e-3, 1.5e-3, 0.3e-3, 0.8e-3};
    cudaEvent_t producer[N_CALLS] = {a, b, a, c};
    for (int it = 0; it < ITERS; it++) {
        for (int k = 0; k < N_CALLS; k++) {
            int call = it * N_CALLS + k;
            gates[call] = (struct gate_arg){&g, call};
            if (!iteration_gate || k == 0)
                CUDA_OK(cudaLaunchHostFunc(compute, gate_fn, &gates[call]));
            CUDA_OK(cudaLaunchHostFunc(compute, spin_fn, (void *)&work_s[k]));
            CUDA_OK(cudaEventRecord(producer[k], compute));
            CUDA_OK(cudaEventRecord(truth[it][k], compute));
            if (!iteration_gate)
                gate_open_through(&g, call);
            float *part = buf + 16 * k;
            size_t count = (size_t)k + 1;
            if (k < 2)
                issue(nccl, comm, producer[k], part, count);
            else
                issue_elsewhere(&is, producer[k], part, count);
        }
        gate_open_through(&g, it * N_CALLS + N_CALLS - 1);
        CUDA_OK(cudaStreamSynchronize(nccl));
    }
    pthread_mutex_lock(&is.mu);
    is.quit = true;
    pthread_cond_broadcast(&is.cv);
    pthread_mutex_unlock(&is.mu);
    pthread_join(thread, NULL);
    CUDA_OK(cudaDeviceSynchronize());
    for (int it = 0; it < ITERS; it++)
        for (int k = 0; k < N_CALLS; k++) {
            float ms;
            CUDA_OK(cudaEventElapsedTime(&ms, truth[0][0], truth[it][k]));
            printf("truth call %d offset %.9f\n", it * N_CALLS + k, (double)ms * 1e-3);
        }
    NCCL_OK(ncclCommDestroy(comm));
    printf("runtime_ready: done\n");
    return 0;
}
