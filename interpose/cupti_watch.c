/* Watching the NCCL streams for stream-ordered work during the warm-up (docs/design.md section 3):
 * a CUPTI subscriber to the runtime and driver API callbacks of every call that puts work on a
 * stream (cupti_work.h), held while at least one communicator profiles and released afterwards
 * (CUPTI allows one subscriber per process, so we never keep it, and give it up as soon as the
 * application asks for it: cupti_wrap.c).  libcupti is found as the process has it
 * (cupti_find.c); if it is missing, or another tool holds the subscription, the caller is told
 * why and the communicator is judged not schedulable. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "cupti.h"
#include "cupti_work.h"
#include "globals.h"
#include "guard.h"
#include "log.h"
#include "state.h"
#include "tables.h"

typedef CUptiResult (*subscribe_fn)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
typedef CUptiResult (*subscribe_v2_fn)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *, CUpti_SubscriberParams *);
typedef CUptiResult (*unsubscribe_fn)(CUpti_SubscriberHandle);
typedef CUptiResult (*enable_callback_fn)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain, CUpti_CallbackId);
typedef CUptiResult (*result_string_fn)(CUptiResult, const char **);

/* The function CUPTI calls (cupti_wrap.c's, set at the runtime's start): CUPTI calls into the
 * runtime at its top, like a wrapper, never into this file. */
static CUpti_CallbackFunc callback;

/* Under the global lock. */
static struct {
    void *lib;
    bool tried;
    char why[200];           /* why no library, once tried */
    subscribe_fn subscribe;
    subscribe_v2_fn subscribe_v2;
    unsubscribe_fn unsubscribe;
    enable_callback_fn enable_callback;
    result_string_fn result_string;
    CUpti_SubscriberHandle sub;
    int holders;
    /* The application subscribes or holds CUPTI (cupti_wrap.c): usbyte does not subscribe until
     * it unsubscribes that handle (NULL while its cuptiSubscribe is in progress). */
    bool foreign;
    CUpti_SubscriberHandle foreign_sub;
} cupti;

/* Each subscription's number: a thread's runtime-call depth counts only within the subscription
 * it was counted in (a call entered before a release leaves no depth behind). */
static atomic_uint generation;

unsigned ub_cupti_generation(void) { return atomic_load_explicit(&generation, memory_order_relaxed); }

void ub_cupti_set_callback(CUpti_CallbackFunc fn) { callback = fn; }

static const struct {
    CUpti_CallbackDomain domain;
    CUpti_CallbackId cbid;
} watched[] = {
#define UB_RT(name, k, stream) {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_##name},
#define UB_DRV(name, k, stream) {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_##name},
    UB_CUPTI_RUNTIME_WORK(UB_RT) UB_CUPTI_DRIVER_WORK(UB_DRV)
#undef UB_RT
#undef UB_DRV
};

static const char *result_text(CUptiResult r)
{
    const char *s = NULL;
    if (cupti.result_string && cupti.result_string(r, &s) == CUPTI_SUCCESS && s)
        return s;
    return "unknown CUPTI error";
}

static bool load(void)
{
    if (cupti.tried)
        return cupti.lib != NULL;
    cupti.tried = true;
    char origin[PATH_MAX + 160];
    cupti.lib = ub_cupti_open(origin, sizeof origin, cupti.why, sizeof cupti.why);
    if (!cupti.lib)
        return false;
    ub_debug("CUPTI: %s", origin);
    cupti.subscribe = (subscribe_fn)dlsym(cupti.lib, "cuptiSubscribe");
    cupti.subscribe_v2 = (subscribe_v2_fn)dlsym(cupti.lib, "cuptiSubscribe_v2");
    cupti.unsubscribe = (unsubscribe_fn)dlsym(cupti.lib, "cuptiUnsubscribe");
    cupti.enable_callback = (enable_callback_fn)dlsym(cupti.lib, "cuptiEnableCallback");
    cupti.result_string = (result_string_fn)dlsym(cupti.lib, "cuptiGetResultString");
    return true;
}

/* Subscribes under usbyte's name where CUPTI takes one (other tools then see who holds it), and
 * learns who holds it when another does.  -> CUPTI_SUCCESS or why not; holder: the other's name. */
static CUptiResult subscribe(char *holder, size_t len)
{
    holder[0] = '\0';
    if (!cupti.subscribe_v2)
        return cupti.subscribe(&cupti.sub, callback, NULL);
    char old[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 1] = "";
    CUpti_SubscriberParams p = {CUpti_SubscriberParams_STRUCT_SIZE, "usbyte", old, sizeof old - 1};
    CUptiResult r = cupti.subscribe_v2(&cupti.sub, callback, NULL, &p);
    snprintf(holder, len, "%s", old);
    return r;
}

/* Enables every watched callback; ids this CUPTI does not know (a CUDA 13 function under CUPTI
 * 12) cannot occur with it and are skipped.  False when none could be enabled. */
