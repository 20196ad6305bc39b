/* A self-checking training loop for schedule mode, with the faults docs/design.md section 1 names.
 * Every iteration, every rank produces M gradients on a compute stream (small integers, so every
 * sum is exact in float32 and float16), the NCCL stream waits for each one's ready event and
 * allreduces it, and the results are consumed by one of the patterns frameworks use; at the end of
 * the iteration the host checks every result against the sum (or average) over ranks it computes
 * itself.  A wrong byte anywhere, in any block, fails the run.  Run under emu-run, with or without
 * libusbyte.so (runtime_sched.sh).
 *
 *   --iters N --calls M --elems E        M allreduces of about E elements per iteration
 *   --consumer end-event|stream-sync|per-call|query-poll|legacy
 *        end-event: one event on the NCCL stream after the last call, the compute stream waits on
 *        it and reads every buffer (stream order); stream-sync: cudaStreamSynchronize of the NCCL
 *        stream on the host, then read; per-call: an event after each call, waited on per buffer;
 *        query-poll: the issuing thread polls cudaEventQuery on the last call's event; legacy:
 *        the buffers are read by copies on the legacy default stream, which CUDA orders after
 *        every blocking stream's earlier work (with --nccl-stream blocking: no event at all),
 *        then the host synchronizes the NCCL stream and the legacy stream
 *   --nccl-stream nonblocking|blocking   how the NCCL streams are made (cudaStreamCreateWithFlags
 *                                        with cudaStreamNonBlocking, the default, or cudaStreamCreate)
 *   --mixed                              float16 and float32 calls, sum and avg, out of place
 *   --repeat-sizes                       sizes repeat every 3 calls (equal-sized layers): only the
 *                                        buffers tell the true period
 *   --size-change-at IT                  from iteration IT, call M/2 has one element more
 *   --freeze-at IT                       from iteration IT only the even calls are made (half of
 *                                        the layers frozen: a new call sequence for good)
 *   --freeze-odd                         with --freeze-at: the odd calls are kept instead (call 0,
 *                                        where the plan's iteration begins, is never made again)
 *   --barrier-at IT                      an allreduce of one int32 and a stream sync before IT
 *   --sync-at IT --sync-kind KIND --sync-after C --sync-rank R
 *                                        right after call C (default 0) of iteration IT, rank R
 *                                        (default: every rank) makes a host sync the warm-up never
 *                                        saw: device (cudaDeviceSynchronize), stream
 *                                        (cudaStreamSynchronize of the NCCL stream), event
 *                                        (cudaEventSynchronize of an event recorded after call C)
 *                                        or stream-wait (the compute stream waits on that event)
 *   --destroy-at IT / --exit-at IT       ncclCommDestroy / exit(0) after half of iteration IT
 *   --exit-barrier DIR                   with --exit-at: no rank exits before every rank got
 *                                        there (a file per rank in DIR)
 *   --capture-at IT                      call M/2 of iteration IT captured into a CUDA graph on its
 *                                        stream (calls before it deferred), a captured event joining
 *                                        the compute stream into the capture and back; the graph is
 *                                        launched at once
 *   --capture-call C                     the call captured (default M/2)
 *   --capture-on nccl|compute            the stream the capture begins on: the NCCL stream (the
 *                                        default), or the compute stream as PyTorch captures (the
 *                                        NCCL stream joins through an event recorded in the capture)
 *   --capture-via ROUTE                  how the capture begins and ends: runtime
 *                                        (cudaStreamBeginCapture, the default), runtime-to-graph
 *                                        (cudaStreamBeginCaptureToGraph into a graph of its own),
 *                                        driver (cuStreamBeginCapture, linked), driver-lookup
 *                                        (through cuGetProcAddress), runtime-lookup (through
 *                                        cudaGetDriverEntryPointByVersion), hidden (dlsym on
 *                                        libcuda's own handle, which no interposer sees)
 *   --p2p-at IT                          a group of ncclSend/ncclRecv around the ring before IT
 *   --two-comms                          a second communicator, its calls interleaved
 *   --second-thread                      odd iterations are issued by another thread
 *   --fork-at IT                         fork a child (which exits at once) in iteration IT
 *   --fill-at IT --fill-rank R --fill-free-kb K
 *                                        at the start of iteration IT, rank R allocates device
 *                                        memory until K KiB are left (cudaMemGetInfo) */
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda.h>

