/* Schedule mode's calibration (see calibrate.h).  What is issued depends only on the agreed
 * profile and plan (the probe sizes) and on call indices derived from agree_at and the period;
 * the probes' times are rank-local and enter only through the agreed vector. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate.h"
#include "capture.h"
#include "collwait.h"
#include "cuda_list.h"
#include "decide.h"
#include "device.h"
#include "globals.h"
#include "group.h"
#include "guard.h"
#include "log.h"
#include "nccl_list.h"
#include "state.h"
#include "tables.h"
#include "usbyte/policy.h"

static void free_calls(ub_calib_rt *k)
{
    free(k->bytes);
    free(k->dtype);
    free(k->op);
    k->bytes = NULL;
    k->dtype = k->op = NULL;
    k->cap_calls = 0;
}

int ub_calib_reserve(ub_comm *c, char *why, size_t len)
{
    ub_calib_rt *k = &c->calib;
    if (!ub_cfg.calibrate)
        return 0;
    bool ok = true;
    if (!k->reserved) {
        int previous = ub_device_enter(c->device);
        for (int i = 0; i < UB_CALIB_MARKS && ok; i++)
            ok = k->marks[i] || UB_CUDA(ub_cuda.cudaEventCreateWithFlags(&k->marks[i], cudaEventDefault)) == cudaSuccess;
        ub_device_leave(previous);
        ok = ok && ub_coll_buffers(c->device, UB_CALIB_LEN * sizeof(double), &k->host, &k->dev, &k->done);
    }
    /* A later agreement (a longer period found after a shorter one) has more calls: the tables grow. */
    if (ok && c->n_ar > k->cap_calls) {
        free_calls(k);
        k->bytes = malloc((size_t)c->n_ar * sizeof *k->bytes);
        k->dtype = malloc((size_t)c->n_ar * sizeof *k->dtype);
        k->op = malloc((size_t)c->n_ar * sizeof *k->op);
        ok = k->bytes && k->dtype && k->op;
        k->cap_calls = ok ? c->n_ar : 0;
    }
    if (!ok) {
        snprintf(why, len, "cannot set up calibration's timing events and buffers");
        return -1;
    }
    k->reserved = true;
    return 0;
}

bool ub_calib_hold(ub_comm *c, ub_agreed *agreed, bool stream_sem, ub_transition *failed)
{
    ub_calib_rt *k = &c->calib;
    ub_comm_report *r = &c->report;
    k->stage = UB_CALIB_IDLE;
    /* Agreed data only (the setting, the verdict, the plan): every rank decides the same.  Every
     * probe fits the staging buffer of every rank (the profile's limit is their least). */
    if (!ub_cfg.calibrate || !r->have_plans || !r->schedulable)
        return false;
    uint64_t sizes[UB_CALIB_MAX_PROBES];
    int n = ub_calib_probe_sizes(&r->profile, &r->plan, sizes);
    if (n <= 0)
        return false;
    /* The calls' kinds for the re-plan, in the tables reserved before the agreement (the agreed
     * calls are this rank's warm-up calls: the sequence hash matched). */
    if (!k->reserved || r->profile.n_calls > k->cap_calls) {
        *failed = ub_fail(ncclInternalError, "calibration's tables are missing");
        return true; /* nothing more is decided: the communicator fails */
    }
    for (int i = 0; i < r->profile.n_calls; i++) {
        k->bytes[i] = r->profile.calls[i].bytes;
        k->dtype[i] = (int)r->profile.calls[i].dtype;
        k->op[i] = (int)r->profile.calls[i].op;
    }
    k->n = n;
    memcpy(k->sizes, sizes, sizeof sizes);
    ub_agreed_free(&k->agreed);
    k->agreed = *agreed;
    memset(agreed, 0, sizeof *agreed);
    k->stream_sem = stream_sem;
    k->stage = UB_CALIB_WANTED;
    k->next_call = c->agree_at + c->period;
    ub_debug("communicator %d: the plan issues sizes the calls do not show: %d probe sizes at call %llu", c->index, n,
             (unsigned long long)k->next_call);
    ub_calib_report *rep = &k->report;
    memset(rep, 0, sizeof *rep);
    rep->present = true;
    rep->n = n;
    rep->repeats = UB_CALIB_REPEATS;
    memcpy(rep->sizes, sizes, sizeof sizes);
    for (int i = 0; i < UB_CALIB_MAX_PROBES; i++)
        rep->seconds[i] = rep->spread[i] = NAN;
    rep->probe_call = rep->agree_call = rep->apply_call = -1;
    rep->series_seconds = rep->predicted_after = NAN;
    snprintf(rep->policy_before, sizeof rep->policy_before, "%s", ub_policy_name((ub_policy_id)r->chosen));
    rep->predicted_before = r->policy_iteration[r->chosen];
    return true;
}

