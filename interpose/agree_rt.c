/* The agreement at the first call after the warm-up, the planner and the report (DESIGN.md
 * sections 1, 5 and 8).  The collectives issued here depend only on the call sequence: they
 * are issued at the same call index on every rank, and their sizes depend on n_calls only
 * after every rank has confirmed it holds the same n_calls and sequence hash. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_list.h"
#include "nccl_list.h"
#include "runtime.h"
#include "state.h"
#include "usbyte/policy.h"

#define USBYTE_VERSION "0.4.0"

static ub_versions versions = {USBYTE_VERSION, 0, 0, 0};

static void learn_versions(void)
{
    ub_inside++;
    if (!versions.nccl && ub_nccl.GetVersion)
        ub_nccl.GetVersion(&versions.nccl);
    if (!versions.cuda_runtime && ub_cuda.cudaRuntimeGetVersion)
        ub_cuda.cudaRuntimeGetVersion(&versions.cuda_runtime);
    if (!versions.cuda_driver && ub_cuda.cudaDriverGetVersion)
        ub_cuda.cudaDriverGetVersion(&versions.cuda_driver);
    ub_inside--;
}

/* One in-place allreduce of n doubles on the private stream, waited for on the host. */
static int allreduce_sync(ub_comm *c, double *host, int n, ncclRedOp_t op)
{
    size_t bytes = (size_t)n * sizeof(double);
    void *dev = NULL;
    int rc = -1;
    cudaStream_t s = c->tm.agree;
    if (ub_cuda.cudaMalloc(&dev, bytes) != cudaSuccess)
        return -1;
    if (ub_cuda.cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, s) == cudaSuccess &&
        ub_nccl.AllReduce(dev, dev, (size_t)n, ncclFloat64, op, c->handle, s) == ncclSuccess &&
        ub_cuda.cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, s) == cudaSuccess &&
        ub_cuda.cudaStreamSynchronize(s) == cudaSuccess)
        rc = 0;
    ub_cuda.cudaFree(dev);
    return rc;
}

static void verdict(ub_comm *c, const ub_agreed *a)
{
    ub_comm_report *r = &c->report;
    r->schedulable = true;
    r->n_reasons = 0;
    if (a->flags.stream_ordered > 0) {
        r->schedulable = false;
        ub_comm_report_add_reason(r,
            "stream-ordered work on the NCCL stream between collectives (%.0f operations per warm-up on the "
            "busiest rank): it consumes results in stream order and cannot be redirected; with Horovod, set "
            "HOROVOD_FUSION_THRESHOLD=0 so that usbyte does the fusion", a->flags.stream_ordered);
    }
    if (a->flags.cupti_missing > 0) {
        r->schedulable = false;
        ub_comm_report_add_reason(r, "CUPTI was not available on every rank: stream-ordered work on the NCCL "
                                     "stream cannot be ruled out");
    }
    if (a->flags.no_end_records > 0) {
        r->schedulable = false;
        ub_comm_report_add_reason(r, "no CUDA event was recorded on the NCCL stream after a call on some rank: "
                                     "completion could not be redirected (statically linked CUDA runtime?)");
    }
}

static void fill_pattern(ub_comm *c, const ub_agreed *a)
{
    ub_comm_report *r = &c->report;
    r->ready_upstream_calls = r->ready_fallback_calls = r->merge_barriers = 0;
    for (int k = 0; k < a->n_calls; k++) {
        if (a->calls[k].fallback) r->ready_fallback_calls++;
        else r->ready_upstream_calls++;
        if (a->calls[k].barrier) r->merge_barriers++;
    }
    r->stream_ordered = a->flags.stream_ordered;
    r->need_segments = r->have_profile ? r->profile.n_forward : 0;
}

static void summary_line(ub_comm *c)
{
    ub_comm_report *r = &c->report;
    if (!r->have_plans) {
        ub_info("communicator %d: %s%s%s", c->index, ub_comm_state_name(c->state), c->reason[0] ? ": " : "",
                c->reason);
        return;
    }
    double wfbp = r->policy_iteration[UB_POLICY_WFBP], chosen = r->policy_iteration[r->chosen];
    ub_info("communicator %d: %d allreduces/iteration, measured iteration %.3f ms, alpha %.1f us, "
            "beta %.3g s/B; wfbp predicts %.3f ms, %s %.3f ms (%.2fx over wfbp); %s",
            c->index, r->calls_per_iteration, 1e3 * r->measured_iteration, 1e6 * r->profile.alpha,
            r->profile.beta, 1e3 * wfbp, ub_policy_name((ub_policy_id)r->chosen), 1e3 * chosen,
            chosen > 0 ? wfbp / chosen : 0.0, r->schedulable ? "schedulable" : "not schedulable");
}

