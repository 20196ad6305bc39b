/* A trainer shaped like Horovod's PyTorch integration with NCCL, on the CUDA runtime and NCCL.
 *
 * What it reproduces of Horovod:
 *  - the framework thread produces each gradient on the compute stream, records a ready event for
 *    it there and submits the tensor to Horovod's queue (hvd.allreduce_async_ in the hook);
 *  - a background thread issues the allreduces on its own NCCL stream: it makes the NCCL stream
 *    wait for the ready events of the tensors of one response, and when the response fuses several
 *    tensors it copies them into the fusion buffer on the NCCL stream (cudaMemcpyAsync), allreduces
 *    the buffer and copies the results back out on the NCCL stream: stream-ordered work on the NCCL
 *    stream, which usbyte must see and refuse to schedule; it then records a finalize event;
 *  - the optimizer (hvd.DistributedOptimizer.step -> synchronize) waits for every handle and steps.
 * Fusion: Horovod fuses the tensors that are ready in the same cycle (HOROVOD_CYCLE_TIME, 1 ms by
 * default) up to HOROVOD_FUSION_THRESHOLD (64 MB).  Real Horovod decides which tensors are ready
 * by negotiating between ranks each cycle; here the responses are computed from the profile's ready
 * times (cycle windows of profile time, threshold times --bytes-scale), which is the same decision
 * on every rank by construction.  --fusion-threshold-mb 0 turns fusion off (HOROVOD_FUSION_THRESHOLD=0):
 * one in-place allreduce per tensor and no copies on the NCCL stream.
 * Completion: by default the optimizer's stream waits on the finalize events (cudaStreamWaitEvent)
 * once the background thread has issued the iteration, so that no wait races with a later issue.
 * --host-finalizer does what Horovod really does: a finalizer thread blocks in
 * cudaEventSynchronize on each response's finalize event as soon as it is issued (while later
 * responses are still being issued), marks its handles done, and the optimizer waits for the
 * handles on the host: host waits on a call's completion before the next call arrives, from a
 * thread that is neither the issuing thread nor the training loop.
 * --postscale averages as Horovod does without ncclAvg (op=hvd.Average in Horovod before 0.26,
 * or built against NCCL before 2.10: ncclSum, then postscale_factor 1/size applied by ScaleBuffer,
 * a kernel on the NCCL stream): after each allreduce, a kernel on the NCCL stream multiplies the
 * response's result by 1/size (a fused response: its fusion buffer, before the copies out).  The
 * kernel is an emulated one (docs/emulator-cuda.md): this option runs on the emulator only. */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "trainer_common.h"

typedef struct response {
    int first, n;             /* tensors, arrival order */
    size_t offset, count;     /* elements in the flat gradient array */
    double ready;             /* profile time of its last tensor */
    cudaEvent_t fin_ev;
    /* --postscale: the scale kernel's arguments (alive as long as the kernels may run) */
    float *scale_data;
    size_t scale_count;
    float scale_factor;
    void *scale_args[3];
} response;

/* Horovod's ScaleBuffer as an emulated kernel: data[i] *= factor. */
static void scale_kernel(void **args)
{
    float *data = *(float **)args[0];
    size_t count = *(size_t *)args[1];
    float factor = *(float *)args[2];
    for (size_t i = 0; i < count; i++)
        data[i] *= factor;
}

typedef struct horovod {
    trainer tr;
    int n_resp;
    response *resp;
    cudaEvent_t *ready_ev;    /* per tensor, on the compute stream */
    float *d_fusion;
    size_t fusion_count;
    cudaStream_t nccl_stream;
    tr_range all;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int sub_iter;             /* iteration whose tensors are being submitted */
    int submitted;            /* tensors of sub_iter submitted so far */
    int issued_iter;          /* last iteration whose responses are all issued */
    int issue_iter, issued_n; /* responses of issue_iter issued so far */
    pthread_t finalizer;
    int finalized_iter;       /* --host-finalizer: last iteration whose handles are all done */
} horovod;

