/* A peer dies; the survivor's watchdog aborts the communicator (what PyTorch's does): the abort
 * must return at once whatever usbyte was doing (docs/design.md section 3: a hook never blocks the
 * watchdog, ncclCommAbort always returns), and a call of the training thread that waits for the
 * dead peer must return once the communicator is aborted.  Rank 1 _exits at iteration --die-at;
 * rank 0 issues --after more iterations without any host synchronisation (its collectives never
 * complete).  Its watchdog thread (--abort-thread) aborts when the training thread is done or has
 * been inside one call for 1.5 s; without it the training thread aborts after its loop.  Prints
 * how long the abort took and how long the training thread's call took to return after it.  Run
 * by runtime_abort.sh with and without libusbyte.so.
 *
 *   --check-errors   the training thread checks every call's result and aborts at the first error
 *                    (a single-threaded program's own error handling); with --abort-thread an
 *                    error ends the training loop and the watchdog aborts (PyTorch: the collective
 *                    raises, the watchdog aborts); otherwise an error ends the loop, and the
 *                    program aborts after it (NCCL 2.28 refuses every operation on a
 *                    communicator with an asynchronous error: a peer's death reaches every later
 *                    call)
 *   --abort-at N     every rank's watchdog aborts as soon as its training thread begins iteration
 *                    N, while that thread goes on issuing (in schedule mode: in the middle of
 *                    the issue of the plan's blocks); no rank dies (under TSan: no data race
 *                    between the abort and the issue)
 *   --two-comms      a second communicator (a split of the first) with its own allreduces,
 *                    interleaved; the abort ends both as PyTorch does with NCCL 2.22 and later:
 *                    ncclGroupStart, ncclCommAbort of each, ncclGroupEnd */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <unistd.h>

#include "emu_common.h"

#define CALLS 6

static ncclComm_t comm, comm2;
static bool check_errors, two_comms, thread;
static double abort_seconds;
static _Atomic double aborted_at;
static _Atomic double call_since;   /* when the training thread entered its current call, 0: none */
static atomic_bool done, aborted;
static int abort_at = -1;
static atomic_int iteration;

static void do_abort(void)
{
    atomic_store(&aborted, true); /* before: the training thread released by it makes no more calls */
    double t0 = now_s();
    if (two_comms) {
        NCCL_OK(ncclGroupStart());
        NCCL_OK(ncclCommAbort(comm));
        NCCL_OK(ncclCommAbort(comm2));
        NCCL_OK(ncclGroupEnd());
    } else {
        NCCL_OK(ncclCommAbort(comm));
    }
    abort_seconds = now_s() - t0;
    atomic_store(&aborted_at, now_s());
}

static void *watchdog(void *arg)
{
    (void)arg;
    while (!atomic_load(&done)) {
        if (abort_at >= 0 && atomic_load(&iteration) >= abort_at) {
            fprintf(stderr, "watchdog: iteration %d began: aborting\n", abort_at);
            break;
        }
        double since = atomic_load(&call_since);
        if (since > 0 && now_s() - since > 1.5) {
            fprintf(stderr, "rank 0: watchdog: the training thread is stuck in a call: aborting\n");
            break;
        }
        if (abort_at >= 0)
            sched_yield(); /* the abort lands within the iteration's calls */
        else
            usleep(10000);
    }
    do_abort();
    return NULL;
}

/* Every call of the training thread: timed, and its error ignored once the communicator is
 * aborted; no call is made after the abort (an aborted communicator's handle is gone), nor
 * after an error handed to the watchdog. */