void ub_comm_agree(ub_comm *c)
{
    c->state = UB_COMM_AGREE;
    ub_comm_file_ready(c);
    ub_comm_report *r = &c->report;
    /* Nothing else touches this communicator while it agrees: every hook skips AGREE. */
    ub_state_unlock();
    ub_inside++;
    learn_versions();
    ub_timing_poll(&c->tm, true);

    if (ub_log_enabled(UB_LOG_DEBUG))
        for (int it = 0; it < c->rec.warmup; it++)
            for (int k = 0; k < c->n_ar; k++) {
                ub_rec_call *x = ub_record_at(&c->rec, it, k);
                ub_debug("raw it %d call %d: ready %.6f start %.6f end %.6f need %.6f%s", it, k, x->ready, x->start,
                         x->end, x->need, x->upstream ? "" : " fallback");
            }
    ub_summary sum;
    ub_agreed agreed;
    memset(&agreed, 0, sizeof agreed);
    int n = c->n_ar;
    bool have_summary = n > 0 && ub_record_summarize(&c->rec, &sum) == 0;
    if (!have_summary)
        n = 0; /* agree on "nothing to plan": every rank must still issue the header */
    double header[UB_AGREE_HEADER_LEN];
    ub_agree_header_encode(n, c->period, ub_seqhash_value(&c->seq), header);
    const char *failure = NULL;
    if (allreduce_sync(c, header, UB_AGREE_HEADER_LEN, ncclMax) != 0)
        failure = "the agreement collective failed";
    else if (!ub_agree_header_unanimous(header))
        failure = "signature mismatch: the ranks saw different call sequences";
    else if (n == 0)
        failure = "no allreduce to plan in the iteration";
    double *maxv = NULL, *sumv = NULL;
    if (!failure) {
        ub_agree_flags flags = {
            .stream_ordered = c->stream_ordered,
            .cupti_missing = (ub_cfg.cupti && c->report.cupti) ? 0.0 : 1.0,
            .no_end_records = c->end_records ? 0.0 : 1.0,
            .other_calls = c->other_calls,
        };
        maxv = calloc((size_t)ub_agree_max_len(n), sizeof *maxv);
        sumv = calloc((size_t)ub_agree_sum_len(n), sizeof *sumv);
        /* The other ranks are about to issue the data collectives: a rank that cannot issue
         * them would hang the job, so it stops with a clear message instead. */
        if (!maxv || !sumv) {
            ub_error("out of memory in the agreement of communicator %d: aborting to avoid a hang", c->index);
            abort();
        }
        ub_agree_encode(&sum, &flags, maxv, sumv);
        if (allreduce_sync(c, maxv, ub_agree_max_len(n), ncclMax) != 0 ||
            allreduce_sync(c, sumv, ub_agree_sum_len(n), ncclSum) != 0 ||
            ub_agree_decode(n, maxv, sumv, &agreed) != 0)
            failure = "the agreement collective failed";
    }
    ub_inside--;
    ub_state_lock();

    r->rank = c->rank;
    r->nranks = c->nranks;
    r->calls_per_iteration = c->n_ar;
    r->nccl_calls_per_iteration = c->period;
    r->warmup = ub_cfg.warmup;
    r->other_calls = c->other_calls;
    r->end_records = c->end_records;
    r->consumers_stream = c->consumers_stream;
    r->consumers_host = c->consumers_host;
    snprintf(r->stream_ordered_example, sizeof r->stream_ordered_example, "%s", c->stream_ordered_example);
    if (failure) {
        r->schedulable = false;
        r->n_reasons = 0;
        ub_comm_report_add_reason(r, "%s", failure);
        ub_comm_stop_profiling(c);
        c->state = UB_COMM_PASS_THROUGH;
        snprintf(c->reason, sizeof c->reason, "%s", failure);
    } else {
        if (ub_log_enabled(UB_LOG_DEBUG))
            for (int k = 0; k < agreed.n_calls; k++)
                ub_debug("communicator %d call %d: ready %.6f need %.6f done %.6f comm %.6f/%.6f%s%s", c->index, k,
                         agreed.calls[k].ready, agreed.calls[k].need, agreed.calls[k].done, agreed.calls[k].comm_min,
                         agreed.calls[k].comm_mean, agreed.calls[k].barrier ? " barrier" : "",
                         agreed.calls[k].fallback ? " fallback" : "");
        if (ub_derive_profile(&agreed, c->rec.bytes, c->rec.dtype, c->rec.op, &r->profile, &r->fit) == 0) {
            r->have_profile = true;
            char src[200];
            snprintf(src, sizeof src, "usbyte observe: %d warm-up iterations on %d ranks, agreed (max ready/need, mean comm)",
                     ub_cfg.warmup, agreed.ranks);
            r->profile.source = strdup(src);
            char name[64];
            snprintf(name, sizeof name, "communicator %d", c->index);
            r->profile.name = strdup(name);
        }
        r->measured_iteration = agreed.iteration;
        fill_pattern(c, &agreed);
        verdict(c, &agreed);
        if (r->have_profile) {
            r->chosen = ub_cfg.policy;
            for (int id = 0; id < UB_POLICY_COUNT; id++) {
                ub_plan plan;
                ub_plan_init(&plan, ub_policy_name((ub_policy_id)id));
                if (ub_policy_run((ub_policy_id)id, &r->profile, &plan) == 0) {
                    r->policy_iteration[id] = plan.iteration;
                    if (id == r->chosen)
                        ub_plan_copy(&r->plan, &plan);
                }
                ub_plan_free(&plan);
            }
            r->have_plans = true;
        }
        ub_comm_stop_profiling(c);
        c->state = UB_COMM_PLANNED;
        c->reason[0] = '\0';
    }
    r->state = ub_comm_state_name(c->state);
    snprintf(r->state_reason, sizeof r->state_reason, "%s", c->reason);
    ub_agreed_free(&agreed);
    if (have_summary)
        ub_summary_free(&sum);
    free(maxv);
    free(sumv);
    summary_line(c);
    ub_state_write_reports();
}

