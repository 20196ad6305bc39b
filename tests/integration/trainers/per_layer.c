/* A trainer with layer-wise forward overlap (the pattern of priority/preemption schedulers and of
 * per-layer optimizers), on the CUDA runtime and NCCL.
 *
 * Backward: each layer's gradients are produced on the compute stream; for each tensor, as
 * PyTorch's ProcessGroupNCCL does for every collective (dist.all_reduce(async_op=True) from a
 * gradient hook), an event is recorded on the compute stream, the NCCL stream waits for it and
 * allreduces the tensor in place, and the work's end event is recorded right after the call.  Next forward: before forward segment s (the profile's
 * `forward[s]`), the compute stream waits separately on the end event of every tensor whose `need`
 * is s, copies those gradients back, steps their parameters, and only then runs segment s.  So the
 * input-side layers, whose gradients arrive last, are needed first: the calls have distinct needs.
 * Use it with a profile that has one forward segment per layer (e.g. resnet50-v100-b64.json). */
#include <stdlib.h>
#include <string.h>

#include "trainer_common.h"

typedef struct per_layer {
    trainer tr;
    cudaStream_t nccl_stream;
    cudaEvent_t *ready_ev;        /* per tensor, compute stream */
    cudaEvent_t *end_ev;          /* per tensor, NCCL stream */
    int *seg_first, *seg_n;       /* tensors whose need is s: a contiguous run */
    tr_range *seg_range;
} per_layer;

static void index_segments(per_layer *pl)
{
    trainer *tr = &pl->tr;
    int S = tr->prof.n_forward;
    pl->seg_first = calloc((size_t)S, sizeof(int));
    pl->seg_n = calloc((size_t)S, sizeof(int));
    pl->seg_range = calloc((size_t)S, sizeof(tr_range));
    if (!pl->seg_first || !pl->seg_n || !pl->seg_range)
        tr_die("out of memory");
    for (int k = 0; k < tr->n_tensors; k++) {
        int s = tr->tensors[k].need;
        if (pl->seg_n[s] > 0 && pl->seg_first[s] + pl->seg_n[s] != k)
            tr_die("%s: calls[%d].need %d: the calls needed by one forward segment must be consecutive",
                   tr->opt.profile, k, s);
        if (pl->seg_n[s]++ == 0)
            pl->seg_first[s] = k;
    }
    for (int s = 0; s < S; s++)
        if (pl->seg_n[s])
            pl->seg_range[s] = tr_range_of(tr, pl->seg_first[s], pl->seg_n[s]);
}

/* Before each forward segment: wait for exactly the calls it needs, step them, then compute. */
static void forward(per_layer *pl, bool after_backward, bool compute)
{
    trainer *tr = &pl->tr;
    if (compute)
        tr_enqueue_forward_start(tr);
    for (int s = 0; s < tr->prof.n_forward; s++) {
        if (after_backward && pl->seg_n[s]) {
            for (int k = pl->seg_first[s]; k < pl->seg_first[s] + pl->seg_n[s]; k++)
                CUDA_CHECK(cudaStreamWaitEvent(tr->compute, pl->end_ev[k], 0));
            tr_enqueue_apply(tr, tr->compute, &pl->seg_range[s]);
        }
        if (compute)
            tr_enqueue_sleep(tr, tr->compute, &tr->segment_scaled[s]);
    }
}

static void backward(per_layer *pl)
{
    trainer *tr = &pl->tr;
    tr_enqueue_backward_start(tr);
    for (int l = 0; l < tr->n_layers; l++) {
        const tr_layer *layer = &tr->layers[l];
        tr_enqueue_layer(tr, l);
        for (int k = layer->first; k < layer->first + layer->n; k++) {
            const tr_tensor *t = &tr->tensors[k];
            float *g = tr->d_grad + t->offset;
            tr_record_ready(tr, k, pl->ready_ev[k]);   /* and when it really was */
            CUDA_CHECK(cudaStreamWaitEvent(pl->nccl_stream, pl->ready_ev[k], 0));
            NCCL_CHECK(ncclAllReduce(g, g, t->count, ncclFloat32, ncclSum, tr->comm, pl->nccl_stream));
            CUDA_CHECK(cudaEventRecord(pl->end_ev[k], pl->nccl_stream));
        }
    }
}

