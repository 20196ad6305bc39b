/* Broadcast, reduce, allgather, reducescatter (out of place, in place, multi-chunk), a ring of
 * send/recv in one group, a send/recv pair outside groups, two communicators, split, the
 * unique-id sequence, the pnccl aliases, and NCCL's argument errors. */
#include <dlfcn.h>
#include <stdint.h>

#include "../../integration/emu_common.h"

static int32_t pattern(int rank, size_t i)
{
    return (int32_t)(rank * 1000003 + (int)i * 7 + 1);
}

static int32_t *dev_ints(size_t n, int rank)
{
    int32_t *host = malloc(n * 4), *dev;
    for (size_t i = 0; i < n; i++)
        host[i] = pattern(rank, i);
    CUDA_OK(cudaMalloc((void **)&dev, n * 4 + 4));
    CUDA_OK(cudaMemcpy(dev, host, n * 4, cudaMemcpyHostToDevice));
    free(host);
    return dev;
}

static int32_t *to_host(const int32_t *dev, size_t n)
{
    int32_t *host = malloc(n * 4 + 4);
    CUDA_OK(cudaMemcpy(host, dev, n * 4, cudaMemcpyDeviceToHost));
    return host;
}

static void test_broadcast_reduce(ncclComm_t comm, cudaStream_t s, int rank, int p)
{
    const size_t n = 300007;   /* > one 1 MiB staging chunk of int32 */
    for (int root = 0; root < p; root++) {
        int32_t *send = dev_ints(n, rank), *recv;
        CUDA_OK(cudaMalloc((void **)&recv, n * 4));
        CUDA_OK(cudaMemset(recv, 0xff, n * 4));
        NCCL_OK(ncclBroadcast(send, recv, n, ncclInt32, root, comm, s));
        CUDA_OK(cudaStreamSynchronize(s));
        int32_t *h = to_host(recv, n);
        for (size_t i = 0; i < n; i++)
            EXPECT(h[i] == pattern(root, i), "broadcast root %d element %zu: %d", root, i, h[i]);
        free(h);

        NCCL_OK(ncclBcast(send, n, ncclInt32, root, comm, s));   /* in place */
        CUDA_OK(cudaStreamSynchronize(s));
        h = to_host(send, n);
        for (size_t i = 0; i < n; i++)
            EXPECT(h[i] == pattern(root, i), "bcast root %d element %zu: %d", root, i, h[i]);
        free(h);

        CUDA_OK(cudaMemset(recv, 0, n * 4));
        int32_t *fresh = dev_ints(n, rank);
        NCCL_OK(ncclReduce(fresh, recv, n, ncclInt32, ncclSum, root, comm, s));
        CUDA_OK(cudaStreamSynchronize(s));
        h = to_host(recv, n);
        for (size_t i = 0; i < n; i++) {
            int64_t want = 0;
            for (int r = 0; r < p; r++)
                want += pattern(r, i);
            int32_t w = rank == root ? (int32_t)(uint32_t)want : 0;   /* non-roots: untouched */
            EXPECT(h[i] == w, "reduce root %d rank %d element %zu: %d, want %d", root, rank, i, h[i], w);
        }
        free(h);
        CUDA_OK(cudaFree(send));
        CUDA_OK(cudaFree(recv));
        CUDA_OK(cudaFree(fresh));
    }
}