bool ub_calib_due(const ub_comm *c, uint64_t call)
{
    return c->calib.stage != UB_CALIB_IDLE && call == c->calib.next_call;
}

/* A rank that cannot issue what every rank issues at this call cannot follow the others (r: the
 * refusal, NCCL's or a CUDA one). */
static void cannot_issue(ub_comm *c, ncclResult_t r, const char *what) UB_REQUIRES(ub_state_mutex)
{
    char why[200];
    snprintf(why, sizeof why, "cannot issue calibration's %s (%s; USBYTE_CALIBRATE=0 runs without calibration)", what,
             ub_nccl_result_name(r));
    ub_comm_cannot_take_part(c, r, why);
}

/* NCCL's refusal, or ncclUnhandledCudaError for a CUDA one. */
static ncclResult_t cuda_refused(cudaError_t e) { return e == cudaSuccess ? ncclSuccess : ncclUnhandledCudaError; }

/* Probe sizes in float elements: every size is a power of 4 of at least 64 KiB. */
static size_t probe_count(uint64_t bytes) { return (size_t)(bytes / sizeof(float)); }

/* Enqueued on the private stream: one untimed probe (the ranks arrive at different times: it
 * absorbs that), then each size in turn, UB_CALIB_REPEATS rounds, a timing mark after each, all
 * in place in the staging buffer (nothing of the application's is touched).  Inside the
 * application's group the group is ended and reopened around them, so that they are launched
 * here and the marks fall between them. */
static void issue_probes(ub_comm *c, ub_calib_rt *k) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    cudaStream_t p = c->sched.priv;
    void *stage = c->sched.staging;
    int depth = ub_thread_group_depth();
    int n = k->n;
    uint64_t sizes[UB_CALIB_MAX_PROBES];
    memcpy(sizes, k->sizes, sizeof sizes);
    cudaEvent_t marks[UB_CALIB_MARKS];
    memcpy(marks, k->marks, sizeof marks);
    if (!k->reserved || !stage || !p) {
        cannot_issue(c, ncclInternalError, "probes: their events or the staging buffer are missing");
        return;
    }
    k->in_flight = true;
    /* Read under the lock (an abort clears it); an abort from another thread lets the calls
     * below return before NCCL frees the communicator (lifecycle.c). */
    ncclComm_t handle = c->handle;
    atomic_fetch_add(&k->issuing, 1);
    ub_state_unlock();
    if (depth > 0)
        ub_group_split_begin(depth);
    ncclResult_t r = ncclSuccess;
    if (!atomic_load(&c->aborted) &&
        (r = UB_NCCL(ub_nccl.AllReduce(stage, stage, probe_count(sizes[0]), ncclFloat32, ncclSum, handle, p))) ==
            ncclSuccess)
        r = cuda_refused(UB_CUDA(ub_cuda.cudaEventRecord(marks[0], p)));
    for (int rep = 0; r == ncclSuccess && !atomic_load(&c->aborted) && rep < UB_CALIB_REPEATS; rep++)
        for (int i = 0; r == ncclSuccess && i < n; i++)
            if ((r = UB_NCCL(ub_nccl.AllReduce(stage, stage, probe_count(sizes[i]), ncclFloat32, ncclSum, handle,
                                                p))) == ncclSuccess)
                r = cuda_refused(UB_CUDA(ub_cuda.cudaEventRecord(marks[1 + rep * n + i], p)));
    if (depth > 0)
        ub_group_split_end(depth);
    ub_state_lock();
    atomic_fetch_sub(&k->issuing, 1);
    if (r != ncclSuccess)
        cannot_issue(c, r, "probes");
}