void ub_state_write_reports(void)
{
    int n;
    ub_comm **all = ub_state_all_comms(&n);
    if (n == 0)
        return;
    const ub_comm_report **reps = calloc((size_t)n, sizeof *reps);
    if (!reps)
        return;
    for (int i = 0; i < n; i++) {
        ub_comm *c = all[i];
        ub_comm_report *r = &c->report;
        r->index = c->index;
        r->rank = c->rank;
        r->nranks = c->nranks;
        r->iterations_observed = c->iterations_observed;
        r->state = ub_comm_state_name(c->state);
        snprintf(r->state_reason, sizeof r->state_reason, "%s", c->reason);
        if (!r->have_plans && r->n_reasons == 0) {
            r->schedulable = false;
            ub_comm_report_add_reason(r, "not profiled yet (state %s)", r->state);
        }
        reps[i] = r;
    }
    int rank = atomic_load(&ub_rank), world = atomic_load(&ub_world);
    json_t *doc = ub_report_json(rank, world, &ub_cfg, &versions, reps, n);
    /* The "not profiled yet" reason is for this snapshot only. */
    for (int i = 0; i < n; i++)
        if (!all[i]->report.have_plans && all[i]->report.n_reasons == 1 &&
            strncmp(all[i]->report.reasons[0], "not profiled yet", 16) == 0)
            all[i]->report.n_reasons = 0;
    free(reps);
    char host[256] = "unknown-host", path[1100], err[1300];
    gethostname(host, sizeof host - 1);
    if (ub_expand_report_path(ub_cfg.report, rank, (long)getpid(), host, path, sizeof path) != 0)
        ub_error("report path: %s", path);
    else if (!doc || ub_report_write(path, doc, err, sizeof err) != 0)
        ub_error("report: %s", doc ? err : "out of memory");
    else
        ub_debug("report written to %s", path);
    json_decref(doc);
}