static void test_allgather_reducescatter(ncclComm_t comm, cudaStream_t s, int rank, int p)
{
    const size_t sizes[] = {1, 1000, 140001};
    for (size_t k = 0; k < 3; k++) {
        size_t n = sizes[k];
        int32_t *send = dev_ints(n, rank), *recv;
        CUDA_OK(cudaMalloc((void **)&recv, n * 4 * (size_t)p));
        NCCL_OK(ncclAllGather(send, recv, n, ncclInt32, comm, s));
        CUDA_OK(cudaStreamSynchronize(s));
        int32_t *h = to_host(recv, n * (size_t)p);
        for (int r = 0; r < p; r++)
            for (size_t i = 0; i < n; i++)
                EXPECT(h[(size_t)r * n + i] == pattern(r, i), "allgather n=%zu block %d element %zu", n, r, i);
        free(h);

        /* in place: the send buffer is this rank's block of the receive buffer */
        CUDA_OK(cudaMemset(recv, 0, n * 4 * (size_t)p));
        CUDA_OK(cudaMemcpy(recv + (size_t)rank * n, send, n * 4, cudaMemcpyDeviceToDevice));
        NCCL_OK(ncclAllGather(recv + (size_t)rank * n, recv, n, ncclInt32, comm, s));
        CUDA_OK(cudaStreamSynchronize(s));
        h = to_host(recv, n * (size_t)p);
        for (int r = 0; r < p; r++)
            for (size_t i = 0; i < n; i++)
                EXPECT(h[(size_t)r * n + i] == pattern(r, i), "in-place allgather n=%zu block %d element %zu", n, r, i);
        free(h);

        /* reducescatter of p blocks of n: block b of rank r holds pattern(r, b*n+i) */
        int32_t *big = dev_ints(n * (size_t)p, rank), *out;
        CUDA_OK(cudaMalloc((void **)&out, n * 4));
        NCCL_OK(ncclReduceScatter(big, out, n, ncclInt32, ncclMax, comm, s));
        NCCL_OK(ncclReduceScatter(big, big + (size_t)rank * n, n, ncclInt32, ncclSum, comm, s));   /* in place */
        CUDA_OK(cudaStreamSynchronize(s));
        h = to_host(out, n);
        int32_t *hin = to_host(big + (size_t)rank * n, n);
        for (size_t i = 0; i < n; i++) {
            size_t j = (size_t)rank * n + i;
            int32_t mx = pattern(0, j);
            uint32_t sum = 0;
            for (int r = 0; r < p; r++) {
                mx = pattern(r, j) > mx ? pattern(r, j) : mx;
                sum += (uint32_t)pattern(r, j);
            }
            EXPECT(h[i] == mx, "reducescatter max n=%zu element %zu: %d want %d", n, i, h[i], mx);
            EXPECT(hin[i] == (int32_t)sum, "in-place reducescatter sum n=%zu element %zu", n, i);
        }
        free(h);
        free(hin);
        CUDA_OK(cudaFree(send));
        CUDA_OK(cudaFree(recv));
        CUDA_OK(cudaFree(big));
        CUDA_OK(cudaFree(out));
    }
}

/* Ring exchange in one group: everyone sends to the right and receives from the left; with
 * a message larger than the emulator's 64 KiB mailbox this only completes if both directions
 * progress together. Also a send to itself. */
static void test_sendrecv(ncclComm_t comm, cudaStream_t s, int rank, int p)
{
    const size_t n = 50000;
    int right = (rank + 1) % p, left = (rank + p - 1) % p;
    int32_t *send = dev_ints(n, rank), *recv, *self;
    CUDA_OK(cudaMalloc((void **)&recv, n * 4));
    CUDA_OK(cudaMalloc((void **)&self, n * 4));
    NCCL_OK(ncclGroupStart());
    NCCL_OK(ncclSend(send, n, ncclInt32, right, comm, s));
    NCCL_OK(ncclRecv(recv, n, ncclInt32, left, comm, s));
    NCCL_OK(ncclSend(send, n, ncclInt32, rank, comm, s));
    NCCL_OK(ncclRecv(self, n, ncclInt32, rank, comm, s));
    NCCL_OK(ncclGroupEnd());
    CUDA_OK(cudaStreamSynchronize(s));
    int32_t *h = to_host(recv, n), *hs = to_host(self, n);
    for (size_t i = 0; i < n; i++) {
        EXPECT(h[i] == pattern(left, i), "ring recv from %d element %zu", left, i);
        EXPECT(hs[i] == pattern(rank, i), "self recv element %zu", i);
    }
    free(h);
    free(hs);

    /* outside a group: rank 0 sends to the last rank, which receives */
    if (p > 1 && (rank == 0 || rank == p - 1)) {
        if (rank == 0)
            NCCL_OK(ncclSend(send, 10, ncclInt32, p - 1, comm, s));
        else
            NCCL_OK(ncclRecv(recv, 10, ncclInt32, 0, comm, s));
        CUDA_OK(cudaStreamSynchronize(s));
        if (rank == p - 1) {
            h = to_host(recv, 10);
            for (size_t i = 0; i < 10; i++)
                EXPECT(h[i] == pattern(0, i), "pair recv element %zu", i);
            free(h);
        }
    }
    CUDA_OK(cudaFree(send));
    CUDA_OK(cudaFree(recv));
    CUDA_OK(cudaFree(self));
}

/* Two communicators over the same ranks, operations interleaved on two streams, plus a split
 * into even and odd ranks. */
