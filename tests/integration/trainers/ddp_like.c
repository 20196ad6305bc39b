/* A trainer shaped like PyTorch DistributedDataParallel (NCCL backend), on the CUDA runtime and NCCL.
 *
 * What it reproduces of DDP, step by step, per iteration:
 *  - forward: broadcast of the module's buffers from rank 0 (broadcast_buffers=True) on the NCCL
 *    stream after waiting for the compute stream, the compute stream waiting for its end event;
 *    then the forward compute (one host function sleeping the profile's forward time);
 *  - backward: each layer's gradients are produced on the compute stream; the autograd hook copies
 *    each gradient into its bucket slot (a device-to-device copy on the compute stream); when a
 *    bucket's last gradient is in, an event is recorded on the compute stream, the NCCL stream
 *    waits for it (cudaStreamWaitEvent), the bucket is allreduced in place there, and the work's
 *    end event is recorded on the NCCL stream right after;
 *  - finalize: the compute stream waits for every bucket's end event, copies each bucket back to
 *    the gradients, and the optimizer (SGD, a host function) steps before the next forward.
 * Buckets: reverse parameter order = arrival order, closed when they reach the cap (25 MB, DDP's
 * bucket_cap_mb, times --bytes-scale).  Iteration 0 uses its own assignment (one cap, counted from
 * the input side); from iteration 1 the buckets are "rebuilt" in arrival order with DDP's small
 * first bucket (1 MB), exactly as DDP rebuilds them after the first iteration, so the call sequence
 * changes after iteration 0.
 *
 * --mismatch-rank R makes rank R allreduce its first bucket as int32 instead of float32 in every
 * iteration: the same count and bytes, another dtype.  That breaks NCCL's rules (real NCCL does not
 * notice: it adds rank R's float bits as integers there, and the float ranks' sums stay right),
 * so it runs only under USBYTE_EMU_CHECK=bytes; the default strict check stops it at once.  Rank
 * R's results are then garbage, deterministically: every rank's checksum is reproducible, but
 * rank R's differs from the others'.
 *
 * --bcast-rank R makes rank R issue the buffer broadcast with the legacy in-place ncclBcast
 * instead of ncclBroadcast(buf, buf, ...): the same operation to NCCL (a correct job, unchanged
 * results), another entry point, which a preloaded library must see as the same call.
 *
 * Like ProcessGroupNCCL, a watchdog thread polls every work's end event with cudaEventQuery
 * (--watchdog-ms, 100 ms as PyTorch's kWatchdogThreadSleepMillis; 0 turns it off): a host poll
 * from another thread that is not the training loop needing a result.
 *
 * --group-rank R makes rank R wrap each of its NCCL calls in ncclGroupStart/ncclGroupEnd (a group
 * of one collective: the same operation, launched at ncclGroupEnd), which the other ranks do not:
 * a rank-local difference of structure that must not change what a preloaded library issues.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "trainer_common.h"

typedef struct bucket {
    int first, n;            /* tensors, arrival order */
    size_t offset, count;    /* elements (buckets mirror the flat gradient layout) */
    double ready;            /* profile time its last gradient is produced */
    cudaEvent_t ready_ev;    /* compute stream: last gradient copied in */
    cudaEvent_t end_ev;      /* NCCL stream: allreduce done (PyTorch's work end event) */
} bucket;

typedef struct bucket_set {
    int n;
    bucket *b;
    float *d_mem;            /* bucket storage, same layout as the gradients */
} bucket_set;

typedef struct ddp {
    trainer tr;
    bucket_set first, rebuilt;
    cudaStream_t nccl_stream;
    size_t buf_count;        /* broadcast buffer (BN running stats), elements */
    float *h_buf_in, *h_buf_out, *d_buf;
    cudaEvent_t fwd_ev, bcast_end_ev;
    tr_range all;
    bool mismatch;           /* this rank allreduces its first bucket as int32 (--mismatch-rank) */
    bool legacy_bcast;       /* this rank broadcasts with ncclBcast (--bcast-rank) */
    pthread_t watchdog;
    atomic_bool stop;
} ddp;

/* DDP's _compute_bucket_assignment_by_size: add a tensor, close the bucket once it reaches its
 * limit.  from_input_side walks the tensors from the input side (iteration 0's assignment);
 * the result is always stored in arrival order. */