static void write_truth(per_layer *pl)
{
    trainer *tr = &pl->tr;
    int n = tr->n_tensors;
    uint64_t *bytes = calloc((size_t)n, sizeof *bytes);
    double *ready = calloc((size_t)n, sizeof *ready);
    int *need = calloc((size_t)n, sizeof *need);
    if (!bytes || !ready || !need)
        tr_die("out of memory");
    int distinct = 0;
    for (int k = 0; k < n; k++) {
        bytes[k] = tr->tensors[k].count * sizeof(float);
        ready[k] = tr->tensors[k].ready;
        need[k] = tr->tensors[k].need;
        distinct += k == 0 || need[k] != need[k - 1];
    }
    json_t *truth = tr_truth_new(tr);
    tr_truth_set_profile(tr, truth, n, bytes, ready, need, tr->prof.n_forward, tr->prof.forward);
    int *slot = calloc((size_t)n, sizeof *slot);
    if (!slot)
        tr_die("out of memory");
    for (int k = 0; k < n; k++)
        slot[k] = k;
    tr_truth_set_actual_ready(tr, truth, n, slot);
    free(slot);
    json_object_set_new(truth, "distinct_needs", json_integer(distinct));
    json_object_set_new(truth, "other_calls_per_iteration", json_array());
    json_object_set_new(truth, "upstream_ready_events", json_true());
    json_object_set_new(truth, "stream_ordered_work", json_false());
    json_object_set_new(truth, "expect_schedulable", json_true());
    tr_truth_write(tr, truth);
    free(bytes);
    free(ready);
    free(need);
}

int main(int argc, char **argv)
{
    per_layer pl;
    memset(&pl, 0, sizeof pl);
    trainer *tr = &pl.tr;
    tr_init(tr, "per_layer", 0, argc, argv);
    index_segments(&pl);
    pl.ready_ev = calloc((size_t)tr->n_tensors, sizeof(cudaEvent_t));
    pl.end_ev = calloc((size_t)tr->n_tensors, sizeof(cudaEvent_t));
    if (!pl.ready_ev || !pl.end_ev)
        tr_die("out of memory");
    for (int k = 0; k < tr->n_tensors; k++) {
        CUDA_CHECK(cudaEventCreateWithFlags(&pl.ready_ev[k], cudaEventDisableTiming));
        CUDA_CHECK(cudaEventCreateWithFlags(&pl.end_ev[k], cudaEventDisableTiming));
    }
    CUDA_CHECK(cudaStreamCreateWithFlags(&pl.nccl_stream, cudaStreamNonBlocking));
    tr_marks_init(tr, tr->n_tensors);

    for (int t = 0; t < tr->opt.iters; t++) {
        forward(&pl, t > 0, true);
        backward(&pl);
        tr_end_iteration(tr, t);
    }
    forward(&pl, true, false);   /* the last step of every layer, without another forward */
    tr_print_checksum(tr, NULL, 0);
    write_truth(&pl);   /* after the run: it holds the actual ready times */

    CUDA_CHECK(cudaStreamSynchronize(pl.nccl_stream));
    for (int k = 0; k < tr->n_tensors; k++) {
        CUDA_CHECK(cudaEventDestroy(pl.ready_ev[k]));
        CUDA_CHECK(cudaEventDestroy(pl.end_ev[k]));
    }
    CUDA_CHECK(cudaStreamDestroy(pl.nccl_stream));
    free(pl.ready_ev);
    free(pl.end_ev);
    free(pl.seg_first);
    free(pl.seg_n);
    free(pl.seg_range);
    tr_finish(tr);
    return 0;
}