static void test_two_comms(ncclComm_t comm, cudaStream_t s, int rank, int p)
{
    ncclUniqueId id;
    NCCL_OK(ncclGetUniqueId(&id));
    ncclComm_t second;
    NCCL_OK(ncclCommInitRank(&second, p, id, rank));
    cudaStream_t s2;
    CUDA_OK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    int32_t *a = dev_ints(100, rank), *b = dev_ints(100, rank);
    for (int k = 0; k < 5; k++) {
        NCCL_OK(ncclAllReduce(a, a, 100, ncclInt32, ncclMax, comm, s));
        NCCL_OK(ncclAllReduce(b, b, 100, ncclInt32, ncclMin, second, s2));
    }
    CUDA_OK(cudaStreamSynchronize(s));
    CUDA_OK(cudaStreamSynchronize(s2));
    int32_t *ha = to_host(a, 100), *hb = to_host(b, 100);
    for (size_t i = 0; i < 100; i++) {
        EXPECT(ha[i] == pattern(p - 1, i), "comm 1 max element %zu", i);
        EXPECT(hb[i] == pattern(0, i), "comm 2 min element %zu", i);
    }
    free(ha);
    free(hb);

    /* One group over both communicators on one stream, listed in opposite orders on even and
     * odd ranks: NCCL launches a group's communicators together, so this must not deadlock. */
    NCCL_OK(ncclGroupStart());
    for (int k = 0; k < 2; k++) {
        int first = (k + rank) % 2 == 0;
        NCCL_OK(ncclAllReduce(first ? a : b, first ? a : b, 100, ncclInt32, ncclSum, first ? comm : second, s));
    }
    NCCL_OK(ncclGroupEnd());
    CUDA_OK(cudaStreamSynchronize(s));
    ha = to_host(a, 100);
    hb = to_host(b, 100);
    for (size_t i = 0; i < 100; i++) {
        EXPECT(ha[i] == (int32_t)((uint32_t)pattern(p - 1, i) * (uint32_t)p), "comm 1 grouped sum element %zu", i);
        EXPECT(hb[i] == (int32_t)((uint32_t)pattern(0, i) * (uint32_t)p), "comm 2 grouped sum element %zu", i);
    }
    free(ha);
    free(hb);

    ncclComm_t half;
    NCCL_OK(ncclCommSplit(comm, rank % 2, rank, &half, NULL));
    int hn, hr;
    NCCL_OK(ncclCommCount(half, &hn));
    NCCL_OK(ncclCommUserRank(half, &hr));
    EXPECT(hn == (p + 1 - rank % 2) / 2 && hr == rank / 2, "split: count %d rank %d", hn, hr);
    int32_t *c = dev_ints(1, rank);
    NCCL_OK(ncclAllReduce(c, c, 1, ncclInt32, ncclSum, half, s));
    CUDA_OK(cudaStreamSynchronize(s));
    int32_t hc;
    CUDA_OK(cudaMemcpy(&hc, c, 4, cudaMemcpyDeviceToHost));
    int32_t want = 0;
    for (int r = rank % 2; r < p; r += 2)
        want += pattern(r, 0);
    EXPECT(hc == want, "split allreduce: %d want %d", hc, want);
    ncclComm_t none = (ncclComm_t)&hc;
    NCCL_OK(ncclCommSplit(comm, NCCL_SPLIT_NOCOLOR, 0, &none, NULL));
    EXPECT(none == NULL, "NOCOLOR split must give NULL");
    NCCL_OK(ncclCommDestroy(half));
    NCCL_OK(ncclCommDestroy(second));
    CUDA_OK(cudaFree(a));
    CUDA_OK(cudaFree(b));
    CUDA_OK(cudaFree(c));
    CUDA_OK(cudaStreamDestroy(s2));
}

/* Successive ncclGetUniqueId calls give distinct ids, and the same sequence on every rank
 * (checked by allgathering them). */
static void test_unique_ids(ncclComm_t comm, cudaStream_t s, int p)
{
    enum { K = 3 };
    ncclUniqueId ids[K];
    for (int k = 0; k < K; k++)
        NCCL_OK(ncclGetUniqueId(&ids[k]));
    for (int k = 1; k < K; k++)
        EXPECT(memcmp(&ids[k], &ids[k - 1], sizeof ids[k]) != 0, "id %d equals id %d", k, k - 1);
    char *dev, *all;
    CUDA_OK(cudaMalloc((void **)&dev, sizeof ids));
    CUDA_OK(cudaMalloc((void **)&all, sizeof ids * (size_t)p));
    CUDA_OK(cudaMemcpy(dev, ids, sizeof ids, cudaMemcpyHostToDevice));
    NCCL_OK(ncclAllGather(dev, all, sizeof ids, ncclUint8, comm, s));
    CUDA_OK(cudaStreamSynchronize(s));
    char *h = malloc(sizeof ids * (size_t)p);
    CUDA_OK(cudaMemcpy(h, all, sizeof ids * (size_t)p, cudaMemcpyDeviceToHost));
    for (int r = 0; r < p; r++)
        EXPECT(memcmp(h + sizeof ids * (size_t)r, ids, sizeof ids) == 0, "rank %d has another id sequence", r);
    free(h);
    CUDA_OK(cudaFree(dev));
    CUDA_OK(cudaFree(all));
}