/* The probes' times (waited for by polling without the lock: issued an iteration ago), into this
 * rank's vector in host, then the vector's in-place allreduce(max), its copy back and completion
 * event on the private stream. */
static void issue_vector(ub_comm *c, ub_calib_rt *k) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    int n = k->n;
    cudaEvent_t marks[UB_CALIB_MARKS];
    memcpy(marks, k->marks, sizeof marks);
    cudaStream_t p = c->sched.priv;
    double *host = k->host;
    void *dev = k->dev;
    cudaEvent_t done = k->done;
    int depth = ub_thread_group_depth();
    ncclComm_t handle = c->handle; /* as in issue_probes */
    atomic_fetch_add(&k->issuing, 1);
    ub_state_unlock();
    cudaError_t e = ub_comm_wait_done(c, marks[UB_CALIB_REPEATS * n], false, "calibration's probes",
                                      "every rank agrees on their times at this call");
    double seconds[UB_CALIB_MAX_PROBES * UB_CALIB_REPEATS];
    double series = 0;
    for (int j = 0; j < UB_CALIB_REPEATS * n; j++) {
        float ms = 0;
        bool timed = e == cudaSuccess && UB_CUDA(ub_cuda.cudaEventElapsedTime(&ms, marks[j], marks[j + 1])) == cudaSuccess;
        seconds[j] = timed ? 1e-3 * (double)ms : NAN;
        series += seconds[j];
    }
    ub_calib_encode(seconds, n, UB_CALIB_REPEATS, host);
    if (depth > 0)
        ub_group_split_begin(depth);
    size_t bytes = UB_CALIB_LEN * sizeof(double);
    ncclResult_t r = ncclSuccess;
    if (!atomic_load(&c->aborted) &&
        (r = cuda_refused(UB_CUDA(ub_cuda.cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, p)))) == ncclSuccess &&
        (r = UB_NCCL(ub_nccl.AllReduce(dev, dev, UB_CALIB_LEN, ncclFloat64, ncclMax, handle, p))) == ncclSuccess &&
        (r = cuda_refused(UB_CUDA(ub_cuda.cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, p)))) == ncclSuccess)
        r = cuda_refused(UB_CUDA(ub_cuda.cudaEventRecord(done, p)));
    if (depth > 0)
        ub_group_split_end(depth);
    ub_state_lock();
    atomic_fetch_sub(&k->issuing, 1);
    if (r != ncclSuccess) {
        cannot_issue(c, r, "agreement of the probes' times");
        return;
    }
    k->report.series_seconds = series;
    for (int i = 0; i < n; i++) {
        double lo = INFINITY, hi = -INFINITY;
        for (int r = 0; r < UB_CALIB_REPEATS; r++) {
            lo = fmin(lo, seconds[r * n + i]);
            hi = fmax(hi, seconds[r * n + i]);
        }
        k->report.spread[i] = lo > 0 && isfinite(hi) ? (hi - lo) / lo : NAN;
    }
    if (ub_log_enabled(UB_LOG_DEBUG))
        for (int j = 0; j < UB_CALIB_REPEATS * n; j++)
            ub_debug("communicator %d: calibration probe of %llu bytes, repeat %d: %.6f s", c->index,
                     (unsigned long long)k->sizes[j % n], j / n, seconds[j]);
}

/* The agreed times (polled for without the lock) and the re-plan on the calls' samples and the
 * probes'; false when the communicator ended meanwhile. */
