/* The agreement at the first call after the warm-up, the planner and the report (docs/design.md
 * sections 1, 5 and 8).  The collectives issued here depend only on the call sequence: they
 * are issued at the same call index on every rank, inside an NCCL group or not, and their sizes
 * are constants (UB_AGREE_MAX_LEN, UB_AGREE_SUM_LEN), whatever each rank measured.  Nothing
 * waits for them where they are issued; the result is read later (docs/runtime.md gives the rule
 * schedule mode will follow). */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cuda_list.h"
#include "guard.h"
#include "defer.h"
#include "device.h"
#include "exec.h"
#include "nccl_list.h"
#include "runtime.h"
#include "state.h"
#include "usbyte/io.h"
#include "usbyte/model.h"
#include "usbyte/policy.h"

#define USBYTE_VERSION "0.4.0"

/* Learnt once by the first agreement (several threads may issue one), read by report writers:
 * both under versions_mutex. */
static pthread_mutex_t versions_mutex = PTHREAD_MUTEX_INITIALIZER;
static ub_versions versions = {USBYTE_VERSION, 0, 0, 0, NULL, NULL};
static char nccl_library[1024], cudart_library[1024], gpu_name[256];
static int gpu_device = -1;

/* Communicators whose agreement is issued and not read yet: a thread leaving its outermost group
 * looks for a result to read only while there is one. */
static atomic_int agree_unread;

bool ub_agree_any_unread(void) { return atomic_load(&agree_unread) > 0; }

void ub_comm_agree_abandon(ub_comm *c)
{
    if (c->agree_issued) /* not while its issue is under way on another thread */
        atomic_fetch_sub(&agree_unread, 1);
    c->agree_issued = false;
}

/* The file a real function comes from (dladdr), into buf; false when unknown. */
static bool library_of(void *fn, char *buf, size_t len)
{
    Dl_info di;
    if (!fn || !dladdr(fn, &di) || !di.dli_fname || !di.dli_fname[0])
        return false;
    snprintf(buf, len, "%s", di.dli_fname);
    return true;
}

/* The device's name from the application's own CUDA runtime (the library cudaEventRecord came
 * from: a framework may have loaded it RTLD_LOCAL).  Its cudaDeviceProp starts with the name
 * whatever the runtime's version; the buffer is larger than any version's structure. */
static void learn_gpu(void)
{
    int dev = -1;
    if (gpu_device >= 0 || !ub_cuda.cudaGetDevice || UB_CUDA(ub_cuda.cudaGetDevice(&dev)) != cudaSuccess)
        return;
    gpu_device = dev;
    void *h = cudart_library[0] ? dlopen(cudart_library, RTLD_NOLOAD | RTLD_LAZY) : NULL;
    typedef cudaError_t (*props_fn)(void *prop, int device);
    props_fn f = NULL;
    if (h && !(f = (props_fn)dlsym(h, "cudaGetDeviceProperties_v2")))
        f = (props_fn)dlsym(h, "cudaGetDeviceProperties");
    char *prop = f ? calloc(1, 1 << 16) : NULL;
    if (prop && UB_CUDA(f(prop, dev)) == cudaSuccess) {
        prop[sizeof gpu_name - 1] = '\0';
        snprintf(gpu_name, sizeof gpu_name, "%s", prop);
    }
    free(prop);
    if (h)
        dlclose(h);
}

static void learn_versions(void)
{
    pthread_mutex_lock(&versions_mutex);
    ub_inside++;
    if (!versions.nccl && ub_nccl.GetVersion)
        UB_NCCL(ub_nccl.GetVersion(&versions.nccl));
    if (!versions.cuda_runtime && ub_cuda.cudaRuntimeGetVersion)
        UB_CUDA(ub_cuda.cudaRuntimeGetVersion(&versions.cuda_runtime));
    if (!versions.cuda_driver && ub_cuda.cudaDriverGetVersion)
        UB_CUDA(ub_cuda.cudaDriverGetVersion(&versions.cuda_driver));
    if (!versions.nccl_library && library_of((void *)ub_nccl.AllReduce, nccl_library, sizeof nccl_library))
        versions.nccl_library = nccl_library;
    if (!versions.cudart_library && library_of((void *)ub_cuda.cudaEventRecord, cudart_library, sizeof cudart_library))
        versions.cudart_library = cudart_library;
    learn_gpu();
    ub_inside--;
    pthread_mutex_unlock(&versions_mutex);
}

/* What this rank measured itself in the warm-up (before the agreement takes the maximum over the
 * ranks): its iteration lengths, its ready times and the recording of every call on the host's
 * wall clock.  Built without the lock (the record is this thread's while it issues the
 * agreement); false when out of memory. */
static bool measure_local(ub_comm *c, const ub_summary *sum, ub_rank_local *l)
{
    memset(l, 0, sizeof *l);
    l->origin = NAN;
    int w = c->rec.warmup, n = sum->n_calls;
    double *len = malloc((size_t)(w > 0 ? w : 1) * sizeof *len);
    l->ready = malloc((size_t)n * sizeof *l->ready);
    if (c->tm.ok && isfinite(c->tm.epoch_unix))
        l->rec = malloc((size_t)w * (size_t)n * 3 * sizeof *l->rec);
    if (!len || !l->ready) {
        free(len);
        free(l->ready);
        free(l->rec);
        return false;
    }
    ub_record_iterations(&c->rec, len);
    l->iteration = ub_spread_of(len, w);
    free(len);
    l->n_calls = n;
    for (int k = 0; k < n; k++)
        l->ready[k] = sum->calls[k].ready;
    if (l->rec) {
        l->origin = c->tm.epoch_unix;
        l->rec_iterations = w;
        for (int it = 0; it < w; it++)
            for (int k = 0; k < n; k++) {
                const ub_rec_call *x = ub_record_at(&c->rec, it, k);
                double *o = &l->rec[((size_t)it * (size_t)n + (size_t)k) * 3];
                o[0] = x->ready;
                o[1] = x->start;
                o[2] = x->end;
            }
    }
    return true;
}