#define CALL(expr)                                                                              \
    do {                                                                                        \
        if (atomic_load(&aborted) || atomic_load(&done))                                        \
            break;                                                                              \
        atomic_store(&call_since, now_s());                                                     \
        int r_ = (int)(expr);                                                                   \
        atomic_store(&call_since, 0.0);                                                         \
        if (r_ != 0 && !atomic_load(&aborted) && thread) {                                      \
            fprintf(stderr, "rank 0: %s returned %d: the watchdog aborts\n", #expr, r_);        \
            atomic_store(&done, true);                                                          \
        } else if (r_ != 0 && !atomic_load(&aborted) && check_errors) {                         \
            fprintf(stderr, "rank 0: %s returned %d: aborting\n", #expr, r_);                   \
            do_abort();                                                                         \
        } else if (r_ != 0 && !atomic_load(&aborted)) {                                         \
            fprintf(stderr, "rank 0: %s returned %d: the loop ends\n", #expr, r_);              \
            atomic_store(&done, true);                                                          \
        }                                                                                       \
    } while (0)

int main(int argc, char **argv)
{
    int die_at = 3, after = 3;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--die-at") && i + 1 < argc) die_at = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--after") && i + 1 < argc) after = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--abort-thread")) thread = true;
        else if (!strcmp(argv[i], "--check-errors")) check_errors = true;
        else if (!strcmp(argv[i], "--two-comms")) two_comms = true;
        else if (!strcmp(argv[i], "--abort-at") && i + 1 < argc) abort_at = atoi(argv[++i]), thread = true;
        else { fprintf(stderr, "runtime_abort: unknown option %s\n", argv[i]); return 2; }
    }
    int rank, world;
    comm = world_comm(&rank, &world);
    if (two_comms)
        NCCL_OK(ncclCommSplit(comm, 0, rank, &comm2, NULL));
    cudaStream_t s, s2, compute;
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CUDA_OK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    CUDA_OK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
    /* The second communicator reduces buffers of its own: the two streams run concurrently. */
    float *buf[CALLS], *buf2[CALLS];
    cudaEvent_t ready[CALLS], end, end2;
    for (int k = 0; k < CALLS; k++) {
        CUDA_OK(cudaMalloc((void **)&buf[k], (size_t)(64 * (k + 1)) * sizeof(float)));
        CUDA_OK(cudaMemsetAsync(buf[k], 0, (size_t)(64 * (k + 1)) * sizeof(float), compute));
        CUDA_OK(cudaMalloc((void **)&buf2[k], (size_t)(32 * (k + 1)) * sizeof(float)));
        CUDA_OK(cudaMemsetAsync(buf2[k], 0, (size_t)(32 * (k + 1)) * sizeof(float), compute));
        CUDA_OK(cudaEventCreateWithFlags(&ready[k], cudaEventDisableTiming));
    }
    CUDA_OK(cudaEventCreateWithFlags(&end, cudaEventDisableTiming));
    CUDA_OK(cudaEventCreateWithFlags(&end2, cudaEventDisableTiming));
    pthread_t wd;
    if (thread && (rank == 0 || abort_at >= 0))
        EXPECT(pthread_create(&wd, NULL, watchdog, NULL) == 0, "pthread_create");
    for (int it = 0; it < die_at + after && !atomic_load(&aborted) && !atomic_load(&done); it++) {
        if (rank == 1 && it == die_at) {
            fprintf(stderr, "rank 1: dying at iteration %d\n", it);
            _exit(0);
        }
        atomic_store(&iteration, it);
        for (int k = 0; k < CALLS; k++) {
            CALL(cudaEventRecord(ready[k], compute));
            CALL(cudaStreamWaitEvent(s, ready[k], 0));
            CALL(ncclAllReduce(buf[k], buf[k], (size_t)(64 * (k + 1)), ncclFloat32, ncclSum, comm, s));
            if (two_comms) {
                CALL(cudaStreamWaitEvent(s2, ready[k], 0));
                CALL(ncclAllReduce(buf2[k], buf2[k], (size_t)(32 * (k + 1)), ncclFloat32, ncclSum, comm2, s2));
            }
        }
        CALL(cudaEventRecord(end, s));
        CALL(cudaStreamWaitEvent(compute, end, 0));
        if (two_comms) {
            CALL(cudaEventRecord(end2, s2));
            CALL(cudaStreamWaitEvent(compute, end2, 0));
        }
        if (it < die_at) /* the healthy iterations end with a host wait, like a loss print */
            CALL(cudaStreamSynchronize(compute));
    }
    /* How long after the abort returned the stuck call did (0: it returned before). */
    double t_end = now_s(), t_abort = atomic_load(&aborted_at);
    double released = atomic_load(&aborted) && t_abort > 0 && t_end > t_abort ? t_end - t_abort : 0;
    atomic_store(&done, true);
    if (thread)
        pthread_join(wd, NULL);
    else if (!atomic_load(&aborted)) /* not already, at an error */
        do_abort();
    printf("runtime_abort: rank %d: ncclCommAbort returned in %.3f s, the training thread %.3f s after it\n", rank,
           abort_seconds, released);
    fflush(stdout);
    /* The device work behind the dead peer never completes: leave without waiting for it. */
    _exit(abort_seconds < 1.0 && released < 1.0 ? 0 : 1);
}