#include "emu_common.h"

typedef struct opts {
    int iters, calls, elems;
    const char *consumer, *capture_via, *capture_on, *nccl_stream, *sync_kind, *exit_barrier;
    bool mixed, two_comms, second_thread, repeat_sizes, freeze_odd;
    int size_change_at, barrier_at, destroy_at, exit_at, capture_at, capture_call, p2p_at, fork_at, freeze_at;
    int sync_at, sync_after, sync_rank;
    int fill_at, fill_rank, fill_free_kb;
} opts;

typedef struct call {
    ncclDataType_t dtype;
    ncclRedOp_t op;
    bool out_of_place;
    size_t count, cap;    /* elements now, allocated */
    size_t esize;
    void *h_in, *h_out;   /* pinned */
    void *d_send, *d_recv;
    cudaEvent_t ready, end;
} call;

typedef struct job {
    opts o;
    int rank, world;
    ncclComm_t comm[2];
    cudaStream_t nccl[2], compute;
    int n_comms;
    call *calls;          /* n_comms * calls */
    cudaEvent_t last_end[2];
    int iter;
} job;

static uint16_t half_of_int(int v)
{
    /* Exact for 0 < v < 2048: 1.m x 2^e with 10 mantissa bits. */
    int e = 0;
    while ((v >> (e + 1)) != 0)
        e++;
    return (uint16_t)(((e + 15) << 10) | ((v << (10 - e)) & 0x3ff));
}

static int int_of_half(uint16_t h)
{
    int e = ((h >> 10) & 0x1f) - 15, m = (h & 0x3ff) | 0x400;
    return e >= 10 ? m << (e - 10) : m >> (10 - e);
}

/* What rank r contributes at element i of call c in iteration it: small, so sums are exact; a
 * multiple of the world size for avg, so the mean is exact too. */
static int value(const job *j, int r, int it, int c, size_t i)
{
    int v = ((r + 1) * 3 + it * 7 + c * 5 + (int)(i % 13)) % 61 + 1;
    return j->calls[c].op == ncclAvg ? v * j->world : v;
}

static int expected(const job *j, int it, int c, size_t i)
{
    int sum = 0;
    for (int r = 0; r < j->world; r++)
        sum += value(j, r, it, c, i);
    return j->calls[c].op == ncclAvg ? sum / j->world : sum;
}

static void set_elem(call *k, void *buf, size_t i, int v)
{
    if (k->dtype == ncclFloat16)
        ((uint16_t *)buf)[i] = half_of_int(v);
    else
        ((float *)buf)[i] = (float)v;
}

static int get_elem(const call *k, const void *buf, size_t i)
{
    return k->dtype == ncclFloat16 ? int_of_half(((const uint16_t *)buf)[i]) : (int)((const float *)buf)[i];
}

static size_t count_of(const job *j, int c)
{
    return j->o.repeat_sizes ? (size_t)j->o.elems * (size_t)(1 + c % 3) : (size_t)j->o.elems * (size_t)(1 + c % 5) + (size_t)c;
}