/* Each agreed flag that makes a communicator unschedulable, and the reason the report gives,
 * formatted with the flag's value, the period, or nothing. */
typedef enum { WHY_PLAIN, WHY_VALUE, WHY_PERIOD } why_arg;
static const struct {
    size_t flag; /* offset in ub_agree_flags */
    why_arg arg;
    const char *why;
} unschedulable[] = {
    {offsetof(ub_agree_flags, stream_copies), WHY_VALUE,
     "stream-ordered work on the NCCL stream between collectives: copies or memsets (%g per warm-up on the busiest "
     "rank), which consume results in stream order and cannot be redirected; with Horovod, set "
     "HOROVOD_FUSION_THRESHOLD=0 so that usbyte does the fusion (Horovod copies fused tensors in and out of its "
     "buffer on the NCCL stream)"},
    {offsetof(ub_agree_flags, stream_compute), WHY_VALUE,
     "stream-ordered compute on the NCCL stream between collectives: kernels, graphs or host functions (%g per "
     "warm-up on the busiest rank), which consume results in stream order and cannot be redirected; with Horovod "
     "these are the kernels that scale averaged gradients, which HOROVOD_FUSION_THRESHOLD=0 does not remove: average "
     "with ncclAvg (Horovod 0.26 or later built against NCCL 2.10 or later) and leave gradient_predivide_factor at "
     "1.0, or pass op=hvd.Sum and divide by hvd.size() yourself (scale the loss before backward)"},
    {offsetof(ub_agree_flags, cupti_taken), WHY_PLAIN,
     "another CUPTI subscriber held CUPTI during the warm-up on some rank (a profiler such as torch.profiler, or an "
     "NVIDIA tool such as Nsight Systems the job runs under): stream-ordered work on the NCCL stream could not be "
     "watched; profile without usbyte, or run with USBYTE_MODE=observe to measure and plan while profiling"},
    {offsetof(ub_agree_flags, cupti_missing), WHY_PLAIN,
     "CUPTI was not available on every rank: stream-ordered work on the NCCL stream cannot be ruled out"},
    {offsetof(ub_agree_flags, no_end_records), WHY_PLAIN,
     "neither an event recorded on the NCCL stream after a call nor a host wait on that stream was seen on some rank: "
     "completion could not be redirected (statically linked CUDA runtime?)"},
    {offsetof(ub_agree_flags, multi_stream), WHY_PLAIN,
     "the allreduces of an iteration were issued on more than one stream on some rank: one completion order per "
     "communicator is assumed"},
    {offsetof(ub_agree_flags, legacy_stream), WHY_PLAIN,
     "an allreduce was issued on the legacy or a per-thread default stream, which synchronises with other streams "
     "implicitly: issue collectives on a stream of their own (cudaStreamNonBlocking)"},
    {offsetof(ub_agree_flags, period_refuted), WHY_PERIOD,
     "the period found (%u calls) is refuted by the buffer addresses on some rank (equal-sized calls repeat within an "
     "iteration): detection restarts one iteration after the agreement, looking for a longer period"},
    {offsetof(ub_agree_flags, p2p), WHY_PLAIN,
     "point-to-point calls (ncclSend/ncclRecv) in the iteration: their groups must stay intact, so the communicator is "
     "not re-scheduled"},
};

