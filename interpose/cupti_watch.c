/* Watching the NCCL streams for stream-ordered work during the warm-up (docs/design.md section 3):
 * a CUPTI subscriber to runtime-API callbacks, held while at least one communicator profiles
 * and released afterwards (CUPTI allows one subscriber per process, so we never keep it).
 * libcupti is opened on demand; if it is missing, or another tool holds the subscription,
 * the caller is told why and the communicator is judged not schedulable. */
#include <cupti.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "runtime.h"
#include "state.h"

typedef CUptiResult (*subscribe_fn)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
typedef CUptiResult (*unsubscribe_fn)(CUpti_SubscriberHandle);
typedef CUptiResult (*enable_domain_fn)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain);
typedef CUptiResult (*result_string_fn)(CUptiResult, const char **);

atomic_ullong ub_work_count;

static struct {
    void *lib;
    subscribe_fn subscribe;
    unsubscribe_fn unsubscribe;
    enable_domain_fn enable_domain;
    result_string_fn result_string;
    CUpti_SubscriberHandle sub;
    int holders;
} cupti;

/* The stream of a stream-ordered operation, or NULL when cbid is not one. */
static cudaStream_t work_stream(CUpti_CallbackId cbid, const void *params, const char **what)
{
    switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
        *what = "kernel launch";
        return ((const cudaLaunchKernel_v7000_params *)params)->stream;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000:
        *what = "cudaMemcpyAsync";
        return ((const cudaMemcpyAsync_v3020_params *)params)->stream;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000:
        *what = "cudaMemsetAsync";
        return ((const cudaMemsetAsync_v3020_params *)params)->stream;
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchHostFunc_v10000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchHostFunc_ptsz_v10000:
        *what = "cudaLaunchHostFunc";
        return ((const cudaLaunchHostFunc_v10000_params *)params)->stream;
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamAddCallback_v5000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamAddCallback_ptsz_v7000:
        *what = "cudaStreamAddCallback";
        return ((const cudaStreamAddCallback_v5000_params *)params)->stream;
    default:
        return NULL;
    }
}

static void CUPTIAPI on_callback(void *user, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data)
{
    (void)user;
    if (domain != CUPTI_CB_DOMAIN_RUNTIME_API || ub_inside)
        return;
    const CUpti_CallbackData *cb = data;
    if (cb->callbackSite != CUPTI_API_ENTER || !cb->functionParams)
        return;
    const char *what = NULL;
    cudaStream_t s = work_stream(cbid, cb->functionParams, &what);
    /* Compute (kernels, host functions) separates forward segments; copies do not (DDP copies
     * each bucket back right after waiting for it). */
    if (what && (what[0] == 'k' || strstr(what, "HostFunc") || strstr(what, "Callback")))
        atomic_fetch_add_explicit(&ub_work_count, 1, memory_order_relaxed);
    if (s)
        ub_state_stream_work(s, what);
}

static const char *result_text(CUptiResult r)
{
    const char *s = NULL;
    if (cupti.result_string && cupti.result_string(r, &s) == CUPTI_SUCCESS && s)
        return s;
    return "unknown CUPTI error";
}

/* Called with the state lock held. */
bool ub_cupti_acquire(char *detail, size_t len)
{
    if (cupti.holders > 0) {
        cupti.holders++;
        snprintf(detail, len, "runtime API callbacks during the warm-up");
        return true;
    }
    ub_inside++;
    if (!cupti.lib) {
        cupti.lib = dlopen("libcupti.so.13", RTLD_NOW | RTLD_LOCAL);
        if (!cupti.lib)
            cupti.lib = dlopen("libcupti.so", RTLD_NOW | RTLD_LOCAL);
        if (cupti.lib) {
            cupti.subscribe = (subscribe_fn)dlsym(cupti.lib, "cuptiSubscribe");
            cupti.unsubscribe = (unsubscribe_fn)dlsym(cupti.lib, "cuptiUnsubscribe");
            cupti.enable_domain = (enable_domain_fn)dlsym(cupti.lib, "cuptiEnableDomain");
            cupti.result_string = (result_string_fn)dlsym(cupti.lib, "cuptiGetResultString");
        }
    }
    bool ok = false;
    if (!cupti.lib || !cupti.subscribe || !cupti.unsubscribe || !cupti.enable_domain) {
        snprintf(detail, len, "libcupti.so.13 not found or incomplete (%s)", cupti.lib ? "missing symbols" : dlerror());
    } else {
        CUptiResult r = cupti.subscribe(&cupti.sub, on_callback, NULL);
        if (r != CUPTI_SUCCESS) {
            snprintf(detail, len, "cuptiSubscribe failed: %s (another profiler or tool holds CUPTI?)", result_text(r));
        } else if ((r = cupti.enable_domain(1, cupti.sub, CUPTI_CB_DOMAIN_RUNTIME_API)) != CUPTI_SUCCESS) {
            snprintf(detail, len, "cuptiEnableDomain(runtime API) failed: %s", result_text(r));
            cupti.unsubscribe(cupti.sub);
        } else {
            ok = true;
            cupti.holders = 1;
            snprintf(detail, len, "runtime API callbacks during the warm-up");
        }
    }
    ub_inside--;
    if (!ok)
        ub_warn("CUPTI unavailable: %s; communicators profiled now are judged not schedulable", detail);
    return ok;
}

void ub_cupti_release(void)
{
    if (cupti.holders <= 0 || --cupti.holders > 0)
        return;
    ub_inside++;
    cupti.unsubscribe(cupti.sub);
    ub_inside--;
}