/* ncclCommInitAll: two ranks in this process, driven from one thread through a group. */
static void test_init_all(int rank)
{
    ncclComm_t comms[2];
    int devs[2] = {0, 0};
    NCCL_OK(ncclCommInitAll(comms, 2, devs));
    cudaStream_t s[2];
    int32_t *buf[2];
    for (int i = 0; i < 2; i++) {
        CUDA_OK(cudaStreamCreate(&s[i]));
        buf[i] = dev_ints(64, rank * 2 + i);
        int r;
        NCCL_OK(ncclCommUserRank(comms[i], &r));
        EXPECT(r == i, "InitAll comm %d has rank %d", i, r);
    }
    NCCL_OK(ncclGroupStart());
    for (int i = 0; i < 2; i++)
        NCCL_OK(ncclAllReduce(buf[i], buf[i], 64, ncclInt32, ncclSum, comms[i], s[i]));
    NCCL_OK(ncclGroupEnd());
    for (int i = 0; i < 2; i++) {
        CUDA_OK(cudaStreamSynchronize(s[i]));
        int32_t *h = to_host(buf[i], 64);
        for (size_t j = 0; j < 64; j++)
            EXPECT(h[j] == pattern(rank * 2, j) + pattern(rank * 2 + 1, j), "InitAll allreduce element %zu", j);
        free(h);
        CUDA_OK(cudaFree(buf[i]));
        NCCL_OK(ncclCommDestroy(comms[i]));
        CUDA_OK(cudaStreamDestroy(s[i]));
    }
}

/* ncclCommAbort frees a stream stuck in an operation the other ranks never join. */
static void test_abort(int rank, int p)
{
    ncclUniqueId id;
    NCCL_OK(ncclGetUniqueId(&id));
    ncclComm_t c;
    NCCL_OK(ncclCommInitRank(&c, p, id, rank));
    cudaStream_t s;
    CUDA_OK(cudaStreamCreate(&s));
    int32_t *buf = dev_ints(8, rank);
    if (rank == 0 && p > 1) {
        NCCL_OK(ncclAllReduce(buf, buf, 8, ncclInt32, ncclSum, c, s));   /* nobody else joins */
        EXPECT(cudaStreamQuery(s) == cudaErrorNotReady, "a lone allreduce cannot complete");
        NCCL_OK(ncclCommAbort(c));
        CUDA_OK(cudaStreamSynchronize(s));
        int32_t *h = to_host(buf, 8);
        EXPECT(h[0] == pattern(0, 0), "an aborted allreduce left the buffer alone");
        free(h);
    } else {
        NCCL_OK(ncclCommAbort(c));
    }
    CUDA_OK(cudaFree(buf));
    CUDA_OK(cudaStreamDestroy(s));
}

static void test_aliases(void)
{
    static const char *names[] = {"GetVersion", "GetUniqueId", "CommInitRank", "CommInitRankConfig", "CommInitAll",
                                  "CommSplit", "CommDestroy", "CommFinalize", "CommAbort", "CommCount",
                                  "CommUserRank", "CommCuDevice", "CommGetAsyncError", "GetErrorString",
                                  "GetLastError", "AllReduce", "Broadcast", "Bcast", "Reduce", "AllGather",
                                  "ReduceScatter", "Send", "Recv", "GroupStart", "GroupEnd", "GroupSimulateEnd",
                                  "MemAlloc", "MemFree", "RedOpCreatePreMulSum", "RedOpDestroy"};
    void *lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD);
    EXPECT(lib != NULL, "libnccl.so.2 is loaded");
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char plain[64], prof[64];
        snprintf(plain, sizeof plain, "nccl%s", names[i]);
        snprintf(prof, sizeof prof, "pnccl%s", names[i]);
        void *a = dlsym(lib, plain), *b = dlsym(lib, prof);
        EXPECT(a != NULL && a == b, "%s (%p) and %s (%p) are one function", plain, a, prof, b);
    }
    dlclose(lib);
}