static void setup(job *j)
{
    int nc = j->o.calls;
    j->calls = calloc((size_t)(j->n_comms * nc), sizeof *j->calls);
    EXPECT(j->calls, "out of memory");
    for (int x = 0; x < j->n_comms * nc; x++) {
        call *k = &j->calls[x];
        int c = x % nc;
        k->dtype = j->o.mixed && c % 3 == 1 ? ncclFloat16 : ncclFloat32;
        k->op = j->o.mixed && c % 4 == 2 ? ncclAvg : ncclSum;
        k->out_of_place = j->o.mixed && c % 2 == 1;
        k->esize = k->dtype == ncclFloat16 ? 2 : 4;
        k->count = count_of(j, c);
        k->cap = k->count + 1;
        CUDA_OK(cudaMallocHost(&k->h_in, k->cap * k->esize));
        CUDA_OK(cudaMallocHost(&k->h_out, k->cap * k->esize));
        CUDA_OK(cudaMalloc(&k->d_recv, k->cap * k->esize));
        if (k->out_of_place)
            CUDA_OK(cudaMalloc(&k->d_send, k->cap * k->esize));
        else
            k->d_send = k->d_recv;
        CUDA_OK(cudaEventCreateWithFlags(&k->ready, cudaEventDisableTiming));
        CUDA_OK(cudaEventCreateWithFlags(&k->end, cudaEventDisableTiming));
    }
    for (int m = 0; m < j->n_comms; m++)
        CUDA_OK(cudaEventCreateWithFlags(&j->last_end[m], cudaEventDisableTiming));
}

typedef CUresult (*cu_begin_fn)(CUstream, CUstreamCaptureMode);
typedef CUresult (*cu_end_fn)(CUstream, CUgraph *);

/* The driver's capture functions as the route finds them (NULL for the runtime routes). */
static void driver_capture_functions(const char *via, cu_begin_fn *begin, cu_end_fn *end)
{
    *begin = NULL;
    *end = NULL;
    if (!strcmp(via, "driver")) {
        *begin = cuStreamBeginCapture;
        *end = cuStreamEndCapture;
    } else if (!strcmp(via, "driver-lookup")) {
        CUdriverProcAddressQueryResult st;
        EXPECT(cuGetProcAddress("cuStreamBeginCapture", (void **)begin, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &st) ==
                   CUDA_SUCCESS, "cuGetProcAddress(cuStreamBeginCapture) failed");
        EXPECT(cuGetProcAddress("cuStreamEndCapture", (void **)end, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &st) ==
                   CUDA_SUCCESS, "cuGetProcAddress(cuStreamEndCapture) failed");
    } else if (!strcmp(via, "runtime-lookup")) {
        enum cudaDriverEntryPointQueryResult st;
        CUDA_OK(cudaGetDriverEntryPointByVersion("cuStreamBeginCapture", (void **)begin, 12000, cudaEnableDefault, &st));
        CUDA_OK(cudaGetDriverEntryPointByVersion("cuStreamEndCapture", (void **)end, 12000, cudaEnableDefault, &st));
    } else if (!strcmp(via, "hidden")) {
        void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
        EXPECT(lib, "libcuda.so.1 is not loaded: %s", dlerror());
        *begin = (cu_begin_fn)dlsym(lib, "cuStreamBeginCapture_v2");
        *end = (cu_end_fn)dlsym(lib, "cuStreamEndCapture");
    }
    EXPECT(*begin || !*end, "no cuStreamBeginCapture through %s", via);
}

/* The allreduce captured into a graph, as PyTorch captures a collective: global mode, the
 * collective's end event recorded in the capture and waited on by another stream (which joins
 * the capture) that is joined back; then the graph runs once.  Any call on a capturing stream
 * that capture forbids, or an event of the capture recorded elsewhere, fails a CUDA call here.
 * The capture begins and ends through the route --capture-via names. */