static bool replan(ub_comm *c, ub_calib_rt *k) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    cudaEvent_t done = k->done;
    ub_state_unlock();
    cudaError_t e = ub_comm_wait_done(c, done, false, "calibration's agreed times", "the plan is decided at this call");
    ub_state_lock();
    k->in_flight = false;
    if (atomic_load(&c->ending) || c->state != UB_COMM_PLANNED)
        return false;
    ub_calib_report *rep = &k->report;
    double seconds[UB_CALIB_MAX_PROBES];
    /* A vector that cannot be read here is a peer gone or an abort (the caller returns that). */
    rep->agreed = e == cudaSuccess && ub_calib_decode(k->host, k->n, seconds);
    ub_plan before;
    ub_plan_init(&before, c->report.plan.policy);
    ub_plan_copy(&before, &c->report.plan);
    if (rep->agreed) {
        ub_fit_sample extra[UB_CALIB_MAX_PROBES];
        for (int i = 0; i < k->n; i++) {
            rep->seconds[i] = seconds[i];
            extra[i] = (ub_fit_sample){(double)k->sizes[i], seconds[i]};
        }
        ub_agreed held = k->agreed;
        memset(&k->agreed, 0, sizeof k->agreed);
        ub_call_kinds calls = {k->bytes, k->dtype, k->op};
        bool ended = !ub_comm_decide(c, &held, &calls, k->stream_sem, extra, k->n);
        ub_agreed_free(&held);
        if (ended) {
            ub_plan_free(&before);
            return false;
        }
        ub_comm_decision_line(c);
    } else {
        ub_info("communicator %d: calibration's times could not be agreed (some rank did not time every probe): "
                "the plan made on the calls' samples runs", c->index);
    }
    ub_agreed_free(&k->agreed);
    rep->plan_changed = !ub_plan_same_blocks(&before, &c->report.plan);
    rep->predicted_after = c->report.policy_iteration[c->report.chosen];
    ub_plan_free(&before);
    return true;
}

bool ub_calib_step(ub_comm *c, uint64_t call) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    ub_calib_rt *k = &c->calib;
    ub_debug("communicator %d: calibration step %d at call %llu", c->index, (int)k->stage, (unsigned long long)call);
    switch (k->stage) {
    case UB_CALIB_WANTED:
        k->report.probe_call = (int64_t)call;
        k->stage = UB_CALIB_PROBED;
        k->next_call = call + c->period;
        issue_probes(c, k);
        return false;
    case UB_CALIB_PROBED:
        k->report.agree_call = (int64_t)call;
        k->stage = UB_CALIB_AGREEING;
        k->next_call = call + c->period;
        issue_vector(c, k);
        return false;
    case UB_CALIB_AGREEING:
        k->report.apply_call = (int64_t)call;
        k->stage = UB_CALIB_IDLE;
        return replan(c, k);
    default:
        return false;
    }
}

bool ub_calib_issuing(const ub_comm *c) { return atomic_load(&c->calib.issuing) > 0; }

void ub_calib_end(ub_comm *c, bool abort) UB_REQUIRES_UNLOCKS(ub_state_mutex)
{
    ub_calib_rt *k = &c->calib;
    k->stage = UB_CALIB_IDLE;
    ub_agreed_free(&k->agreed);
    free_calls(k);
    if (abort || !k->reserved)
        return; /* device work may still use them: left to the process's end */
    cudaEvent_t marks[UB_CALIB_MARKS], done = k->done;
    memcpy(marks, k->marks, sizeof marks);
    double *host = k->host;
    void *dev = k->dev;
    bool in_flight = k->in_flight;
    memset(k->marks, 0, sizeof k->marks);
    k->host = NULL;
    k->dev = NULL;
    k->done = NULL;
    k->reserved = false;
    k->in_flight = false;
    ub_state_unlock();
    /* Probes or the vector still queued: they land before their buffers go. */
    if (in_flight) {
        ub_comm_wait_done(c, marks[UB_CALIB_REPEATS * k->n], true, "calibration's probes", "the communicator ends");
        ub_comm_wait_done(c, done, true, "calibration's agreed times", "the communicator ends");
    }
    for (int i = 0; i < UB_CALIB_MARKS; i++)
        if (marks[i])
            UB_CUDA(ub_cuda.cudaEventDestroy(marks[i]));
    ub_coll_buffers_free(host, dev, done);
    ub_state_lock();
}
