/* The emulated CUPTI callback API (libcupti.so.13): one subscriber at a time, as real CUPTI,
 * receiving runtime-API (and driver-API stream memory operation) enter/exit callbacks with
 * CUpti_CallbackData and the parameter structs of CUPTI's generated_*_meta.h headers.
 *
 * Mechanism: the emulated libcudart calls one hook (usbyteEmuSetApiHook) around each traced
 * function; this library installs the hook while a subscriber exists and filters by the
 * subscriber's enabled (domain, callback id) table. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <cupti.h>

#include "../emu_internal.h"

#define EMU_CUPTI_EXPORT __attribute__((visibility("default")))

#define MAX_CBID ((int)CUPTI_DRIVER_TRACE_CBID_SIZE > (int)CUPTI_RUNTIME_TRACE_CBID_SIZE \
                      ? (int)CUPTI_DRIVER_TRACE_CBID_SIZE : (int)CUPTI_RUNTIME_TRACE_CBID_SIZE)

struct CUpti_Subscriber_st {
    /* Atomic: a callback of the previous subscription may still be under way on another thread
     * while a new one subscribes (real CUPTI serialises them internally). */
    _Atomic(CUpti_CallbackFunc) callback;
    _Atomic(void *) userdata;
    char name[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN];
    atomic_uchar enabled[CUPTI_CB_DOMAIN_SIZE][MAX_CBID];
};

/* The single subscriber is static: a callback racing with cuptiUnsubscribe never sees freed memory. */
static struct CUpti_Subscriber_st subscriber;
static atomic_bool subscribed;
static pthread_mutex_t subscribe_mu = PTHREAD_MUTEX_INITIALIZER;

static uint32_t domain_size(int domain)
{
    switch (domain) {
    case CUPTI_CB_DOMAIN_RUNTIME_API: return CUPTI_RUNTIME_TRACE_CBID_SIZE;
    case CUPTI_CB_DOMAIN_DRIVER_API: return CUPTI_DRIVER_TRACE_CBID_SIZE;
    case CUPTI_CB_DOMAIN_RESOURCE: return CUPTI_CBID_RESOURCE_SIZE;
    case CUPTI_CB_DOMAIN_SYNCHRONIZE: return CUPTI_CBID_SYNCHRONIZE_SIZE;
    case CUPTI_CB_DOMAIN_NVTX: return CUPTI_CBID_NVTX_SIZE;
    case CUPTI_CB_DOMAIN_STATE: return CUPTI_CBID_STATE_SIZE;
    default: return 0;
    }
}

static void dispatch(int domain, uint32_t cbid, int site, const char *functionName, const void *params,
                     const void *returnValue, uint32_t correlationId, uint64_t *correlationData)
{
    CUpti_CallbackFunc callback = atomic_load_explicit(&subscriber.callback, memory_order_acquire);
    if (!atomic_load_explicit(&subscribed, memory_order_acquire) || callback == NULL)
        return;
    if (domain <= CUPTI_CB_DOMAIN_INVALID || domain >= CUPTI_CB_DOMAIN_SIZE || cbid >= (uint32_t)MAX_CBID ||
        !atomic_load_explicit(&subscriber.enabled[domain][cbid], memory_order_relaxed))
        return;
    CUpti_CallbackData data;
    memset(&data, 0, sizeof data);
    data.callbackSite = site == 0 ? CUPTI_API_ENTER : CUPTI_API_EXIT;
    data.functionName = functionName;
    data.functionParams = params;
    data.functionReturnValue = site == 0 ? NULL : (void *)returnValue;
    data.symbolName = NULL;
    data.context = (CUcontext)usbyteEmuContext();
    data.contextUid = 1;
    data.correlationData = correlationData;
    data.correlationId = correlationId;
    callback(atomic_load_explicit(&subscriber.userdata, memory_order_acquire), (CUpti_CallbackDomain)domain, cbid, &data);
}

static CUptiResult subscribe(CUpti_SubscriberHandle *out, CUpti_CallbackFunc callback, void *userdata,
                             const char *name, char *old_name, size_t old_size)
{
    if (out == NULL)
        return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&subscribe_mu);
    if (atomic_load(&subscribed)) {
        if (old_name != NULL && old_size > 0)
            snprintf(old_name, old_size, "%s", subscriber.name);
        pthread_mutex_unlock(&subscribe_mu);
        return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    }
    atomic_store_explicit(&subscriber.userdata, userdata, memory_order_release);
    atomic_store_explicit(&subscriber.callback, callback, memory_order_release);
    /* CUPTI names a subscriber "CUPTI for <subscriberName>" to the tools it turns away. */
    snprintf(subscriber.name, sizeof subscriber.name, "%s%.*s", name ? "CUPTI for " : "", CUPTI_SUBSCRIBER_NAME_MAX_LEN,
             name ? name : "");
    for (int d = 0; d < CUPTI_CB_DOMAIN_SIZE; d++)
        for (int c = 0; c < MAX_CBID; c++)
            atomic_store_explicit(&subscriber.enabled[d][c], 0, memory_order_relaxed);
    atomic_store_explicit(&subscribed, true, memory_order_release);
    usbyteEmuSetApiHook(dispatch);
    pthread_mutex_unlock(&subscribe_mu);
    *out = &subscriber;
    return CUPTI_SUCCESS;
}

EMU_CUPTI_EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *subscriberHandle, CUpti_CallbackFunc callback,
                                            void *userdata)
{
    return subscribe(subscriberHandle, callback, userdata, NULL, NULL, 0);
}