/* --postscale: the scale kernel after the response's allreduce, on the NCCL stream. */
static void postscale(horovod *h, response *r, float *data)
{
    trainer *tr = &h->tr;
    if (!tr->opt.postscale)
        return;
    if (!r->scale_args[0]) {   /* set before the first launch, read only after it */
        r->scale_data = data;
        r->scale_count = r->count;
        r->scale_factor = 1.0f / (float)tr->world;
        r->scale_args[0] = &r->scale_data;
        r->scale_args[1] = &r->scale_count;
        r->scale_args[2] = &r->scale_factor;
    }
    CUDA_CHECK(cudaLaunchKernel((const void *)(uintptr_t)scale_kernel, (dim3){1, 1, 1}, (dim3){1, 1, 1}, r->scale_args,
                                0, h->nccl_stream));
}

static void plan_responses(horovod *h)
{
    trainer *tr = &h->tr;
    size_t threshold = tr->opt.fusion_threshold_mb > 0 ? tr_scaled_bytes(tr, tr->opt.fusion_threshold_mb) : 0;
    double cycle = tr->opt.cycle_time_ms * 1e-3;
    h->resp = calloc((size_t)tr->n_tensors, sizeof *h->resp);
    if (!h->resp)
        tr_die("out of memory");
    long window = -1;
    for (int k = 0; k < tr->n_tensors; k++) {
        const tr_tensor *t = &tr->tensors[k];
        long w = (long)floor(t->ready / cycle);
        size_t bytes = t->count * sizeof(float);
        response *r = h->n_resp ? &h->resp[h->n_resp - 1] : NULL;
        bool fuse = r && threshold > 0 && w == window && (r->count * sizeof(float) + bytes) <= threshold;
        if (!fuse) {
            r = &h->resp[h->n_resp++];
            *r = (response){.first = k, .offset = t->offset};
        }
        r->n++;
        r->count += t->count;
        r->ready = t->ready;
        window = w;
    }
    for (int i = 0; i < h->n_resp; i++) {
        CUDA_CHECK(cudaEventCreateWithFlags(&h->resp[i].fin_ev, cudaEventDisableTiming));
        if (h->resp[i].n > 1 && h->resp[i].count > h->fusion_count)
            h->fusion_count = h->resp[i].count;
    }
    if (h->fusion_count)
        CUDA_CHECK(cudaMalloc((void **)&h->d_fusion, h->fusion_count * sizeof(float)));
}

static void issue_response(horovod *h, response *r)
{
    trainer *tr = &h->tr;
    for (int k = r->first; k < r->first + r->n; k++)
        CUDA_CHECK(cudaStreamWaitEvent(h->nccl_stream, h->ready_ev[k], 0));
    if (r->n == 1) {
        float *g = tr->d_grad + r->offset;
        NCCL_CHECK(ncclAllReduce(g, g, r->count, ncclFloat32, ncclSum, tr->comm, h->nccl_stream));
        postscale(h, r, g);
    } else {
        size_t at = 0;
        for (int k = r->first; k < r->first + r->n; k++) {
            const tr_tensor *t = &tr->tensors[k];
            CUDA_CHECK(cudaMemcpyAsync(h->d_fusion + at, tr->d_grad + t->offset, t->count * sizeof(float),
                                       cudaMemcpyDeviceToDevice, h->nccl_stream));
            at += t->count;
        }
        NCCL_CHECK(ncclAllReduce(h->d_fusion, h->d_fusion, r->count, ncclFloat32, ncclSum, tr->comm,
                                 h->nccl_stream));
        postscale(h, r, h->d_fusion);
        at = 0;
        for (int k = r->first; k < r->first + r->n; k++) {
            const tr_tensor *t = &tr->tensors[k];
            CUDA_CHECK(cudaMemcpyAsync(tr->d_grad + t->offset, h->d_fusion + at, t->count * sizeof(float),
                                       cudaMemcpyDeviceToDevice, h->nccl_stream));
            at += t->count;
        }
    }
    CUDA_CHECK(cudaEventRecord(r->fin_ev, h->nccl_stream));
}

