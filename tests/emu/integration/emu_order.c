/* Operations of one communicator run in host issue order whatever stream carries them.
 *
 * A = allreduce(sum) is issued on stream 1 behind a host function that holds stream 1 until
 * the host releases it; B = allreduce(prod) on the same buffer is issued afterwards on stream 2.
 * B must not complete while A is held (checked by polling B's event for a while before the
 * release: a correct emulator never completes it, a broken one does so within microseconds),
 * and the data proves the order: sum then prod gives S^p with S = 1+..+p, prod then sum p*p!.
 * Then a group whose two allreduces sit on two streams must hold both streams until done. */
#include <pthread.h>
#include <stdint.h>

#include "../../integration/emu_common.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int released;

static void CUDART_CB gate(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    while (!released)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
}

int main(void)
{
    int rank, p;
    ncclComm_t comm = world_comm(&rank, &p);
    cudaStream_t s1, s2;
    CUDA_OK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CUDA_OK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    int64_t *x;
    int64_t v = rank + 1;
    CUDA_OK(cudaMalloc((void **)&x, sizeof v));
    CUDA_OK(cudaMemcpy(x, &v, sizeof v, cudaMemcpyHostToDevice));
    cudaEvent_t b_done;
    CUDA_OK(cudaEventCreate(&b_done));

    CUDA_OK(cudaLaunchHostFunc(s1, gate, NULL));
    NCCL_OK(ncclAllReduce(x, x, 1, ncclInt64, ncclSum, comm, s1));    /* A */
    NCCL_OK(ncclAllReduce(x, x, 1, ncclInt64, ncclProd, comm, s2));   /* B */
    CUDA_OK(cudaEventRecord(b_done, s2));

    double until = now_s() + 0.3;
    while (now_s() < until) {
        cudaError_t q = cudaEventQuery(b_done);
        EXPECT(q == cudaErrorNotReady, "B (issued after A) completed while A is held: %s", cudaGetErrorString(q));
        nanosleep(&(struct timespec){0, 1000000}, NULL);   /* poll gently: 2 shared cores */
    }
    pthread_mutex_lock(&mu);
    released = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    CUDA_OK(cudaStreamSynchronize(s1));
    CUDA_OK(cudaStreamSynchronize(s2));
    CUDA_OK(cudaMemcpy(&v, x, sizeof v, cudaMemcpyDeviceToHost));
    int64_t s = (int64_t)p * (p + 1) / 2, want = 1;
    for (int r = 0; r < p; r++)
        want *= s;
    EXPECT(v == want, "sum then prod gives %lld, got %lld (wrong order?)", (long long)want, (long long)v);

    /* A group spanning two streams: each stream is held until the group has run. */
    int64_t *y, *z;
    CUDA_OK(cudaMalloc((void **)&y, sizeof v));
    CUDA_OK(cudaMalloc((void **)&z, sizeof v));
    v = rank + 1;
    CUDA_OK(cudaMemcpy(y, &v, sizeof v, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(z, &v, sizeof v, cudaMemcpyHostToDevice));
    NCCL_OK(ncclGroupStart());
    NCCL_OK(ncclAllReduce(y, y, 1, ncclInt64, ncclMax, comm, s1));
    NCCL_OK(ncclAllReduce(z, z, 1, ncclInt64, ncclMin, comm, s2));
    NCCL_OK(ncclGroupEnd());
    CUDA_OK(cudaStreamSynchronize(s2));
    CUDA_OK(cudaMemcpy(&v, y, sizeof v, cudaMemcpyDeviceToHost));   /* s2 done implies the group ran */
    EXPECT(v == p, "group max %lld", (long long)v);
    CUDA_OK(cudaMemcpy(&v, z, sizeof v, cudaMemcpyDeviceToHost));
    EXPECT(v == 1, "group min %lld", (long long)v);
    CUDA_OK(cudaStreamSynchronize(s1));

    NCCL_OK(ncclCommDestroy(comm));
    printf("order: host issue order held across streams on %d ranks\n", p);
    return 0;
}