static void verdict(ub_comm *c, const ub_agreed *a)
{
    ub_comm_report *r = &c->report;
    r->schedulable = true;
    ub_comm_report_clear_reasons(r);
    for (size_t i = 0; i < sizeof unschedulable / sizeof unschedulable[0]; i++) {
        double v = *(const double *)((const char *)&a->flags + unschedulable[i].flag);
        if (!(v > 0))
            continue;
        r->schedulable = false;
        const char *f = unschedulable[i].why;
        switch (unschedulable[i].arg) {
        case WHY_VALUE: ub_comm_report_add_reason(r, f, v); break;
        case WHY_PERIOD: ub_comm_report_add_reason(r, f, c->period); break;
        default: ub_comm_report_add_reason(r, "%s", f); break;
        }
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

/* A rank that cannot take part in the agreement would leave the others waiting in its
 * collectives (or, in schedule mode, planning without it): it stops the job with a clear line
 * instead.  Only reached when CUDA refuses a copy or NCCL an enqueue on a healthy context. */
static _Noreturn void cannot_take_part(ub_comm *c, const char *what)
{
    ub_error("communicator %d: %s during the agreement; the other ranks would wait for this one "
             "forever: aborting", c->index, what);
    abort();
}

/* Schedule mode's executor, reserved before the agreement (exec.h): its failure is a flag of the
 * agreement, not a rank that cannot follow the others.  Returns the staging bytes this rank
 * offers the planner: what a plan of this iteration may stage (USBYTE_STAGING_MB at most),
 * within what is allocated in schedule mode.  Runs without the lock (the issuing thread). */
static uint64_t reserve_executor(ub_comm *c)
{
    uint64_t total = 0;
    for (int k = 0; k < c->n_ar; k++)
        total += c->rec.bytes[k];
    uint64_t limit = (uint64_t)ub_cfg.staging_mb << 20, wanted = total < limit ? total : limit;
    c->exec_failure[0] = '\0';
    if (ub_cfg.mode != UB_MODE_SCHEDULE || c->local_failure[0] || c->n_ar <= 0)
        return wanted;
    if (ub_exec_reserve(c, c->n_ar, wanted, c->exec_failure, sizeof c->exec_failure) != 0) {
        ub_warn("communicator %d: %s: every rank will stay in pass-through", c->index, c->exec_failure);
        return 0;
    }
    return c->sched.staging_cap < wanted ? c->sched.staging_cap : wanted;
}

bool ub_comm_agree_buffers(ub_comm *c)
{
    size_t bytes = (size_t)(UB_AGREE_MAX_LEN + UB_AGREE_SUM_LEN) * sizeof(double);
    int previous = ub_device_enter(c->device);
    if (!c->agree_host && UB_CUDA(ub_cuda.cudaMallocHost((void **)&c->agree_host, bytes)) != cudaSuccess)
        c->agree_host = NULL;
    if (!c->agree_dev && UB_CUDA(ub_cuda.cudaMalloc(&c->agree_dev, bytes)) != cudaSuccess)
        c->agree_dev = NULL;
    if (!c->agree_done && UB_CUDA(ub_cuda.cudaEventCreateWithFlags(&c->agree_done, cudaEventDisableTiming)) != cudaSuccess)
        c->agree_done = NULL;
    ub_device_leave(previous);
    return c->agree_host && c->agree_dev && c->agree_done;
}

/* The period of this rank's full signatures (buffers included), 0 when its detector has none. */
static double full_period(const ub_comm *c)
{
    uint32_t p = 0;
    uint64_t start;
    if (!c->det_full || !ub_iterdet_locked(c->det_full, &p, &start))
        p = 0;
    return (double)p;
}

/* Some allreduce had no event recorded right after it: per-call completion cannot be offered. */
static bool missing_own_end(const ub_comm *c)
{
    if (!c->has_end_event)
        return true;
    for (int k = 0; k < c->n_ar; k++)
        if (!c->has_end_event[k])
            return true;
    return false;
}

/* After the launch of the group that held the agreement (nothing left when the switch to the
 * plan launched it early). */
static void copy_back_after_launch(const void *data)
{
    ub_comm *c = *(ub_comm *const *)data;
    if (c->agree_copy_pending)
        ub_comm_agree_copy_back(c);
}

void ub_comm_agree_issue(ub_comm *c)
{
    c->state = UB_COMM_AGREE;
    if (!c->local_failure[0])
        ub_comm_file_ready(c);
    /* The CUDA hooks skip a communicator that is not in PROFILE: the recorder is ours alone now
     * (an abort meanwhile leaves it to this thread). */
    c->issuing_agreement = true;
    ub_state_unlock();
    ub_inside++;
    learn_versions();
    /* Never waits: the iterations whose timing events have all completed are the ones this rank
     * contributes, with their count, and the agreed numbers decide (no iteration complete on some
     * rank: every rank profiles again).  A wait here could last for ever (a peer gone) and would
     * make the time of the issue depend on the device. */
    if (!c->local_failure[0])
        ub_timing_poll(&c->tm, false);
    if (atomic_load(&c->ending)) {
        /* Aborted meanwhile (a peer gone, the watchdog): nothing to agree with.  The abort left
         * the warm-up's resources to this thread; they go without waiting for device work. */
        ub_inside--;
        ub_state_lock();
        c->issuing_agreement = false;
        ub_comm_stop_profiling(c);
        return;
    }

    if (ub_log_enabled(UB_LOG_DEBUG) && !c->local_failure[0])
        for (int it = 0; it < c->rec.warmup; it++)
            for (int k = 0; k < c->n_ar; k++) {
                ub_rec_call *x = ub_record_at(&c->rec, it, k);
                ub_debug("raw it %d call %d: ready %.6f start %.6f end %.6f need %.6f%s", it, k, x->ready, x->start,
                         x->end, x->need, x->upstream ? "" : " fallback");
            }
    ub_summary sum;
    bool *settled = calloc((size_t)c->rec.warmup + 1, sizeof *settled);
    if (settled && !c->local_failure[0])
        ub_warmup_settled(c, settled);
    bool have_summary = !c->local_failure[0] && c->n_ar > 0 && c->n_ar <= UB_AGREE_CAP && settled &&
                        ub_record_summarize(&c->rec, settled, &sum) == 0;
    free(settled);
    uint64_t used_bits[16] = {0};
    for (int it = 0; have_summary && it < c->rec.warmup && it < 1024; it++)
        if (sum.used[it])
            used_bits[it / 64] |= 1ull << (it % 64);
    if (!c->local_failure[0] && c->n_ar > 0 && c->n_ar <= UB_AGREE_CAP && !have_summary)
        snprintf(c->local_failure, sizeof c->local_failure, "cannot summarise the warm-up (out of memory)");
    uint64_t staging = reserve_executor(c);
    ub_agree_local local = {
        .n_calls = c->n_ar,
        .period = c->period,
        .seq_hash = ub_seqhash_value(&c->seq),
        .settings = {.policy = ub_cfg.policy, .mode = ub_cfg.mode, .completion = ub_cfg.completion,
                     .staging_mb = ub_cfg.staging_mb, .align = ub_cfg.align, .min_gain_pct = ub_cfg.min_gain_pct},
        .summary = have_summary ? &sum : NULL,
        .flags = {
            .stream_ordered = c->stream_ordered,
            .stream_compute = c->stream_compute,
            .stream_copies = c->stream_copies,
            .cupti_missing = (ub_cfg.cupti && (c->report.cupti || c->cupti_taken)) ? 0.0 : 1.0,
            .cupti_taken = ub_cfg.cupti && c->cupti_taken ? 1.0 : 0.0,
            .no_end_records = c->end_records || c->stream_host_waits ? 0.0 : 1.0,
            .other_calls = c->other_calls,
            .copy_beta = ub_comm_copy_beta(c),
            .multi_stream = c->multi_stream ? 1.0 : 0.0,
            .legacy_stream = c->legacy_stream ? 1.0 : 0.0,
            .missing_own_end = missing_own_end(c) ? 1.0 : 0.0,
            .p2p = c->p2p ? 1.0 : 0.0,
            .period_refuted = c->period_refuted ? 1.0 : 0.0,
            .addr_period = full_period(c),
            .neg_addr_period = -full_period(c),
            .neg_iterations = have_summary ? -(double)sum.iterations_used : 0.0,
            .exec_failed_rank = c->exec_failure[0] ? (double)c->rank + 1.0 : 0.0,
            .neg_staging = -(double)staging,
        },
    };
    if (!ub_comm_agree_buffers(c))
        cannot_take_part(c, "cannot allocate the agreement buffers");
    double *maxv = c->agree_host, *sumv = c->agree_host + UB_AGREE_MAX_LEN;
    ub_agree_encode(&local, maxv, sumv);
    ub_rank_local mine;
    bool have_mine = have_summary && measure_local(c, &sum, &mine);
    if (have_summary)
        ub_summary_free(&sum);
    /* Two collectives of constant sizes, back to back, nothing read in between: inside a group
     * NCCL launches them at the outermost ncclGroupEnd, so nothing may wait for them here. */
    double *dmax = c->agree_dev, *dsum = dmax + UB_AGREE_MAX_LEN;
    cudaStream_t s = c->tm.agree ? c->tm.agree : NULL;
    if (!s && UB_CUDA(ub_cuda.cudaStreamCreateWithPriority(&c->tm.agree, cudaStreamNonBlocking, 0)) == cudaSuccess)
        s = c->tm.agree;
    if (!s)
        cannot_take_part(c, "cannot create the private stream");
    if (UB_CUDA(ub_cuda.cudaMemcpyAsync(dmax, maxv, (size_t)(UB_AGREE_MAX_LEN + UB_AGREE_SUM_LEN) * sizeof(double),
                                cudaMemcpyHostToDevice, s)) != cudaSuccess)
        cannot_take_part(c, "cudaMemcpyAsync of the agreement vectors failed");
    if (UB_NCCL(ub_nccl.AllReduce(dmax, dmax, UB_AGREE_MAX_LEN, ncclFloat64, ncclMax, c->handle, s)) != ncclSuccess ||
        UB_NCCL(ub_nccl.AllReduce(dsum, dsum, UB_AGREE_SUM_LEN, ncclFloat64, ncclSum, c->handle, s)) != ncclSuccess)
        cannot_take_part(c, "ncclAllReduce of the agreement vectors failed");
    ub_inside--;
    ub_state_lock();
    c->issuing_agreement = false;
    memcpy(c->report.warmup_used, used_bits, sizeof used_bits);
    if (have_mine)
        ub_comm_report_set_local(&c->report, &mine);
    if (atomic_load(&c->ending)) {
        /* Aborted while the collectives went out without the lock: nothing will read them, and
         * the abort left the warm-up's resources to this thread. */
        ub_comm_stop_profiling(c);
        return;
    }
    c->agree_issued = true;
    atomic_fetch_add(&agree_unread, 1);
    ub_comm_stop_watching(c);
    ub_debug("communicator %d: agreement issued at call %llu%s", c->index, (unsigned long long)c->agree_at,
             ub_thread_in_group() ? " inside a group (copied back at its ncclGroupEnd)" : "");
    if (ub_thread_in_group()) {
        /* Work enqueued on the private stream now would run before the collectives' launch. */
        c->agree_copy_pending = true;
        c->agree_thread = (unsigned long)pthread_self();
        if (!ub_group_after_launch(copy_back_after_launch, &c, sizeof c))
            cannot_take_part(c, "no room to queue the agreement's copy back after the group's launch");
    } else {
        ub_comm_agree_copy_back(c);
    }
}

void ub_comm_agree_copy_back(ub_comm *c)
{
    c->agree_copy_pending = false;
    ub_inside++;
    cudaStream_t s = c->tm.agree;
    size_t bytes = (size_t)(UB_AGREE_MAX_LEN + UB_AGREE_SUM_LEN) * sizeof(double);
    if (UB_CUDA(ub_cuda.cudaMemcpyAsync(c->agree_host, c->agree_dev, bytes, cudaMemcpyDeviceToHost, s)) != cudaSuccess ||
        UB_CUDA(ub_cuda.cudaEventRecord(c->agree_done, s)) != cudaSuccess)
        cannot_take_part(c, "cannot copy the agreement's result back");
    ub_inside--;
}

/* The runtime's limits on what the planner may produce: cuts aligned for NCCL, merged blocks that
 * fit the staging buffer every rank holds (agreed; USBYTE_STAGING_MB at most; none: a limit no
 * merged block can meet). */
static void set_limits(const ub_comm *c, ub_profile *p)
{
    p->align = (uint64_t)ub_cfg.align;
    p->staging_max = c->staging_agreed > 0 ? c->staging_agreed : 1;
}

/* Every policy on the agreed profile, and the chosen one under the other completion semantics
 * (the report says what USBYTE_COMPLETION=call would gain), computed without the global lock:
 * `best` may search for a while, and other threads' hooks (a watchdog's) must not wait for it.
 * The communicator stays in AGREE meanwhile; false when another thread ended it (an abort). */
static bool plan_unlocked(ub_comm *c, const ub_agreed *a, bool stream_sem)
{
    ub_comm_report *r = &c->report;
    ub_profile other;
    bool have_other = ub_derive_profile(a, c->rec.bytes, c->rec.dtype, c->rec.op, !stream_sem, &other, NULL) == 0;
    if (have_other)
        set_limits(c, &other);
    int chosen = ub_cfg.policy;
    double iters[UB_POLICY_COUNT];
    ub_plan plan, plan_other;
    ub_plan_init(&plan, ub_policy_name((ub_policy_id)chosen));
    ub_plan_init(&plan_other, ub_policy_name((ub_policy_id)chosen));
    ub_state_unlock();
    int rc = ub_plan_all(&r->profile, chosen, iters, &plan);
    double t_other = have_other && ub_policy_run((ub_policy_id)chosen, &other, &plan_other) == 0 ? plan_other.iteration : NAN;
    ub_state_lock();
    ub_plan_free(&plan_other);
    if (have_other)
        ub_profile_free(&other);
    if (c->state != UB_COMM_AGREE) {
        ub_plan_free(&plan);
        return false;
    }
    r->chosen = chosen;
    ub_plan_free(&r->plan);
    r->plan = plan;
    for (int id = 0; id < UB_POLICY_COUNT; id++)
        r->policy_iteration[id] = iters[id];
    r->have_plans = true; /* a failed chosen policy leaves an empty plan: the validation refuses it */
    (void)rc;
    ub_sched_rt *s = &c->sched;
    s->predicted_iteration = iters[chosen];
    s->predicted_wfbp = iters[UB_POLICY_WFBP];
    s->predicted_other_completion = t_other;
    s->completion_note[0] = '\0';
    if (ub_cfg.completion == UB_COMPLETION_CALL && stream_sem)
        snprintf(s->completion_note, sizeof s->completion_note,
                 "USBYTE_COMPLETION=call refused: some allreduce had no event recorded right after it, so a consumer "
                 "may rely on stream order; stream completion is used");
    else if (stream_sem && t_other < 0.99 * s->predicted_iteration)
        snprintf(s->completion_note, sizeof s->completion_note,
                 "USBYTE_COMPLETION=call would predict %.3f ms (%.2fx over this plan): correct only if the framework "
                 "waits on each call's own event before touching its data", 1e3 * t_other, s->predicted_iteration / t_other);
    return true;
}

/* Schedule mode: a schedulable communicator gets its executor now (the plan runs from call
 * agree_at + period); any other stays in pass-through, saying why.  Both outcomes are the same
 * on every rank (agreed numbers, a pure planner); a rank that cannot set up the executor cannot
 * follow the others and stops the job. */
static void prepare_schedule(ub_comm *c)
{
    ub_comm_report *r = &c->report;
    char why[300];
    if (!r->have_plans || !r->schedulable) {
        /* The reasons are the verdict's (each said once, in full): the state only points there. */
        ub_comm_set_state(c, UB_COMM_PASS_THROUGH, r->have_plans ? "not schedulable (the verdict says why)"
                                                                   : "not schedulable: no plan");
        return;
    }
    /* A plan that gains little is not worth deferring every call (its host cost, its risk): the
     * same decision on every rank (agreed numbers, agreed threshold). */
    double gain = c->sched.predicted_wfbp / c->sched.predicted_iteration;
    if (!(gain >= 1.0 + ub_cfg.min_gain_pct / 100.0)) {
        snprintf(why, sizeof why, "the plan is predicted %.2fx over wfbp, below USBYTE_MIN_GAIN_PCT=%d%%: "
                 "not re-scheduled", gain, ub_cfg.min_gain_pct);
        ub_comm_set_state(c, UB_COMM_PASS_THROUGH, why);
        return;
    }
    char err[256];
    if (ub_plan_validate(&r->profile, &r->plan, err, sizeof err) != 0) {
        snprintf(why, sizeof why, "the chosen plan is invalid (a planner bug): %s", err);
        ub_error("communicator %d: %s", c->index, why);
        ub_comm_set_state(c, UB_COMM_PASS_THROUGH, why);
        return;
    }
    if (ub_sched_prepare(c, &r->plan, c->sched.stream_semantics, why, sizeof why) != 0)
        cannot_take_part(c, why);
}

/* Waits for the agreement's completion, polling (a peer may be gone), until it is there, another
 * thread ends the communicator (a watchdog's abort), or, when `limited`, USBYTE_HANG_S pass;
 * says every USBYTE_HANG_S what it waits for. */
static cudaError_t wait_agreement(ub_comm *c, cudaEvent_t done, bool limited)
{
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long ns = 20000;
    double next_line = ub_cfg.hang_s, next_ask = 0.0;
    for (;;) {
        cudaError_t e = UB_CUDA(ub_cuda.cudaEventQuery(done));
        if (e != cudaErrorNotReady || atomic_load(&c->ending))
            return e;
        clock_gettime(CLOCK_MONOTONIC, &now);
        double waited = (double)(now.tv_sec - t0.tv_sec) + 1e-9 * (double)(now.tv_nsec - t0.tv_nsec);
        /* A peer gone never completes it: NCCL's asynchronous error says so (a few times a second). */
        if (waited >= next_ask) {
            next_ask = waited + 0.2;
            ncclResult_t a = ub_comm_async_error(c->handle);
            if (a != ncclSuccess) {
                atomic_store(&c->peer_error, (int)a);
                return cudaErrorNotReady;
            }
        }
        if (limited && waited > ub_cfg.hang_s)
            return cudaErrorNotReady;
        if (waited > next_line) {
            ub_warn("communicator %d: waiting %.0f s for the agreement issued at call %llu (a rank behind or gone?): "
                    "the plan starts at call %llu on every rank, which needs it; an abort of the communicator "
                    "releases this wait", c->index, waited, (unsigned long long)c->agree_at,
                    (unsigned long long)(c->agree_at + c->period));
            next_line += ub_cfg.hang_s;
        }
        struct timespec pause = {0, ns};
        nanosleep(&pause, NULL);
        if (ns < 1000000)
            ns *= 2;
    }
}

void ub_comm_agree_read(ub_comm *c, ub_agree_wait how)
{
    if (c->state != UB_COMM_AGREE || !c->agree_issued || c->agree_copy_pending)
        return;
    cudaError_t e;
    bool block = how != UB_AGREE_POLL;
    if (block) {
        /* Not under the lock: other threads' hooks must not wait for the other ranks. */
        cudaEvent_t done = c->agree_done; /* an abort meanwhile clears the field, not the event */
        ub_state_unlock();
        e = wait_agreement(c, done, how == UB_AGREE_WAIT_OR_GIVE_UP);
        ub_state_lock();
        if (c->state != UB_COMM_AGREE)
            return;
    } else {
        e = UB_CUDA(ub_cuda.cudaEventQuery(c->agree_done));
        if (e == cudaErrorNotReady)
            return;
    }
    ub_comm_agree_abandon(c);
    ub_debug("communicator %d: agreement read%s", c->index,
             how == UB_AGREE_WAIT_OR_GIVE_UP ? " before the communicator's destroy"
             : how == UB_AGREE_WAIT          ? " at the switch to the plan" : "");
    ub_comm_report *r = &c->report;
    ub_agreed agreed;
    ub_agree_outcome outcome = UB_AGREE_NOMEM;
    const char *failure = NULL;
    char why[400], *mismatch = NULL;
    if (atomic_load(&c->peer_error) != ncclSuccess) {
        failure = "the agreement cannot complete: NCCL reports an asynchronous error (a peer gone)";
    } else if (e == cudaErrorNotReady) {
        failure = "the agreement did not complete within USBYTE_HANG_S (a rank gone?)";
    } else if (e != cudaSuccess) {
        failure = "the agreement's result could not be read";
    } else {
        outcome = ub_agree_decode(c->agree_host, c->agree_host + UB_AGREE_MAX_LEN, &agreed);
        if (outcome == UB_AGREE_RANK_FAILED && c->local_failure[0]) {
            snprintf(why, sizeof why, "%s (on this rank: %s)", ub_agree_outcome_reason(outcome), c->local_failure);
            failure = why;
        } else if (outcome == UB_AGREE_MISMATCH) {
            /* What differs, in full: the call sequence, the version, each setting. */
            size_t need = ub_agree_mismatch_text(c->agree_host, why, sizeof why) + 1;
            failure = why;
            if (need > sizeof why && (mismatch = malloc(need)) != NULL) {
                ub_agree_mismatch_text(c->agree_host, mismatch, need);
                failure = mismatch;
            }
        } else if (outcome != UB_AGREE_OK) {
            failure = ub_agree_outcome_reason(outcome);
        } else if (agreed.flags.exec_failed_rank > 0.5) {
            int who = (int)(agreed.flags.exec_failed_rank + 0.5) - 1;
            if (who == c->rank && c->exec_failure[0])
                snprintf(why, sizeof why, "rank %d (this rank) %s before the agreement", who, c->exec_failure);
            else
                snprintf(why, sizeof why, "rank %d could not set up schedule mode's executor before the agreement "
                         "(its report says why)", who);
            failure = why;
        } else if (-agreed.flags.neg_iterations < 0.5 && agreed.flags.period_refuted <= 0 &&
                   ++c->agree_tries > UB_MAX_AGREE_TRIES) {
            snprintf(why, sizeof why, "no warm-up iteration had all its timing events complete on every rank, %d "
                     "iterations after the warm-up (the device far behind the host)", UB_MAX_AGREE_TRIES + 1);
            failure = why;
        }
    }
    /* Some rank contributed no iteration (none had completed when the agreement went out: the
     * device behind the host): every rank issues the agreement again, with the same warm-up and
     * whatever more of its timing has completed by then, at call agree_at + period, where the
     * switch was to be, as the agreed numbers say (lifecycle.c).  A refuted period needs no timing:
     * detection restarts instead, as below. */
    if (!failure && -agreed.flags.neg_iterations < 0.5 && agreed.flags.period_refuted <= 0) {
        ub_agreed_free(&agreed);
        c->agree_again = true;
        c->state = UB_COMM_PLANNED;
        snprintf(c->reason, sizeof c->reason, "no warm-up iteration had completed on some rank when the agreement "
                 "was issued: issued again one iteration later (try %d)", c->agree_tries + 1);
        ub_debug("communicator %d: %s", c->index, c->reason);
        r->state = ub_comm_state_name(c->state);
        snprintf(r->state_reason, sizeof r->state_reason, "%s", c->reason);
        return;
    }

    r->rank = c->rank;
    r->nranks = c->nranks;
    r->calls_per_iteration = c->n_ar;
    r->nccl_calls_per_iteration = c->period;
    r->warmup = ub_cfg.warmup;
    r->other_calls = c->other_calls;
    r->end_records = c->end_records;
    r->consumers_stream = c->consumers_stream;
    r->consumers_host = c->consumers_host;
    r->consumers_host_other = c->consumers_host_other;
    snprintf(r->stream_ordered_example, sizeof r->stream_ordered_example, "%s", c->stream_ordered_example);
    if (failure) {
        r->schedulable = false;
        ub_comm_report_clear_reasons(r);
        ub_comm_report_add_reason(r, "%s", failure);
        ub_comm_stop_profiling(c);
        c->state = UB_COMM_PASS_THROUGH;
        /* The state's reason is short; the verdict's reason holds the whole text. */
        if (strlen(failure) < sizeof c->reason)
            snprintf(c->reason, sizeof c->reason, "%s", failure);
        else
            snprintf(c->reason, sizeof c->reason, "the agreement failed (the verdict says why)");
        free(mismatch);
    } else {
        if (ub_log_enabled(UB_LOG_DEBUG))
            for (int k = 0; k < agreed.n_calls; k++)
                ub_debug("communicator %d call %d: ready %.6f need %.6f done %.6f comm %.6f/%.6f%s%s", c->index, k,
                         agreed.calls[k].ready, agreed.calls[k].need, agreed.calls[k].done, agreed.calls[k].comm_min,
                         agreed.calls[k].comm_mean, agreed.calls[k].barrier ? " barrier" : "",
                         agreed.calls[k].fallback ? " fallback" : "");
        /* Per-call completion only where every call had its own end event on every rank. */
        c->staging_agreed = agreed.flags.neg_staging < 0 ? (uint64_t)(-agreed.flags.neg_staging) : 0;
        bool stream_sem = ub_cfg.completion == UB_COMPLETION_STREAM || agreed.flags.missing_own_end > 0;
        c->sched.stream_semantics = stream_sem;
        if (r->have_profile)
            ub_profile_free(&r->profile);
        r->have_profile = false;
        if (ub_derive_profile(&agreed, c->rec.bytes, c->rec.dtype, c->rec.op, stream_sem, &r->profile, &r->fit) == 0) {
            r->have_profile = true;
            set_limits(c, &r->profile);
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
        if (r->have_profile && !plan_unlocked(c, &agreed, stream_sem)) {
            ub_agreed_free(&agreed);
            return; /* ended by another thread (an abort) while planning */
        }
        /* Locked mid-backward (after a re-detection the lock falls anywhere): the agreed
         * profile says where the iteration really begins; it is profiled again from there. */
        c->phase_pos = 0;
        int first = r->have_profile && !c->rephased ? ub_iteration_phase(&r->profile, agreed.iteration) : 0;
        for (uint32_t p = 0; first > 0 && p < c->period; p++)
            if (c->pos_call[p] == first) {
                c->phase_pos = p;
                break;
            }
        /* What schedule mode needs of the warm-up outlives it. */
        free(c->sched.pos_sig);
        free(c->sched.pos_call);
        c->sched.pos_sig = c->pos_sig;
        c->sched.pos_call = c->pos_call;
        c->sched.period = c->period;
        c->pos_sig = NULL;
        c->pos_call = NULL;
        ub_comm_stop_profiling(c);
        c->state = UB_COMM_PLANNED;
        c->reason[0] = '\0';
        c->refuted = agreed.flags.period_refuted > 0;
        c->addr_period = agreed.flags.addr_period == -agreed.flags.neg_addr_period ? (uint32_t)agreed.flags.addr_period : 0;
        if (ub_cfg.mode == UB_MODE_SCHEDULE && !c->refuted && c->phase_pos == 0)
            prepare_schedule(c);
        ub_agreed_free(&agreed);
    }
    r->state = ub_comm_state_name(c->state);
    snprintf(r->state_reason, sizeof r->state_reason, "%s", c->reason);
    summary_line(c);
    ub_state_write_reports(true);
}

/* The process's command line, each argument quoted when it holds a blank or a quote (read once;
 * "" when /proc is not there). */
static const char *command_line(void)
{
    static char *text;
    if (text)
        return text;
    FILE *f = fopen("/proc/self/cmdline", "rb");
    char *raw = NULL;
    size_t n = 0, cap = 0;
    int ch;
    while (f && (ch = fgetc(f)) != EOF) {
        if (n + 1 >= cap) {
            char *p = realloc(raw, cap = cap ? 2 * cap : 256);
            if (!p)
                break;
            raw = p;
        }
        raw[n++] = (char)ch;
    }
    if (f)
        fclose(f);
    size_t len = 0;
    char *out = malloc(3 * n + 3);  /* every byte quoted at worst */
    for (size_t i = 0; out && raw && i < n;) {
        const char *arg = raw + i;
        size_t a = strnlen(arg, n - i);
        bool quote = a == 0 || strpbrk(arg, " \t'\"\\$`") != NULL;
        if (len)
            out[len++] = ' ';
        if (quote)
            out[len++] = '\'';
        for (size_t k = 0; k < a; k++) {
            if (quote && arg[k] == '\'') { /* 'it'\''s' */
                memcpy(out + len, "'\\''", 4);
                len += 4;
            } else {
                out[len++] = arg[k];
            }
        }
        if (quote)
            out[len++] = '\'';
        i += a + 1;
    }
    if (out)
        out[len] = '\0';
    free(raw);
    text = out ? out : (char *)"";
    return text;
}

/* Schedule mode's measurements beyond defer.c's: the spread of this rank's steady iterations
 * (consecutive starts within one run, each run's first interval skipped, as the measured
 * iteration) and the recording of the timed iterations' blocks on the host's wall clock. */
static void add_schedule_recording(ub_comm *c, json_t *sj)
{
    ub_sched_rt *s = &c->sched;
    double *len = malloc((size_t)(s->n_starts > 0 ? s->n_starts : 1) * sizeof *len);
    if (!len)
        return;
    int n = 0;
    for (int i = 2; i < s->n_starts; i++)
        if (s->run_of[i] == s->run_of[i - 1] && s->run_of[i - 1] == s->run_of[i - 2])
            len[n++] = s->iter_start[i] - s->iter_start[i - 1];
    ub_spread sp = ub_spread_of(len, n);
    free(len);
    json_object_set_new(sj, "iteration_spread", ub_spread_json(&sp));
    if (s->measured_iter < 0 || !s->block_start || !isfinite(s->tm.epoch_unix))
        return;
    json_t *its = json_array();
    int nb = s->sp.n_blocks;
    for (int slot = 0; slot < UB_SCHED_TRACED && s->measured_iter + slot < s->n_starts; slot++) {
        int i = s->measured_iter + slot;
        json_t *blocks = json_array();
        bool any = false;
        for (int b = 0; b < nb; b++) {
            double t0 = s->block_start[slot * nb + b], t1 = s->block_end[slot * nb + b];
            any |= isfinite(t0) && isfinite(t1);
            json_array_append_new(blocks, json_pack("[o, o]", isfinite(t0) ? json_real(t0) : json_null(),
                                                    isfinite(t1) ? json_real(t1) : json_null()));
        }
        if (!any || !isfinite(s->iter_start[i])) {
            json_decref(blocks);
            continue;
        }
        json_array_append_new(its, json_pack("{s:i, s:i, s:f, s:o}", "iteration", i, "run", s->run_of[i], "start",
                                             s->iter_start[i], "blocks", blocks));
    }
    json_object_set_new(sj, "recording", json_pack("{s:s, s:f, s:s, s:o}", "clock", "CLOCK_REALTIME", "origin",
                                                   s->tm.epoch_unix, "times_are",
                                                   "seconds from origin; blocks in plan order, [start, end] on the "
                                                   "private stream", "iterations", its));
}

void ub_state_write_reports(bool unlock_for_io)
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
    char host[256] = "unknown-host";
    gethostname(host, sizeof host - 1);
    pthread_mutex_lock(&versions_mutex);
    ub_versions vers = versions;
    char gpu[sizeof gpu_name];
    memcpy(gpu, gpu_name, sizeof gpu);
    int device = gpu_device;
    pthread_mutex_unlock(&versions_mutex);
    ub_run_info run = {.started = ub_started_unix > 0 ? ub_started_unix : NAN, .host = host, .pid = (long)getpid(),
                       .command = command_line(), .gpu = gpu[0] ? gpu : NULL, .device = device};
    /* A refused value is still in the environment: the report shows what was given. */
    for (int id = 0; id < UB_CFG_COUNT && run.n_ignored < 32; id++)
        if (ub_cfg.source[id] == UB_SRC_FALLBACK) {
            run.ignored_name[run.n_ignored] = ub_config_name((ub_config_id)id);
            run.ignored_value[run.n_ignored++] = getenv(ub_config_name((ub_config_id)id));
        }
    json_t *doc = ub_report_json(rank, world, &ub_cfg, &vers, &run, reps, n);
    /* Schedule mode's measurements, per communicator that ran a plan. */
    json_t *jcomms = doc ? json_object_get(doc, "comms") : NULL;
    for (int i = 0; jcomms && i < n && i < (int)json_array_size(jcomms); i++) {
        json_t *sj = ub_sched_report_json(all[i]);
        if (sj) {
            add_schedule_recording(all[i], sj);
            json_object_set_new(json_array_get(jcomms, (size_t)i), "schedule", sj);
        }
    }
    /* The "not profiled yet" reason is for this snapshot only. */
    for (int i = 0; i < n; i++)
        if (!all[i]->report.have_plans && all[i]->report.n_reasons == 1 &&
            strncmp(all[i]->report.reasons[0], "not profiled yet", 16) == 0)
            ub_comm_report_clear_reasons(&all[i]->report);
    free(reps);
    /* The file itself is written without the global lock (an fsync may take a while; other
     * threads' hooks must not wait for it), one writer at a time, and a failure is said once
     * per distinct reason (not again at exit). */
    static pthread_mutex_t io_mutex = PTHREAD_MUTEX_INITIALIZER;
    static char last_error[1400];
    if (unlock_for_io)
        ub_state_unlock();
    pthread_mutex_lock(&io_mutex);
    char path[1100], err[1300], line[1400] = "";
    /* Several ranks, one file: said once, by rank 0 (changes nothing that is issued). */
    static bool said_no_rank;
    if (!said_no_rank && rank == 0 && world > 1 && !strstr(ub_cfg.report, "%r") && !strstr(ub_cfg.report, "%p")) {
        ub_warn("USBYTE_REPORT \"%s\" has no %%r: the %d ranks write one file and the last one wins (add %%r for one "
                "report per rank)", ub_cfg.report, world);
        said_no_rank = true;
    }
    if (ub_expand_report_path(ub_cfg.report, rank, (long)getpid(), host, path, sizeof path) != 0)
        snprintf(line, sizeof line, "report path: %s", path);
    else if (!doc || ub_report_write(path, doc, err, sizeof err) != 0)
        snprintf(line, sizeof line, "report: %s", doc ? err : "out of memory");
    else
        ub_debug("report written to %s", path);
    /* A directory found missing or read-only at start-up was said then, naming it. */
    if (line[0] && strcmp(line, last_error) != 0 && !atomic_load(&ub_report_dir_bad))
        ub_error("%s", line);
    snprintf(last_error, sizeof last_error, "%s", line);
    pthread_mutex_unlock(&io_mutex);
    if (unlock_for_io)
        ub_state_lock();
    json_decref(doc);
}