static void *background_main(void *arg)
{
    horovod *h = arg;
    trainer *tr = &h->tr;
    tr_bind_device(tr);
    for (int t = 0; t < tr->opt.iters; t++) {
        for (int i = 0; i < h->n_resp; i++) {
            response *r = &h->resp[i];
            pthread_mutex_lock(&h->mu);
            while (h->sub_iter != t || h->submitted < r->first + r->n)
                pthread_cond_wait(&h->cv, &h->mu);
            pthread_mutex_unlock(&h->mu);
            issue_response(h, r);
            pthread_mutex_lock(&h->mu);
            h->issue_iter = t;
            h->issued_n = i + 1;
            pthread_cond_broadcast(&h->cv);
            pthread_mutex_unlock(&h->mu);
        }
        pthread_mutex_lock(&h->mu);
        h->issued_iter = t;
        pthread_cond_broadcast(&h->cv);
        pthread_mutex_unlock(&h->mu);
    }
    return NULL;
}

/* Horovod's finalizer: wait for each response on the host as soon as it is issued. */
static void *finalizer_main(void *arg)
{
    horovod *h = arg;
    trainer *tr = &h->tr;
    tr_bind_device(tr);
    for (int t = 0; t < tr->opt.iters; t++) {
        for (int i = 0; i < h->n_resp; i++) {
            pthread_mutex_lock(&h->mu);
            while (h->issue_iter < t || (h->issue_iter == t && h->issued_n <= i))
                pthread_cond_wait(&h->cv, &h->mu);
            pthread_mutex_unlock(&h->mu);
            CUDA_CHECK(cudaEventSynchronize(h->resp[i].fin_ev));
        }
        pthread_mutex_lock(&h->mu);
        h->finalized_iter = t;
        pthread_cond_broadcast(&h->cv);
        pthread_mutex_unlock(&h->mu);
    }
    return NULL;
}

static void submit(horovod *h, int iter, int tensors)
{
    pthread_mutex_lock(&h->mu);
    h->sub_iter = iter;
    h->submitted = tensors;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
}

static void write_truth(horovod *h)
{
    trainer *tr = &h->tr;
    uint64_t *bytes = calloc((size_t)h->n_resp, sizeof *bytes);
    double *ready = calloc((size_t)h->n_resp, sizeof *ready);
    int *need = calloc((size_t)h->n_resp, sizeof *need);
    if (!bytes || !ready || !need)
        tr_die("out of memory");
    int fused = 0;
    for (int i = 0; i < h->n_resp; i++) {
        bytes[i] = h->resp[i].count * sizeof(float);
        ready[i] = h->resp[i].ready;
        fused += h->resp[i].n > 1;
    }
    double forward_total = 0;
    for (int s = 0; s < tr->prof.n_forward; s++)
        forward_total += tr->prof.forward[s];
    json_t *truth = tr_truth_new(tr);
    tr_truth_set_profile(tr, truth, h->n_resp, bytes, ready, need, 1, &forward_total);
    /* A response's upstream wait that counts is on its last tensor's ready event (mark slot =
     * tensor). */
    int *slot = calloc((size_t)h->n_resp, sizeof *slot);
    if (!slot)
        tr_die("out of memory");
    for (int i = 0; i < h->n_resp; i++)
        slot[i] = h->resp[i].first + h->resp[i].n - 1;
    tr_truth_set_actual_ready(tr, truth, h->n_resp, slot);
    free(slot);
    json_object_set_new(truth, "fused_calls_per_iteration", json_integer(fused));
    json_object_set_new(truth, "other_calls_per_iteration", json_array());
    json_object_set_new(truth, "upstream_ready_events", json_true());
    bool ordered = fused > 0 || tr->opt.postscale;
    json_object_set_new(truth, "stream_ordered_work", json_boolean(ordered));
    json_object_set_new(truth, "expect_schedulable", json_boolean(!ordered));
    json_object_set_new(truth, "host_finalizer", json_boolean(tr->opt.host_finalizer));
    tr_truth_write(tr, truth);
    free(bytes);
    free(ready);
    free(need);
}