EMU_CUPTI_EXPORT CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle *subscriberHandle, CUpti_CallbackFunc callback,
                                               void *userdata, CUpti_SubscriberParams *params)
{
    const char *name = NULL;
    char *old_name = NULL;
    size_t old_size = 0;
    if (params != NULL) {
        if (params->structSize < CUpti_SubscriberParams_STRUCT_SIZE)
            return CUPTI_ERROR_INVALID_PARAMETER;
        name = params->subscriberName;
        old_name = params->oldSubscriberName;
        old_size = params->oldSubscriberSize;
    }
    return subscribe(subscriberHandle, callback, userdata, name, old_name, old_size);
}

static bool is_current(CUpti_SubscriberHandle handle)
{
    return handle == &subscriber && atomic_load(&subscribed);
}

EMU_CUPTI_EXPORT CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle handle)
{
    pthread_mutex_lock(&subscribe_mu);
    CUptiResult r = CUPTI_ERROR_INVALID_PARAMETER;
    if (is_current(handle)) {
        usbyteEmuSetApiHook(NULL);
        atomic_store_explicit(&subscribed, false, memory_order_release);
        r = CUPTI_SUCCESS;
    }
    pthread_mutex_unlock(&subscribe_mu);
    return r;
}

EMU_CUPTI_EXPORT CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle handle,
                                                 CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
    if (!is_current(handle) || cbid >= domain_size(domain) || cbid == 0)
        return CUPTI_ERROR_INVALID_PARAMETER;
    atomic_store(&subscriber.enabled[domain][cbid], enable ? 1 : 0);
    return CUPTI_SUCCESS;
}

EMU_CUPTI_EXPORT CUptiResult cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle handle, CUpti_CallbackDomain domain)
{
    uint32_t n = domain_size(domain);
    if (!is_current(handle) || n == 0)
        return CUPTI_ERROR_INVALID_PARAMETER;
    for (uint32_t c = 1; c < n; c++)
        atomic_store(&subscriber.enabled[domain][c], enable ? 1 : 0);
    return CUPTI_SUCCESS;
}

EMU_CUPTI_EXPORT CUptiResult cuptiEnableAllDomains(uint32_t enable, CUpti_SubscriberHandle handle)
{
    if (!is_current(handle))
        return CUPTI_ERROR_INVALID_PARAMETER;
    for (int d = CUPTI_CB_DOMAIN_INVALID + 1; d < CUPTI_CB_DOMAIN_SIZE; d++)
        cuptiEnableDomain(enable, handle, (CUpti_CallbackDomain)d);
    return CUPTI_SUCCESS;
}

EMU_CUPTI_EXPORT CUptiResult cuptiGetCallbackState(uint32_t *enable, CUpti_SubscriberHandle handle,
                                                   CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
    if (enable == NULL || !is_current(handle) || cbid >= domain_size(domain))
        return CUPTI_ERROR_INVALID_PARAMETER;
    *enable = atomic_load(&subscriber.enabled[domain][cbid]);
    return CUPTI_SUCCESS;
}

EMU_CUPTI_EXPORT CUptiResult cuptiSupportedDomains(size_t *domainCount, CUpti_DomainTable *domainTable)
{
    static CUpti_CallbackDomain table[] = {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_CB_DOMAIN_RUNTIME_API,
                                           CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CB_DOMAIN_SYNCHRONIZE,
                                           CUPTI_CB_DOMAIN_NVTX, CUPTI_CB_DOMAIN_STATE};
    if (domainCount == NULL || domainTable == NULL)
        return CUPTI_ERROR_INVALID_PARAMETER;
    *domainCount = sizeof table / sizeof table[0];
    *domainTable = table;
    return CUPTI_SUCCESS;
}

EMU_CUPTI_EXPORT CUptiResult cuptiGetVersion(uint32_t *version)
{
    if (version == NULL)
        return CUPTI_ERROR_INVALID_PARAMETER;
    *version = CUPTI_API_VERSION;
    return CUPTI_SUCCESS;
}

#define EMU_CUPTI_RESULTS(X)                                                                  \
    X(CUPTI_SUCCESS, "CUPTI_SUCCESS")                                                         \
    X(CUPTI_ERROR_INVALID_PARAMETER, "CUPTI_ERROR_INVALID_PARAMETER")                         \
    X(CUPTI_ERROR_INVALID_DEVICE, "CUPTI_ERROR_INVALID_DEVICE")                               \
    X(CUPTI_ERROR_INVALID_CONTEXT, "CUPTI_ERROR_INVALID_CONTEXT")                             \
    X(CUPTI_ERROR_INVALID_OPERATION, "CUPTI_ERROR_INVALID_OPERATION")                         \
    X(CUPTI_ERROR_OUT_OF_MEMORY, "CUPTI_ERROR_OUT_OF_MEMORY")                                 \
    X(CUPTI_ERROR_NOT_READY, "CUPTI_ERROR_NOT_READY")                                         \
    X(CUPTI_ERROR_NOT_INITIALIZED, "CUPTI_ERROR_NOT_INITIALIZED")                             \
    X(CUPTI_ERROR_INVALID_HANDLE, "CUPTI_ERROR_INVALID_HANDLE")                               \
    X(CUPTI_ERROR_NOT_SUPPORTED, "CUPTI_ERROR_NOT_SUPPORTED")                                 \
    X(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED") \
    X(CUPTI_ERROR_UNKNOWN, "CUPTI_ERROR_UNKNOWN")

EMU_CUPTI_EXPORT CUptiResult cuptiGetResultString(CUptiResult result, const char **str)
{
    if (str == NULL)
        return CUPTI_ERROR_INVALID_PARAMETER;
    switch (result) {
#define RESULT_CASE(code, text) case code: *str = text; return CUPTI_SUCCESS;
        EMU_CUPTI_RESULTS(RESULT_CASE)
#undef RESULT_CASE
    default:
        *str = NULL;
        return CUPTI_ERROR_INVALID_PARAMETER;
    }
}