static void test_errors(ncclComm_t comm, cudaStream_t s, int rank, int p)
{
    int v = 0;
    NCCL_OK(ncclGetVersion(&v));
    EXPECT(v == NCCL_VERSION_CODE, "version %d", v);
    int n, r, dev;
    ncclResult_t async;
    NCCL_OK(ncclCommCount(comm, &n));
    NCCL_OK(ncclCommUserRank(comm, &r));
    NCCL_OK(ncclCommCuDevice(comm, &dev));
    NCCL_OK(ncclCommGetAsyncError(comm, &async));
    EXPECT(n == p && r == rank && async == ncclSuccess, "count %d rank %d async %d", n, r, async);
    int cur;
    CUDA_OK(cudaGetDevice(&cur));
    EXPECT(dev == cur && cur == env_int("LOCAL_RANK"), "ncclCommCuDevice %d, current device %d", dev, cur);

    int32_t *buf = dev_ints(16, rank), host[16];
    EXPECT(ncclAllReduce(buf, buf, 16, (ncclDataType_t)42, ncclSum, comm, s) == ncclInvalidArgument, "bad dtype");
    EXPECT(strstr(ncclGetLastError(comm), "data type") != NULL, "last error names the type: %s", ncclGetLastError(comm));
    EXPECT(ncclAllReduce(buf, buf, 16, ncclInt32, (ncclRedOp_t)17, comm, s) == ncclInvalidArgument, "bad op");
    EXPECT(ncclAllReduce(buf, buf, 18, ncclInt32, ncclSum, comm, s) == ncclInvalidArgument, "count past the buffer");
    EXPECT(ncclAllReduce(host, host, 16, ncclInt32, ncclSum, comm, s) == ncclInvalidArgument, "host pointer");
    EXPECT(strstr(ncclGetLastError(comm), "device allocation") != NULL, "%s", ncclGetLastError(comm));
    EXPECT(ncclBroadcast(buf, buf, 16, ncclInt32, p, comm, s) == ncclInvalidArgument, "root out of range");
    EXPECT(ncclSend(buf, 16, ncclInt32, -1, comm, s) == ncclInvalidArgument, "peer out of range");
    EXPECT(ncclAllReduce(buf, buf, 16, ncclInt32, ncclSum, NULL, s) == ncclInvalidArgument, "NULL comm");
    EXPECT(ncclGroupEnd() == ncclInvalidUsage, "GroupEnd without GroupStart");
    ncclSimInfo_t bad = {0};
    NCCL_OK(ncclGroupStart());
    EXPECT(ncclGroupSimulateEnd(&bad) == ncclInvalidArgument, "uninitialised simInfo");
    NCCL_OK(ncclGroupEnd());
    /* A failed operation fails its group, as NCCL's ncclGroupErrCheck: the outermost ncclGroupEnd
     * returns the error and launches nothing of the group, the valid allreduce before it included. */
    NCCL_OK(ncclGroupStart());
    NCCL_OK(ncclGroupStart());
    NCCL_OK(ncclAllReduce(buf, buf, 16, ncclInt32, ncclSum, comm, s));
    EXPECT(ncclAllReduce(buf, buf, 16, (ncclDataType_t)42, ncclSum, comm, s) == ncclInvalidArgument, "bad dtype");
    NCCL_OK(ncclGroupEnd()); /* an inner end: nothing to launch yet */
    EXPECT(ncclGroupEnd() == ncclInvalidArgument, "the group of a failed operation ended without its error");
    CUDA_OK(cudaStreamSynchronize(s));
    int32_t *kept = to_host(buf, 16);
    for (int i = 0; i < 16; i++)
        EXPECT(kept[i] == pattern(rank, (size_t)i), "element %d: %d: the failed group's allreduce ran", i, kept[i]);
    free(kept);
    /* Rejected calls issued nothing: the next collective still matches on every rank. */
    NCCL_OK(ncclAllReduce(buf, buf, 16, ncclInt32, ncclSum, comm, s));
    CUDA_OK(cudaStreamSynchronize(s));
    CUDA_OK(cudaFree(buf));
}

int main(void)
{
    int rank, p;
    ncclComm_t comm = world_comm(&rank, &p);
    cudaStream_t s;
    CUDA_OK(cudaStreamCreate(&s));
    test_aliases();
    test_init_all(rank);
    test_errors(comm, s, rank, p);
    test_unique_ids(comm, s, p);
    test_broadcast_reduce(comm, s, rank, p);
    test_allgather_reducescatter(comm, s, rank, p);
    test_sendrecv(comm, s, rank, p);
    test_two_comms(comm, s, rank, p);
    test_abort(rank, p);
    NCCL_OK(ncclCommFinalize(comm));
    NCCL_OK(ncclCommDestroy(comm));
    CUDA_OK(cudaStreamDestroy(s));
    printf("collectives: all checks passed on %d ranks\n", p);
    return 0;
}
