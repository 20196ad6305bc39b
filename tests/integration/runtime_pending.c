/* The consumers of an event that schedule mode keeps pending (recorded by the application on the
 * NCCL stream after a deferred call whose block is not issued yet), each checked for its answer
 * and for exact results.  Every iteration, every rank produces M gradients on a compute stream,
 * the NCCL stream waits for each one's ready event, allreduces it and records its end event;
 * at the end the compute stream waits on the last end event and the host checks every sum.
 * Run under emu-run, with or without libusbyte.so (runtime_pending.sh); with --expect-pending
 * (schedule mode with a plan whose first block holds every call, USBYTE_POLICY=syncea) the
 * program also asserts that call 0's end event is pending until call M-1 is issued.
 *
 *   --iters N --calls M --elems E      call c has E + 8c elements
 *   --other-thread-at IT    in iteration IT a consumer thread, after call 0: cudaEventQuery and
 *                           cudaEventElapsedTime of call 0's end event (cudaErrorNotReady while
 *                           pending), then cudaEventSynchronize on it, cudaStreamWaitEvent on
 *                           call 1's, cudaStreamSynchronize of the NCCL stream after call 2,
 *                           checking the results each time, while the main thread goes on issuing
 *   --rerecord-at IT        call 0's end event is recorded again on the compute stream (the
 *                           pending record is dropped: a host wait on it returns at once, no
 *                           flush); an event recorded after call 0 and destroyed while pending
 *   --query-loop-at IT      the issuing thread polls call 0's end event for --poll-s seconds
 *                           (it can only complete with a later call of this thread), then goes on
 *   --watchdog-abort-at IT  after half of iteration IT a watchdog thread aborts the communicator,
 *                           then waits on call 0's end event and on the device: both return */
#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "emu_common.h"

typedef struct job {
    int iters, calls, elems;
    int other_at, rerecord_at, query_at, abort_at;
    double poll_s;
    bool expect_pending;
    int rank, world;
    ncclComm_t comm;
    cudaStream_t nccl, compute, consumer;
    float **h_in, **h_out, **d_buf;
    cudaEvent_t *ready, *end;
    cudaEvent_t start; /* timing: recorded on the NCCL stream at the iteration's start */
    int it;
    sem_t issued[3], queried; /* calls 0..2 of the iteration issued; the consumer's queries done */
} job;

/* Distinct sizes: the call sequence alone gives the iteration's period. */
static int count_of(const job *j, int c) { return j->elems + 8 * c; }

static int expected(const job *j, int it, int c, int i) { return selfcheck_sum(j->world, it, c, i); }

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Copies call c's result to the host on stream s (after s's waits) and checks it. */
static void check_call(job *j, cudaStream_t s, int c, const char *who)
{
    int n = count_of(j, c);
    float *h = malloc((size_t)n * sizeof *h);
    EXPECT(h, "out of memory");
    CUDA_OK(cudaMemcpyAsync(h, j->d_buf[c], (size_t)n * sizeof *h, cudaMemcpyDeviceToHost, s));
    CUDA_OK(cudaStreamSynchronize(s));
    for (int i = 0; i < n; i++)
        if ((int)h[i] != expected(j, j->it, c, i)) {
            fprintf(stderr, "rank %d: WRONG RESULT (%s): iteration %d call %d element %d: %d, expected %d\n", j->rank,
                    who, j->it, c, i, (int)h[i], expected(j, j->it, c, i));
            exit(1);
        }
    free(h);
}

static void *consumer_main(void *arg)
{
    job *j = arg;
    CUDA_OK(cudaSetDevice(env_int("LOCAL_RANK")));
    sem_wait(&j->issued[0]);
    if (j->expect_pending) {
        cudaError_t q = cudaEventQuery(j->end[0]);
        EXPECT(q == cudaErrorNotReady, "cudaEventQuery of a pending event: %s", cudaGetErrorName(q));
        float ms = -1;
        q = cudaEventElapsedTime(&ms, j->start, j->end[0]);
        EXPECT(q == cudaErrorNotReady, "cudaEventElapsedTime of a pending event: %s", cudaGetErrorName(q));
    }
    sem_post(&j->queried);
    /* The main thread goes on issuing: each wait below returns once the blocks it needs are issued
     * (or at once, if they already are: both orders are correct).  A wait binds to the record
     * made before it, as in CUDA: each starts after the call it waits for was made. */
    CUDA_OK(cudaEventSynchronize(j->end[0]));
    check_call(j, j->consumer, 0, "after cudaEventSynchronize on another thread");
    sem_wait(&j->issued[1]);
    CUDA_OK(cudaStreamWaitEvent(j->consumer, j->end[1], 0));
    check_call(j, j->consumer, 1, "after cudaStreamWaitEvent on another thread");
    sem_wait(&j->issued[2]);
    CUDA_OK(cudaStreamSynchronize(j->nccl));
    for (int c = 0; c <= 2; c++)
        check_call(j, j->consumer, c, "after cudaStreamSynchronize on another thread");
    CUDA_OK(cudaEventSynchronize(j->end[2]));
    float ms = -1;
    CUDA_OK(cudaEventElapsedTime(&ms, j->start, j->end[2]));
    EXPECT(ms >= 0, "elapsed time %g ms", (double)ms);
    return NULL;
}