static void captured_allreduce(job *j, int m, call *k)
{
    cudaEvent_t in_capture, joined;
    CUDA_OK(cudaEventCreateWithFlags(&in_capture, cudaEventDisableTiming));
    CUDA_OK(cudaEventCreateWithFlags(&joined, cudaEventDisableTiming));
    cu_begin_fn cu_begin;
    cu_end_fn cu_end;
    driver_capture_functions(j->o.capture_via, &cu_begin, &cu_end);
    /* PyTorch begins on the current (compute) stream and joins the NCCL stream through an event
     * (ProcessGroupNCCL's syncStream): the NCCL stream's deferred calls meet the capture there. */
    bool on_compute = !strcmp(j->o.capture_on, "compute");
    cudaStream_t origin = on_compute ? j->compute : j->nccl[m];
    cudaGraph_t graph = NULL;
    if (cu_begin) {
        EXPECT(cu_begin((CUstream)origin, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS,
               "cuStreamBeginCapture through %s failed", j->o.capture_via);
    } else if (!strcmp(j->o.capture_via, "runtime-to-graph")) {
        CUDA_OK(cudaGraphCreate(&graph, 0));
        CUDA_OK(cudaStreamBeginCaptureToGraph(origin, graph, NULL, NULL, 0, cudaStreamCaptureModeGlobal));
    } else {
        CUDA_OK(cudaStreamBeginCapture(origin, cudaStreamCaptureModeGlobal));
    }
    if (on_compute) {
        CUDA_OK(cudaEventRecord(joined, j->compute));
        CUDA_OK(cudaStreamWaitEvent(j->nccl[m], joined, 0));
    }
    NCCL_OK(ncclAllReduce(k->d_send, k->d_recv, k->count, k->dtype, k->op, j->comm[m], j->nccl[m]));
    CUDA_OK(cudaEventRecord(in_capture, j->nccl[m]));
    CUDA_OK(cudaStreamWaitEvent(j->compute, in_capture, 0));
    if (!on_compute) {
        CUDA_OK(cudaEventRecord(joined, j->compute));
        CUDA_OK(cudaStreamWaitEvent(j->nccl[m], joined, 0));
    }
    cudaGraph_t ended = NULL;
    if (cu_end) {
        CUresult ended_with = cu_end((CUstream)origin, (CUgraph *)&ended);
        const char *text = NULL;
        cuGetErrorString(ended_with, &text);
        EXPECT(ended_with == CUDA_SUCCESS, "cuStreamEndCapture through %s failed: %s", j->o.capture_via,
               text ? text : "unknown error");
    } else
        CUDA_OK(cudaStreamEndCapture(origin, &ended));
    EXPECT(!graph || ended == graph, "the capture into a graph of its own ended with another graph");
    graph = ended;
    cudaGraphExec_t exec;
    CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
    CUDA_OK(cudaGraphLaunch(exec, origin));
    CUDA_OK(cudaGraphExecDestroy(exec));
    CUDA_OK(cudaGraphDestroy(graph));
    CUDA_OK(cudaEventDestroy(in_capture));
    CUDA_OK(cudaEventDestroy(joined));
}

/* The issue of call c of communicator m in iteration it. */
static void issue(job *j, int m, int c, int it)
{
    call *k = &j->calls[m * j->o.calls + c];
    k->count = count_of(j, c);
    if (j->o.size_change_at >= 0 && it >= j->o.size_change_at && c == j->o.calls / 2)
        k->count++;
    for (size_t i = 0; i < k->count; i++)
        set_elem(k, k->h_in, i, value(j, j->rank, it, c, i));
    CUDA_OK(cudaMemcpyAsync(k->d_send, k->h_in, k->count * k->esize, cudaMemcpyHostToDevice, j->compute));
    CUDA_OK(cudaEventRecord(k->ready, j->compute));
    CUDA_OK(cudaStreamWaitEvent(j->nccl[m], k->ready, 0));
    if (it == j->o.capture_at && c == j->o.capture_call)
        captured_allreduce(j, m, k);
    else
        NCCL_OK(ncclAllReduce(k->d_send, k->d_recv, k->count, k->dtype, k->op, j->comm[m], j->nccl[m]));
    bool sync = it == j->o.sync_at && c == j->o.sync_after && (j->o.sync_rank < 0 || j->o.sync_rank == j->rank);
    bool on_event = sync && (!strcmp(j->o.sync_kind, "event") || !strcmp(j->o.sync_kind, "stream-wait"));
    if (!strcmp(j->o.consumer, "per-call") || on_event)
        CUDA_OK(cudaEventRecord(k->end, j->nccl[m]));
    if (sync) {
        fprintf(stderr, "rank %d: %s sync after call %d of iteration %d\n", j->rank, j->o.sync_kind, c, it);
        if (!strcmp(j->o.sync_kind, "device"))
            CUDA_OK(cudaDeviceSynchronize());
        else if (!strcmp(j->o.sync_kind, "stream"))
            CUDA_OK(cudaStreamSynchronize(j->nccl[m]));
        else if (!strcmp(j->o.sync_kind, "event"))
            CUDA_OK(cudaEventSynchronize(k->end));
        else
            CUDA_OK(cudaStreamWaitEvent(j->compute, k->end, 0));
    }
}

/* Whether call c is made in iteration it. */
static bool made(const job *j, int c, int it)
{
    return j->o.freeze_at < 0 || it < j->o.freeze_at || c % 2 == (j->o.freeze_odd ? 1 : 0);
}

static void consume_and_check(job *j, int it, int n_issued)
{
    for (int m = 0; m < j->n_comms; m++) {
        if (!strcmp(j->o.consumer, "end-event") || !strcmp(j->o.consumer, "query-poll")) {
            CUDA_OK(cudaEventRecord(j->last_end[m], j->nccl[m]));
            if (!strcmp(j->o.consumer, "query-poll")) {
                cudaError_t e;
                while ((e = cudaEventQuery(j->last_end[m])) == cudaErrorNotReady)
                    usleep(100);
                CUDA_OK(e);
            }
            CUDA_OK(cudaStreamWaitEvent(j->compute, j->last_end[m], 0));
        } else if (!strcmp(j->o.consumer, "stream-sync")) {
            CUDA_OK(cudaStreamSynchronize(j->nccl[m]));
        }
        bool legacy = !strcmp(j->o.consumer, "legacy");
        for (int c = 0; c < n_issued; c++) {
            call *k = &j->calls[m * j->o.calls + c];
            if (!made(j, c, it))
                continue;
            if (!strcmp(j->o.consumer, "per-call"))
                CUDA_OK(cudaStreamWaitEvent(j->compute, k->end, 0));
            CUDA_OK(cudaMemcpyAsync(k->h_out, k->d_recv, k->count * k->esize, cudaMemcpyDeviceToHost,
                                    legacy ? cudaStreamLegacy : j->compute));
        }
    }
    CUDA_OK(cudaStreamSynchronize(j->compute));
    /* The end of an iteration as NCCL's examples write it, after the copies were enqueued. */
    if (!strcmp(j->o.consumer, "legacy")) {
        for (int m = 0; m < j->n_comms; m++)
            CUDA_OK(cudaStreamSynchronize(j->nccl[m]));
        CUDA_OK(cudaStreamSynchronize(cudaStreamLegacy));
    }
    for (int m = 0; m < j->n_comms; m++)
        for (int c = 0; c < n_issued; c++) {
            call *k = &j->calls[m * j->o.calls + c];
            if (!made(j, c, it))
                continue;
            for (size_t i = 0; i < k->count; i++) {
                int got = get_elem(k, k->h_out, i), want = expected(j, it, c, i);
                if (got != want) {
                    fprintf(stderr, "rank %d: WRONG RESULT: iteration %d comm %d call %d (%s %s%s, %zu elements) "
                                    "element %zu: %d, expected %d\n",
                            j->rank, it, m, c, k->dtype == ncclFloat16 ? "float16" : "float32",
                            k->op == ncclAvg ? "avg" : "sum", k->out_of_place ? " out of place" : "", k->count, i, got,
                            want);
                    exit(1);
                }
            }
        }
}

static void p2p_ring(job *j)
{
    int next = (j->rank + 1) % j->world, prev = (j->rank + j->world - 1) % j->world;
    float *d_out, *d_in, h[16];
    CUDA_OK(cudaMalloc((void **)&d_out, sizeof h));
    CUDA_OK(cudaMalloc((void **)&d_in, sizeof h));
    for (int i = 0; i < 16; i++)
        h[i] = (float)(j->rank * 100 + i);
    CUDA_OK(cudaMemcpy(d_out, h, sizeof h, cudaMemcpyHostToDevice));
    NCCL_OK(ncclGroupStart());
    NCCL_OK(ncclSend(d_out, 16, ncclFloat32, next, j->comm[0], j->nccl[0]));
    NCCL_OK(ncclRecv(d_in, 16, ncclFloat32, prev, j->comm[0], j->nccl[0]));
    NCCL_OK(ncclGroupEnd());
    CUDA_OK(cudaStreamSynchronize(j->nccl[0]));
    CUDA_OK(cudaMemcpy(h, d_in, sizeof h, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 16; i++)
        EXPECT(h[i] == (float)(prev * 100 + i), "p2p element %d: %g", i, (double)h[i]);
    CUDA_OK(cudaFree(d_out));
    CUDA_OK(cudaFree(d_in));
}

static void barrier(job *j)
{
    int *d;
    CUDA_OK(cudaMalloc((void **)&d, sizeof *d));
    CUDA_OK(cudaMemsetAsync(d, 0, sizeof *d, j->nccl[0]));
    NCCL_OK(ncclAllReduce(d, d, 1, ncclInt32, ncclSum, j->comm[0], j->nccl[0]));
    CUDA_OK(cudaStreamSynchronize(j->nccl[0]));
    CUDA_OK(cudaFree(d));
}

/* Takes the device's memory but fill_free_kb KiB (kept until the end). */
static void fill_device(job *j)
{
    size_t free_bytes, total;
    CUDA_OK(cudaMemGetInfo(&free_bytes, &total));
    size_t keep = (size_t)j->o.fill_free_kb << 10;
    void *p;
    if (free_bytes > keep)
        CUDA_OK(cudaMalloc(&p, free_bytes - keep));
    CUDA_OK(cudaMemGetInfo(&free_bytes, &total));
    fprintf(stderr, "rank %d: the device has %zu bytes left\n", j->rank, free_bytes);
}

/* Every rank of the launch reaches this point before any goes on: a file per rank in dir. */
static void host_barrier(const char *dir, int rank, int world)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/rank-%d", dir, rank);
    FILE *f = fopen(path, "w");
    EXPECT(f && fclose(f) == 0, "%s: cannot create it", path);
    for (int tries = 0;; tries++) {
        int there = 0;
        for (int r = 0; r < world; r++) {
            snprintf(path, sizeof path, "%s/rank-%d", dir, r);
            there += access(path, F_OK) == 0;
        }
        if (there == world)
            return;
        EXPECT(tries < 60000, "%s: %d of %d ranks arrived within 60 s", dir, there, world);
        usleep(1000);
    }
}

static void iteration(job *j, int it)
{
    if (it == j->o.fill_at && j->rank == j->o.fill_rank)
        fill_device(j);
    if (it == j->o.barrier_at)
        barrier(j);
    if (it == j->o.p2p_at)
        p2p_ring(j);
    int half = j->o.calls / 2;
    for (int c = 0; c < j->o.calls; c++) {
        if ((it == j->o.destroy_at || it == j->o.exit_at) && c == half)
            break;
        if (it == j->o.fork_at && c == half) {
            pid_t child = fork();
            if (child == 0) {
                /* Through the wrappers, touching none of usbyte's state; _exit: the inherited copies of
                 * the parent's queued stream work are unreachable here (runtime_fork.c covers the exit
                 * handlers of a child). */
                cudaError_t q = cudaStreamQuery(j->nccl[0]);
                _exit(q == cudaSuccess || q == cudaErrorNotReady ? 0 : 3);
            }
            int status;
            EXPECT(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0,
                   "the forked child failed");
        }
        for (int m = 0; m < j->n_comms; m++)
            if (made(j, c, it))
                issue(j, m, c, it);
    }
    if (it == j->o.exit_at) {
        /* A rank still issuing this iteration when a peer is gone sees NCCL's asynchronous error
         * from its next call instead (as it should), so the others wait for it first. */
        if (j->o.exit_barrier)
            host_barrier(j->o.exit_barrier, j->rank, j->world);
        printf("rank %d: exiting with calls pending in iteration %d\n", j->rank, it);
        fflush(stdout);
        exit(0);
    }
    if (it == j->o.destroy_at) {
        for (int m = 0; m < j->n_comms; m++)
            NCCL_OK(ncclCommDestroy(j->comm[m]));
        /* Destroy completed what was deferred: the calls issued so far hold their sums. */
        consume_and_check(j, it, half);
        printf("runtime_sched ok: rank %d destroyed its communicators in iteration %d\n", j->rank, it);
        exit(0);
    }
    consume_and_check(j, it, j->o.calls);
}

static void *thread_main(void *arg)
{
    job *j = arg;
    CUDA_OK(cudaSetDevice(env_int("LOCAL_RANK")));
    iteration(j, j->iter);
    return NULL;
}

static int opt_int(int argc, char **argv, int *i)
{
    if (*i + 1 >= argc) {
        fprintf(stderr, "runtime_sched: %s needs a value\n", argv[*i]);
        exit(2);
    }
    return atoi(argv[++*i]);
}

/* Static: whatever exit path a scenario takes, its buffers stay reachable (no leak report). */
static job j;

int main(int argc, char **argv)
{
    opts *o = &j.o;
    *o = (opts){.iters = 16, .calls = 24, .elems = 256, .consumer = "end-event", .capture_via = "runtime",
                .capture_on = "nccl", .nccl_stream = "nonblocking", .sync_kind = "event", .capture_call = -1,
                .size_change_at = -1, .sync_at = -1, .sync_rank = -1,
                .barrier_at = -1, .destroy_at = -1, .exit_at = -1, .capture_at = -1,
                .p2p_at = -1, .fork_at = -1, .freeze_at = -1, .fill_at = -1, .fill_rank = -1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--iters")) o->iters = opt_int(argc, argv, &i);
        else if (!strcmp(a, "--calls")) o->calls = opt_int(argc, argv, &i);
        else if (!strcmp(a, "--elems")) o->elems = opt_int(argc, argv, &i);
        else if (!strcmp(a, "--consumer") && i + 1 < argc) o->consumer = argv[++i];
        else if (!strcmp(a, "--mixed")) o->mixed = true;
        else if (!strcmp(a, "--repeat-sizes")) o->repeat_sizes = true;
        else if (!strcmp(a, "--two-comms")) o->two_comms = true;
        else if (!strcmp(a, "--second-thread")) o->second_thread = true;
        else if (!strcmp(a, "--size-change-at")) o->size_change_at = opt_int(argc, argv, &i);
        else if (!strcmp(a, "--barrier-at")) o->barrier_at = opt_int(argc, argv, &i);
        else if (!strcmp(a, "--sync-at")) o->sync_at = opt_int(argc, argv, &i);
        else if (!strcmp(a, "--sync-after")) o->sync_after = opt_int(argc, argv, &i);
        else if (!strcmp(a, "--sync-rank")) o->sync_rank = opt_int(argc, argv, &i);
        else if (!strcmp(a, "--sync-kind") && i + 1 < argc) o->sync_kind = argv[++i];
        else if (!strcmp(a, "--capture-on") && i + 1 < argc) o->capture_on = argv[++i];
        else if (!strcmp(a, "--nccl-stream") && i + 1 < argc) o->nccl_stream = argv[++i];
        else if (!strcmp(a, "--destroy-at")) o->destroy_at = opt_int(argc, argv, &i);
        else if (!strcmp(a, "--exit-at")) o->exit_at = opt_int(argc, argv, &i);
        else if (!strcmp(a, "--exit-barrier") && i + 1 < argc) o->exit_barrier = argv[++i];
        else if (!strcmp(a, "--capture-at")) o->capture_at = opt_int(argc, argv, &i);
        else if (!strcmp(a, "--capture-call")) o->capture_call = opt_int(argc, argv, &i);
        else if (!strcmp(a, "--capture-via") && i + 1 < argc) o->capture_via = argv[++i];
        else if (!strcmp(a, "--p2p-at")) o->p2p_at = opt_int(argc, argv, &i);
        else if (!strcmp(a, "--fork-at")) o->fork_at = opt_int(argc, argv, &i);
        else if (!strcmp(a, "--freeze-at")) o->freeze_at = opt_int(argc, argv, &i);
        else if (!strcmp(a, "--freeze-odd")) o->freeze_odd = true;
        else if (!strcmp(a, "--fill-at")) o->fill_at = opt_int(argc, argv, &i);
        else if (!strcmp(a, "--fill-rank")) o->fill_rank = opt_int(argc, argv, &i);
        else if (!strcmp(a, "--fill-free-kb")) o->fill_free_kb = opt_int(argc, argv, &i);
        else {
            fprintf(stderr, "runtime_sched: unknown option %s\n", a);
            return 2;
        }
    }
    if (o->capture_call < 0)
        o->capture_call = o->calls / 2;
    static const char *const routes[] = {"runtime", "runtime-to-graph", "driver", "driver-lookup", "runtime-lookup",
                                         "hidden"};
    bool known = false;
    for (size_t r = 0; r < sizeof routes / sizeof *routes; r++)
        known = known || !strcmp(o->capture_via, routes[r]);
    if (!known || o->capture_call >= o->calls) {
        fprintf(stderr, "runtime_sched: unknown --capture-via %s, or --capture-call %d not below --calls %d\n",
                o->capture_via, o->capture_call, o->calls);
        return 2;
    }
    if (strcmp(o->consumer, "end-event") && strcmp(o->consumer, "stream-sync") && strcmp(o->consumer, "per-call") &&
        strcmp(o->consumer, "query-poll") && strcmp(o->consumer, "legacy")) {
        fprintf(stderr, "runtime_sched: unknown consumer %s\n", o->consumer);
        return 2;
    }
    if ((strcmp(o->sync_kind, "device") && strcmp(o->sync_kind, "stream") && strcmp(o->sync_kind, "event") &&
         strcmp(o->sync_kind, "stream-wait")) ||
        o->sync_after < 0 || o->sync_after >= o->calls || (strcmp(o->capture_on, "nccl") && strcmp(o->capture_on, "compute")) ||
        (strcmp(o->nccl_stream, "nonblocking") && strcmp(o->nccl_stream, "blocking"))) {
        fprintf(stderr, "runtime_sched: unknown --sync-kind %s, --capture-on %s or --nccl-stream %s, or --sync-after %d "
                        "not below --calls %d\n", o->sync_kind, o->capture_on, o->nccl_stream, o->sync_after, o->calls);
        return 2;
    }
    j.n_comms = o->two_comms ? 2 : 1;
    j.comm[0] = world_comm(&j.rank, &j.world);
    if (o->two_comms) {
        ncclUniqueId id;
        NCCL_OK(ncclGetUniqueId(&id));
        NCCL_OK(ncclCommInitRank(&j.comm[1], j.world, id, j.rank));
    }
    for (int m = 0; m < j.n_comms; m++)
        if (!strcmp(o->nccl_stream, "blocking"))
            CUDA_OK(cudaStreamCreate(&j.nccl[m]));
        else
            CUDA_OK(cudaStreamCreateWithFlags(&j.nccl[m], cudaStreamNonBlocking));
    CUDA_OK(cudaStreamCreateWithFlags(&j.compute, cudaStreamNonBlocking));
    setup(&j);
    for (int it = 0; it < o->iters; it++) {
        if (o->second_thread && it % 2 == 1) {
            pthread_t t;
            j.iter = it;
            EXPECT(pthread_create(&t, NULL, thread_main, &j) == 0, "pthread_create");
            pthread_join(t, NULL);
        } else {
            iteration(&j, it);
        }
    }
    for (int m = 0; m < j.n_comms; m++) {
        CUDA_OK(cudaStreamSynchronize(j.nccl[m]));
        NCCL_OK(ncclCommDestroy(j.comm[m]));
    }
    printf("runtime_sched ok: rank %d, %d iterations of %d calls checked\n", j.rank, o->iters, o->calls);
    return 0;
}