static void assign_buckets(ddp *d, bucket_set *set, size_t first_cap, size_t cap, bool from_input_side)
{
    trainer *tr = &d->tr;
    int n = tr->n_tensors;
    int *cut = calloc((size_t)n + 1, sizeof(int));  /* cut[k]: a bucket starts at tensor k */
    if (!cut)
        tr_die("out of memory");
    size_t size = 0, limit = first_cap;
    for (int i = 0; i < n; i++) {
        int k = from_input_side ? n - 1 - i : i;
        size += tr->tensors[k].count * sizeof(float);
        if (size >= limit && i < n - 1) {
            cut[from_input_side ? k : k + 1] = 1;
            size = 0;
            limit = cap;
        }
    }
    cut[0] = 1;
    set->n = 0;
    for (int k = 0; k < n; k++)
        set->n += cut[k];
    set->b = calloc((size_t)set->n, sizeof(bucket));
    if (!set->b)
        tr_die("out of memory");
    int b = -1;
    for (int k = 0; k < n; k++) {
        if (cut[k]) {
            b++;
            set->b[b].first = k;
            set->b[b].offset = tr->tensors[k].offset;
        }
        bucket *bk = &set->b[b];
        bk->n++;
        bk->count += tr->tensors[k].count;
        bk->ready = tr->tensors[k].ready;
    }
    free(cut);
    for (int i = 0; i < set->n; i++) {
        CUDA_CHECK(cudaEventCreateWithFlags(&set->b[i].ready_ev, cudaEventDisableTiming));
        CUDA_CHECK(cudaEventCreateWithFlags(&set->b[i].end_ev, cudaEventDisableTiming));
    }
    CUDA_CHECK(cudaMalloc((void **)&set->d_mem, tr->total * sizeof(float)));
}

static void free_buckets(bucket_set *set)
{
    for (int i = 0; i < set->n; i++) {
        CUDA_CHECK(cudaEventDestroy(set->b[i].ready_ev));
        CUDA_CHECK(cudaEventDestroy(set->b[i].end_ev));
    }
    CUDA_CHECK(cudaFree(set->d_mem));
    free(set->b);
}

static void CUDART_CB fill_buffer_fn(void *arg)
{
    ddp *d = arg;
    /* Rank-dependent running statistics: after the broadcast every rank must hold rank 0's. */
    for (size_t i = 0; i < d->buf_count; i++)
        d->h_buf_in[i] = (float)(d->tr.rank * 1000 + d->tr.iter) + (float)i * 0.5f;
}

static void forward(ddp *d)
{
    trainer *tr = &d->tr;
    tr_enqueue_forward_start(tr);
    CUDA_CHECK(cudaLaunchHostFunc(tr->compute, fill_buffer_fn, d));
    CUDA_CHECK(cudaMemcpyAsync(d->d_buf, d->h_buf_in, d->buf_count * sizeof(float), cudaMemcpyHostToDevice,
                               tr->compute));
    CUDA_CHECK(cudaEventRecord(d->fwd_ev, tr->compute));
    CUDA_CHECK(cudaStreamWaitEvent(d->nccl_stream, d->fwd_ev, 0));
    bool grouped = tr->rank == tr->opt.group_rank;
    if (grouped)
        NCCL_CHECK(ncclGroupStart());
    if (d->legacy_bcast)
        NCCL_CHECK(ncclBcast(d->d_buf, d->buf_count, ncclFloat32, 0, tr->comm, d->nccl_stream));
    else
        NCCL_CHECK(ncclBroadcast(d->d_buf, d->d_buf, d->buf_count, ncclFloat32, 0, tr->comm, d->nccl_stream));
    if (grouped)
        NCCL_CHECK(ncclGroupEnd());
    CUDA_CHECK(cudaEventRecord(d->bcast_end_ev, d->nccl_stream));
    CUDA_CHECK(cudaStreamWaitEvent(tr->compute, d->bcast_end_ev, 0));
    CUDA_CHECK(cudaMemcpyAsync(d->h_buf_out, d->d_buf, d->buf_count * sizeof(float), cudaMemcpyDeviceToHost,
                               tr->compute));
    tr_enqueue_forward_barrier(tr);
}