static void *watchdog_main(void *arg)
{
    job *j = arg;
    CUDA_OK(cudaSetDevice(env_int("LOCAL_RANK")));
    double t0 = now();
    NCCL_OK(ncclCommAbort(j->comm));
    double t1 = now();
    cudaError_t e = cudaEventSynchronize(j->end[0]);
    double t2 = now();
    cudaError_t d = cudaDeviceSynchronize();
    double t3 = now();
    printf("rank %d: watchdog: ncclCommAbort returned in %.3f s, cudaEventSynchronize in %.3f s (%s), "
           "cudaDeviceSynchronize in %.3f s (%s)\n",
           j->rank, t1 - t0, t2 - t1, cudaGetErrorName(e), t3 - t2, cudaGetErrorName(d));
    fflush(stdout);
    return NULL;
}

static void issue(job *j, int c)
{
    int n = count_of(j, c);
    for (int i = 0; i < n; i++)
        j->h_in[c][i] = (float)selfcheck_value(j->rank, j->it, c, i);
    CUDA_OK(cudaMemcpyAsync(j->d_buf[c], j->h_in[c], (size_t)n * sizeof(float), cudaMemcpyHostToDevice, j->compute));
    CUDA_OK(cudaEventRecord(j->ready[c], j->compute));
    CUDA_OK(cudaStreamWaitEvent(j->nccl, j->ready[c], 0));
    NCCL_OK(ncclAllReduce(j->d_buf[c], j->d_buf[c], (size_t)n, ncclFloat32, ncclSum, j->comm, j->nccl));
    CUDA_OK(cudaEventRecord(j->end[c], j->nccl));
}

static void iteration(job *j)
{
    int it = j->it;
    pthread_t consumer;
    if (it == j->other_at)
        EXPECT(pthread_create(&consumer, NULL, consumer_main, j) == 0, "pthread_create");
    CUDA_OK(cudaEventRecord(j->start, j->nccl));
    for (int c = 0; c < j->calls; c++) {
        if (it == j->abort_at && c == j->calls / 2) {
            pthread_t watchdog;
            EXPECT(pthread_create(&watchdog, NULL, watchdog_main, j) == 0, "pthread_create");
            pthread_join(watchdog, NULL);
            printf("runtime_pending ok: rank %d aborted in iteration %d\n", j->rank, it);
            exit(0);
        }
        issue(j, c);
        if (it == j->other_at && c <= 2) {
            sem_post(&j->issued[c]);
            if (c == 0)
                sem_wait(&j->queried);
        }
        if (c != 0)
            continue;
        if (it == j->rerecord_at) {
            cudaEvent_t gone;
            CUDA_OK(cudaEventCreateWithFlags(&gone, cudaEventDisableTiming));
            CUDA_OK(cudaEventRecord(gone, j->nccl));
            CUDA_OK(cudaEventDestroy(gone));
            CUDA_OK(cudaEventRecord(j->end[0], j->compute));
            CUDA_OK(cudaEventSynchronize(j->end[0])); /* the compute stream's record: no flush */
        }
        if (it == j->query_at) {
            int not_ready = 0, done = 0;
            for (double t0 = now(); now() - t0 < j->poll_s;) {
                cudaError_t q = cudaEventQuery(j->end[0]);
                EXPECT(q == cudaSuccess || q == cudaErrorNotReady, "cudaEventQuery: %s", cudaGetErrorName(q));
                q == cudaSuccess ? done++ : not_ready++;
                usleep(2000);
            }
            printf("rank %d: polled call 0's end event: %d not ready, %d complete\n", j->rank, not_ready, done);
            EXPECT(!j->expect_pending || done == 0, "a pending event was reported complete");
        }
    }
    CUDA_OK(cudaStreamWaitEvent(j->compute, j->end[j->calls - 1], 0));
    for (int c = 0; c < j->calls; c++)
        CUDA_OK(cudaMemcpyAsync(j->h_out[c], j->d_buf[c], (size_t)count_of(j, c) * sizeof(float),
                                cudaMemcpyDeviceToHost, j->compute));
    CUDA_OK(cudaStreamSynchronize(j->compute));
    for (int c = 0; c < j->calls; c++)
        for (int i = 0; i < count_of(j, c); i++)
            if ((int)j->h_out[c][i] != expected(j, it, c, i)) {
                fprintf(stderr, "rank %d: WRONG RESULT: iteration %d call %d element %d: %d, expected %d\n", j->rank, it,
                        c, i, (int)j->h_out[c][i], expected(j, it, c, i));
                exit(1);
            }
    if (it == j->other_at)
        pthread_join(consumer, NULL);
}