static bool enable_all(char *detail, size_t len)
{
    int enabled = 0;
    CUptiResult last = CUPTI_SUCCESS;
    for (size_t i = 0; i < sizeof watched / sizeof watched[0]; i++) {
        CUptiResult r = cupti.enable_callback(1, cupti.sub, watched[i].domain, watched[i].cbid);
        if (r == CUPTI_SUCCESS)
            enabled++;
        else
            last = r;
    }
    if (enabled == 0)
        snprintf(detail, len, "cuptiEnableCallback failed: %s", result_text(last));
    else if (enabled < (int)(sizeof watched / sizeof watched[0]))
        ub_debug("CUPTI: %d of %zu callbacks enabled (the others are unknown to this CUPTI)", enabled,
                 sizeof watched / sizeof watched[0]);
    return enabled > 0;
}

static const char detail_held[] = "runtime and driver API callbacks during the warm-up";

/* Called with the state lock held. */
bool ub_cupti_acquire(char *detail, size_t len, bool *taken)
{
    *taken = false;
    if (cupti.holders > 0) {
        cupti.holders++;
        snprintf(detail, len, "%s", detail_held);
        return true;
    }
    bool ok = false;
    if (cupti.foreign) {
        *taken = true;
        snprintf(detail, len, "another CUPTI subscriber (the application's cuptiSubscribe) holds CUPTI");
    } else if (!callback) {
        snprintf(detail, len, "no CUPTI callback (the runtime did not start)");
    } else if (!UB_REAL(load())) {
        snprintf(detail, len, "libcupti not found: %s", cupti.why);
    } else {
        char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 1];
        CUptiResult r = UB_REAL(subscribe(holder, sizeof holder));
        if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
            *taken = true;
            snprintf(detail, len, "another CUPTI subscriber holds CUPTI (%s)",
                     holder[0] ? holder : "a profiler, or an NVIDIA tool the job runs under");
        } else if (r != CUPTI_SUCCESS) {
            snprintf(detail, len, "cuptiSubscribe failed: %s", result_text(r));
        } else if (!UB_REAL(enable_all(detail, len))) {
            UB_REAL(cupti.unsubscribe(cupti.sub));
        } else {
            ok = true;
            cupti.holders = 1;
            atomic_fetch_add(&generation, 1);
            snprintf(detail, len, "%s", detail_held);
        }
    }
    if (!ok)
        ub_warn("CUPTI unavailable: %s; communicators profiled now are judged not schedulable", detail);
    return ok;
}

void ub_comm_watch_cupti(ub_comm *c)
{
    c->report.cupti = false;
    c->cupti_taken = false;
    if (ub_cfg.cupti) {
        c->cupti_held = ub_cupti_acquire(c->report.cupti_detail, sizeof c->report.cupti_detail, &c->cupti_taken);
        c->report.cupti = c->cupti_held;
    } else {
        snprintf(c->report.cupti_detail, sizeof c->report.cupti_detail, "disabled by USBYTE_CUPTI=0");
    }
}

void ub_comm_unwatch_cupti(ub_comm *c)
{
    if (c->cupti_held) {
        ub_cupti_release();
        c->cupti_held = false;
    }
}

void ub_cupti_release(void)
{
    if (cupti.holders <= 0 || --cupti.holders > 0)
        return;
    UB_REAL(cupti.unsubscribe(cupti.sub));
}

void ub_cupti_yield(void)
{
    if (ub_state_in_child())   /* a forked child holds nothing of its parent's CUPTI */
        return;
    ub_state_lock();
    cupti.foreign = true;
    cupti.foreign_sub = NULL;
    int n = 0;
    bool held = cupti.holders > 0;
    for (ub_comm *c = ub_state_live_comms(); held && c; c = c->hh.next)
        if (c->cupti_held) {
            c->cupti_held = false;
            c->cupti_taken = true;
            c->report.cupti = false;
            snprintf(c->report.cupti_detail, sizeof c->report.cupti_detail,
                     "another CUPTI subscriber (the application's cuptiSubscribe) took CUPTI during the warm-up");
            n++;
        }
    cupti.holders = 0;
    CUpti_SubscriberHandle ours = cupti.sub;
    ub_state_unlock();
    if (!held)
        return;
    /* Outside the lock: a callback in flight on another thread may be waiting for it.  No
     * communicator subscribes meanwhile (foreign is set). */
    UB_REAL(cupti.unsubscribe(ours));
    ub_warn("the application subscribes to CUPTI (a profiler): usbyte lets it have CUPTI; the %d communicator%s "
            "profiled now %s judged not schedulable", n, n == 1 ? "" : "s", n == 1 ? "is" : "are");
}

void ub_cupti_foreign_subscribed(bool ok, CUpti_SubscriberHandle sub)
{
    if (ub_state_in_child())
        return;
    ub_state_lock();
    cupti.foreign = ok;
    cupti.foreign_sub = ok ? sub : NULL;
    ub_state_unlock();
}

void ub_cupti_foreign_unsubscribed(CUpti_SubscriberHandle sub)
{
    if (ub_state_in_child())
        return;
    ub_state_lock();
    if (cupti.foreign && cupti.foreign_sub == sub) {
        cupti.foreign = false;
        cupti.foreign_sub = NULL;
    }
    ub_state_unlock();
}