int main(int argc, char **argv)
{
    horovod h;
    memset(&h, 0, sizeof h);
    trainer *tr = &h.tr;
    tr_init(tr, "horovod_like", TR_OPT_FUSION, argc, argv);
    if (tr->opt.postscale && !dlsym(RTLD_DEFAULT, "usbyteEmuContext"))
        tr_die("--postscale launches an emulated kernel: it runs on the CPU emulator only");
    plan_responses(&h);
    h.all = tr_range_of(tr, 0, tr->n_tensors);
    h.ready_ev = calloc((size_t)tr->n_tensors, sizeof *h.ready_ev);
    if (!h.ready_ev)
        tr_die("out of memory");
    for (int k = 0; k < tr->n_tensors; k++)
        CUDA_CHECK(cudaEventCreateWithFlags(&h.ready_ev[k], cudaEventDisableTiming));
    CUDA_CHECK(cudaStreamCreateWithFlags(&h.nccl_stream, cudaStreamNonBlocking));
    pthread_mutex_init(&h.mu, NULL);
    pthread_cond_init(&h.cv, NULL);
    h.sub_iter = -1;
    h.issued_iter = -1;
    h.issue_iter = -1;
    h.finalized_iter = -1;
    tr_marks_init(tr, tr->n_tensors);
    if (pthread_create(&h.thread, NULL, background_main, &h) != 0)
        tr_die("cannot start the background thread");
    if (tr->opt.host_finalizer && pthread_create(&h.finalizer, NULL, finalizer_main, &h) != 0)
        tr_die("cannot start the finalizer thread");

    for (int t = 0; t < tr->opt.iters; t++) {
        tr_enqueue_forward_start(tr);
        tr_enqueue_forward_barrier(tr);
        tr_enqueue_backward_start(tr);
        submit(&h, t, 0);
        for (int l = 0; l < tr->n_layers; l++) {
            tr_enqueue_layer(tr, l);
            const tr_layer *layer = &tr->layers[l];
            for (int k = layer->first; k < layer->first + layer->n; k++) {
                tr_record_ready(tr, k, h.ready_ev[k]);   /* and when it really was */
            }
            submit(&h, t, layer->first + layer->n);
        }
        /* synchronize(handle) for every gradient, then the optimizer step. */
        pthread_mutex_lock(&h.mu);
        while (tr->opt.host_finalizer ? h.finalized_iter < t : h.issued_iter < t)
            pthread_cond_wait(&h.cv, &h.mu);
        pthread_mutex_unlock(&h.mu);
        if (!tr->opt.host_finalizer)
            for (int i = 0; i < h.n_resp; i++)
                CUDA_CHECK(cudaStreamWaitEvent(tr->compute, h.resp[i].fin_ev, 0));
        tr_enqueue_apply(tr, tr->compute, &h.all);
        tr_end_iteration(tr, t);
    }
    pthread_join(h.thread, NULL);
    if (tr->opt.host_finalizer)
        pthread_join(h.finalizer, NULL);
    tr_print_checksum(tr, NULL, 0);
    write_truth(&h);   /* after the run: it holds the actual ready times */

    CUDA_CHECK(cudaStreamSynchronize(h.nccl_stream));
    for (int i = 0; i < h.n_resp; i++)
        CUDA_CHECK(cudaEventDestroy(h.resp[i].fin_ev));
    for (int k = 0; k < tr->n_tensors; k++)
        CUDA_CHECK(cudaEventDestroy(h.ready_ev[k]));
    if (h.d_fusion)
        CUDA_CHECK(cudaFree(h.d_fusion));
    CUDA_CHECK(cudaStreamDestroy(h.nccl_stream));
    pthread_mutex_destroy(&h.mu);
    pthread_cond_destroy(&h.cv);
    free(h.resp);
    free(h.ready_ev);
    tr_finish(tr);
    return 0;
}