static int opt_int(int argc, char **argv, int *i)
{
    if (*i + 1 >= argc) {
        fprintf(stderr, "runtime_pending: %s needs a value\n", argv[*i]);
        exit(2);
    }
    return atoi(argv[++*i]);
}

static job j;

int main(int argc, char **argv)
{
    j = (job){.iters = 16, .calls = 8, .elems = 256, .other_at = -1, .rerecord_at = -1, .query_at = -1,
              .abort_at = -1, .poll_s = 3};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--iters")) j.iters = opt_int(argc, argv, &i);
        else if (!strcmp(a, "--calls")) j.calls = opt_int(argc, argv, &i);
        else if (!strcmp(a, "--elems")) j.elems = opt_int(argc, argv, &i);
        else if (!strcmp(a, "--other-thread-at")) j.other_at = opt_int(argc, argv, &i);
        else if (!strcmp(a, "--rerecord-at")) j.rerecord_at = opt_int(argc, argv, &i);
        else if (!strcmp(a, "--query-loop-at")) j.query_at = opt_int(argc, argv, &i);
        else if (!strcmp(a, "--watchdog-abort-at")) j.abort_at = opt_int(argc, argv, &i);
        else if (!strcmp(a, "--poll-s")) j.poll_s = opt_int(argc, argv, &i);
        else if (!strcmp(a, "--expect-pending")) j.expect_pending = true;
        else {
            fprintf(stderr, "runtime_pending: unknown option %s\n", a);
            return 2;
        }
    }
    EXPECT(j.calls >= 3 && j.calls <= 1024 && j.elems > 0, "--calls %d --elems %d", j.calls, j.elems);
    j.comm = world_comm(&j.rank, &j.world);
    CUDA_OK(cudaStreamCreateWithFlags(&j.nccl, cudaStreamNonBlocking));
    CUDA_OK(cudaStreamCreateWithFlags(&j.compute, cudaStreamNonBlocking));
    CUDA_OK(cudaStreamCreateWithFlags(&j.consumer, cudaStreamNonBlocking));
    j.h_in = calloc((size_t)j.calls, sizeof *j.h_in);
    j.h_out = calloc((size_t)j.calls, sizeof *j.h_out);
    j.d_buf = calloc((size_t)j.calls, sizeof *j.d_buf);
    j.ready = calloc((size_t)j.calls, sizeof *j.ready);
    j.end = calloc((size_t)j.calls, sizeof *j.end);
    EXPECT(j.h_in && j.h_out && j.d_buf && j.ready && j.end, "out of memory");
    for (int c = 0; c < j.calls; c++) {
        size_t bytes = (size_t)count_of(&j, c) * sizeof(float);
        CUDA_OK(cudaMallocHost((void **)&j.h_in[c], bytes));
        CUDA_OK(cudaMallocHost((void **)&j.h_out[c], bytes));
        CUDA_OK(cudaMalloc((void **)&j.d_buf[c], bytes));
        CUDA_OK(cudaEventCreateWithFlags(&j.ready[c], cudaEventDisableTiming));
        CUDA_OK(cudaEventCreate(&j.end[c])); /* timing: cudaEventElapsedTime on it */
    }
    CUDA_OK(cudaEventCreate(&j.start));
    for (int i = 0; i < 3; i++)
        sem_init(&j.issued[i], 0, 0);
    sem_init(&j.queried, 0, 0);
    for (j.it = 0; j.it < j.iters; j.it++)
        iteration(&j);
    CUDA_OK(cudaStreamSynchronize(j.nccl));
    NCCL_OK(ncclCommDestroy(j.comm));
    printf("runtime_pending ok: rank %d, %d iterations of %d calls checked\n", j.rank, j.iters, j.calls);
    return 0;
}