static void launch_bucket(ddp *d, bucket_set *set, int i)
{
    trainer *tr = &d->tr;
    bucket *b = &set->b[i];
    float *mem = set->d_mem + b->offset;
    /* Noting when it really was ready (iteration 0's buckets are other calls, not in the truth). */
    if (set == &d->rebuilt)
        tr_record_ready(tr, i, b->ready_ev);
    else
        CUDA_CHECK(cudaEventRecord(b->ready_ev, tr->compute));
    CUDA_CHECK(cudaStreamWaitEvent(d->nccl_stream, b->ready_ev, 0));
    bool grouped = tr->rank == tr->opt.group_rank;
    if (grouped)
        NCCL_CHECK(ncclGroupStart());
    ncclDataType_t dtype = d->mismatch && i == 0 ? ncclInt32 : ncclFloat32;
    NCCL_CHECK(ncclAllReduce(mem, mem, b->count, dtype, ncclSum, tr->comm, d->nccl_stream));
    if (grouped)
        NCCL_CHECK(ncclGroupEnd());
    CUDA_CHECK(cudaEventRecord(b->end_ev, d->nccl_stream));
}

static void backward(ddp *d, bucket_set *set)
{
    trainer *tr = &d->tr;
    tr_enqueue_backward_start(tr);
    int next_bucket = 0;
    for (int l = 0; l < tr->n_layers; l++) {
        tr_enqueue_layer(tr, l);
        const tr_layer *layer = &tr->layers[l];
        for (int k = layer->first; k < layer->first + layer->n; k++) {
            const tr_tensor *t = &tr->tensors[k];
            /* The autograd hook: copy the gradient into its bucket slot. */
            CUDA_CHECK(cudaMemcpyAsync(set->d_mem + t->offset, tr->d_grad + t->offset, t->count * sizeof(float),
                                       cudaMemcpyDeviceToDevice, tr->compute));
            const bucket *b = &set->b[next_bucket];
            if (k == b->first + b->n - 1)
                launch_bucket(d, set, next_bucket++);
        }
    }
}

static void finalize(ddp *d, bucket_set *set)
{
    trainer *tr = &d->tr;
    for (int i = 0; i < set->n; i++) {
        bucket *b = &set->b[i];
        CUDA_CHECK(cudaStreamWaitEvent(tr->compute, b->end_ev, 0));
        CUDA_CHECK(cudaMemcpyAsync(tr->d_grad + b->offset, set->d_mem + b->offset, b->count * sizeof(float),
                                   cudaMemcpyDeviceToDevice, tr->compute));
    }
    tr_enqueue_apply(tr, tr->compute, &d->all);
}

static void *watchdog_main(void *arg)
{
    ddp *d = arg;
    long ms = (long)d->tr.opt.watchdog_ms;
    struct timespec pause = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    while (!atomic_load(&d->stop)) {
        const bucket_set *sets[2] = {&d->first, &d->rebuilt};
        for (int s = 0; s < 2; s++)
            for (int i = 0; i < sets[s]->n; i++) {
                cudaError_t e = cudaEventQuery(sets[s]->b[i].end_ev);
                if (e != cudaSuccess && e != cudaErrorNotReady)
                    tr_die("watchdog: cudaEventQuery: %s", cudaGetErrorName(e));
            }
        nanosleep(&pause, NULL);
    }
    return NULL;
}

static void write_truth(ddp *d)
{
    trainer *tr = &d->tr;
    const bucket_set *set = &d->rebuilt;
    uint64_t *bytes = calloc((size_t)set->n, sizeof *bytes);
    double *ready = calloc((size_t)set->n, sizeof *ready);
    int *need = calloc((size_t)set->n, sizeof *need);
    if (!bytes || !ready || !need)
        tr_die("out of memory");
    for (int i = 0; i < set->n; i++) {
        bytes[i] = set->b[i].count * sizeof(float);
        ready[i] = set->b[i].ready;
    }
    double forward_total = 0;
    for (int s = 0; s < tr->prof.n_forward; s++)
        forward_total += tr->prof.forward[s];
    json_t *truth = tr_truth_new(tr);
    tr_truth_set_profile(tr, truth, set->n, bytes, ready, need, 1, &forward_total);
    int *slot = calloc((size_t)set->n, sizeof *slot);
    if (!slot)
        tr_die("out of memory");
    for (int i = 0; i < set->n; i++)
        slot[i] = i;   /* mark slot = rebuilt bucket */
    tr_truth_set_actual_ready(tr, truth, set->n, slot);
    free(slot);
    json_t *first = json_array();
    for (int i = 0; i < d->first.n; i++)
        json_array_append_new(first, json_integer((json_int_t)(d->first.b[i].count * sizeof(float))));
    json_object_set_new(truth, "first_iteration_bytes", first);
    json_object_set_new(truth, "other_calls_per_iteration",
                        json_pack("[{s:s, s:I, s:i}]", "kind", "broadcast", "bytes",
                                  (json_int_t)(d->buf_count * sizeof(float)), "root", 0));
    json_object_set_new(truth, "upstream_ready_events", json_true());
    json_object_set_new(truth, "stream_ordered_work", json_false());
    json_object_set_new(truth, "expect_schedulable", json_true());
    json_object_set_new(truth, "mismatch_rank", json_integer(tr->opt.mismatch_rank));
    json_object_set_new(truth, "bcast_rank", json_integer(tr->opt.bcast_rank));
    tr_truth_write(tr, truth);
    free(bytes);
    free(ready);
    free(need);
}

