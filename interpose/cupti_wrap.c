/* CUPTI's ways into the runtime: the callback of usbyte's own subscription, and the application's
 * own subscription (torch.profiler, a tool of its own).
 *
 * The callback: every runtime and driver call that puts work on a stream (cupti_work.h) while a
 * warm-up watches, handed to the warm-up (warmup.c); usbyte's own calls (ub_inside) and the
 * driver call a runtime call goes through are not.
 *
 * The application's subscription: CUPTI takes one
 * subscriber per process, so while usbyte watches a warm-up, the application's cuptiSubscribe
 * would fail and its profiler would see nothing.  These wrappers (exported under CUPTI's version
 * node, like the CUDA runtime's: cuptiSubscribe@@libcupti.so.13, and @libcupti.so.12 for a
 * CUDA 12 CUPTI) make usbyte let go first (cupti_watch.c: the communicators it was watching for
 * are then judged not schedulable, saying why), then call the application's libcupti; usbyte
 * watches no warm-up until the application's cuptiUnsubscribe ends that subscription. */
#include <dlfcn.h>

#include <cupti.h>

#include "cupti.h"
#include "cupti_work.h"
#include "globals.h"
#include "warmup.h"

#define UB_EXPORT __attribute__((visibility("default")))

/* Each subscription's number (ub_cupti_generation): a thread's runtime-call depth counts only
 * within the subscription it was counted in (a call entered before a release leaves no depth
 * behind). */
static _Thread_local unsigned tl_generation;
static _Thread_local int tl_runtime_depth;

void CUPTIAPI ub_cupti_callback(void *user, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data)
{
    (void)user;
    const CUpti_CallbackData *cb = data;
    if ((domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API) || !cb)
        return;
    unsigned gen = ub_cupti_generation();
    if (tl_generation != gen) {
        tl_generation = gen;
        tl_runtime_depth = 0;
    }
    /* The driver call a runtime call goes through is that call, counted at the runtime's. */
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cb->callbackSite == CUPTI_API_EXIT) {
        if (tl_runtime_depth > 0)
            tl_runtime_depth--;
        return;
    }
    if (cb->callbackSite != CUPTI_API_ENTER)
        return;
    bool nested = domain == CUPTI_CB_DOMAIN_DRIVER_API && tl_runtime_depth > 0;
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API)
        tl_runtime_depth++;
    if (nested || ub_inside)
        return;
    ub_work_kind kind;
    cudaStream_t s = ub_cupti_work_stream(domain, cbid, cb->functionParams, &kind);
    if (kind == UB_WORK_NONE)
        return;
    ub_warmup_stream_work(s, cb->functionName ? cb->functionName : "?", kind == UB_WORK_COMPUTE);
}

/* The application's libcupti's function (the one loaded in the process; else the next one in
 * the lookup order), never this library's own. */
static void *real(const char *name)
{
    Dl_info mine, theirs;
    void *fn = NULL, *h = ub_cupti_loaded();
    if (h) {
        fn = dlsym(h, name);
        dlclose(h);   /* the application holds its own reference */
    }
    if (!fn)
        fn = dlsym(RTLD_NEXT, name);
    if (fn && dladdr((void *)real, &mine) && dladdr(fn, &theirs) && mine.dli_fbase == theirs.dli_fbase)
        fn = NULL;
    return fn;
}

UB_EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback, void *userdata)
{
    CUptiResult (*fn)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *) =
        (CUptiResult(*)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *))real("cuptiSubscribe");
    if (!fn)
        return CUPTI_ERROR_NOT_INITIALIZED;
    if (ub_inside)
        return fn(subscriber, callback, userdata);
    ub_cupti_yield();
    CUptiResult r = fn(subscriber, callback, userdata);
    ub_cupti_foreign_subscribed(r == CUPTI_SUCCESS, r == CUPTI_SUCCESS && subscriber ? *subscriber : NULL);
    return r;
}

UB_EXPORT CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback, void *userdata,
                                        CUpti_SubscriberParams *params)
{
    CUptiResult (*fn)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *, CUpti_SubscriberParams *) =
        (CUptiResult(*)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *, CUpti_SubscriberParams *))real(
            "cuptiSubscribe_v2");
    if (!fn)
        return CUPTI_ERROR_NOT_INITIALIZED;
    if (ub_inside)
        return fn(subscriber, callback, userdata, params);
    ub_cupti_yield();
    CUptiResult r = fn(subscriber, callback, userdata, params);
    ub_cupti_foreign_subscribed(r == CUPTI_SUCCESS, r == CUPTI_SUCCESS && subscriber ? *subscriber : NULL);
    return r;
}

/* The application's subscription ends: warm-ups may watch again. */
UB_EXPORT CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle subscriber)
{
    CUptiResult (*fn)(CUpti_SubscriberHandle) = (CUptiResult(*)(CUpti_SubscriberHandle))real("cuptiUnsubscribe");
    if (!fn)
        return CUPTI_ERROR_NOT_INITIALIZED;
    CUptiResult r = fn(subscriber);
    if (r == CUPTI_SUCCESS && !ub_inside)
        ub_cupti_foreign_unsubscribed(subscriber);
    return r;
}

/* The same under CUDA 12 CUPTI's version node (the default stays 13's, which unversioned
 * references take). */
static __typeof__(cuptiSubscribe) ub_local_cuptiSubscribe __attribute__((alias("cuptiSubscribe")));
UB_EXPORT CUptiResult ub_v12_cuptiSubscribe(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback,
                                            void *userdata)
{
    return ub_local_cuptiSubscribe(subscriber, callback, userdata);
}
__asm__(".symver ub_v12_cuptiSubscribe, cuptiSubscribe@libcupti.so.12");

static __typeof__(cuptiSubscribe_v2) ub_local_cuptiSubscribe_v2 __attribute__((alias("cuptiSubscribe_v2")));
UB_EXPORT CUptiResult ub_v12_cuptiSubscribe_v2(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback,
                                               void *userdata, CUpti_SubscriberParams *params)
{
    return ub_local_cuptiSubscribe_v2(subscriber, callback, userdata, params);
}
__asm__(".symver ub_v12_cuptiSubscribe_v2, cuptiSubscribe_v2@libcupti.so.12");

static __typeof__(cuptiUnsubscribe) ub_local_cuptiUnsubscribe __attribute__((alias("cuptiUnsubscribe")));
UB_EXPORT CUptiResult ub_v12_cuptiUnsubscribe(CUpti_SubscriberHandle subscriber)
{
    return ub_local_cuptiUnsubscribe(subscriber);
}
__asm__(".symver ub_v12_cuptiUnsubscribe, cuptiUnsubscribe@libcupti.so.12");