int main(int argc, char **argv)
{
    ddp d;
    memset(&d, 0, sizeof d);
    trainer *tr = &d.tr;
    tr_init(tr, "ddp_like", TR_OPT_BUCKETS | TR_OPT_MISMATCH | TR_OPT_WATCHDOG, argc, argv);
    d.mismatch = tr->rank == tr->opt.mismatch_rank;
    d.legacy_bcast = tr->rank == tr->opt.bcast_rank;
    size_t cap = tr_scaled_bytes(tr, tr->opt.bucket_cap_mb * 1.048576);   /* MiB, like DDP */
    size_t first_cap = tr_scaled_bytes(tr, tr->opt.first_bucket_mb * 1.048576);
    assign_buckets(&d, &d.first, cap, cap, true);
    assign_buckets(&d, &d.rebuilt, first_cap, cap, false);
    d.all = tr_range_of(tr, 0, tr->n_tensors);

    CUDA_CHECK(cudaStreamCreateWithFlags(&d.nccl_stream, cudaStreamNonBlocking));
    /* ResNet-50's BatchNorm running mean and variance: 53 layers, 26,560 channels, 2 floats each. */
    d.buf_count = tr_scaled_bytes(tr, 0.21248) / sizeof(float);
    CUDA_CHECK(cudaMallocHost((void **)&d.h_buf_in, d.buf_count * sizeof(float)));
    CUDA_CHECK(cudaMallocHost((void **)&d.h_buf_out, d.buf_count * sizeof(float)));
    CUDA_CHECK(cudaMalloc((void **)&d.d_buf, d.buf_count * sizeof(float)));
    CUDA_CHECK(cudaEventCreateWithFlags(&d.fwd_ev, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventCreateWithFlags(&d.bcast_end_ev, cudaEventDisableTiming));
    tr_marks_init(tr, d.rebuilt.n);
    if (tr->opt.watchdog_ms > 0 && pthread_create(&d.watchdog, NULL, watchdog_main, &d) != 0)
        tr_die("cannot start the watchdog thread");

    for (int t = 0; t < tr->opt.iters; t++) {
        bucket_set *set = t == 0 ? &d.first : &d.rebuilt;
        forward(&d);
        backward(&d, set);
        finalize(&d, set);
        tr_end_iteration(tr, t);
    }
    tr_print_checksum(tr, d.h_buf_out, d.buf_count * sizeof(float));
    write_truth(&d);   /* after the run: it holds the actual ready times */
    atomic_store(&d.stop, true);
    if (tr->opt.watchdog_ms > 0)
        pthread_join(d.watchdog, NULL);

    CUDA_CHECK(cudaStreamSynchronize(d.nccl_stream));
    free_buckets(&d.first);
    free_buckets(&d.rebuilt);
    CUDA_CHECK(cudaEventDestroy(d.fwd_ev));
    CUDA_CHECK(cudaEventDestroy(d.bcast_end_ev));
    CUDA_CHECK(cudaFreeHost(d.h_buf_in));
    CUDA_CHECK(cudaFreeHost(d.h_buf_out));
    CUDA_CHECK(cudaFree(d.d_buf));
    CUDA_CHECK(cudaStreamDestroy(d.nccl_stream));
    tr_finish(tr);
    return 0;
}
