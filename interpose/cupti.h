/* CUPTI in the runtime: finding the library the process has (cupti_find.c), the warm-up's
 * subscriber (cupti_watch.c) and the application's own subscriptions (cupti_wrap.c). */
#ifndef USBYTE_CUPTI_H
#define USBYTE_CUPTI_H

#include <stdbool.h>
#include <stddef.h>

#include <cuda_runtime_api.h>
#include <cupti.h>
#include <stdatomic.h>

#include "lock_contract.h"

/* A handle of libcupti as the process has it: one already loaded; else one next to the loaded
 * CUDA runtime (the same directory, a CUDA 12 wheel's nvidia/cuda_cupti/lib beside
 * nvidia/cuda_runtime/lib, a toolkit's extras/CUPTI/lib64); else libcupti.so.13, .12 or the
 * unversioned name through the dynamic linker's search path.  origin says which and where;
 * NULL when none loads, why then says what was tried.  Call with ub_inside raised. */
void *ub_cupti_open(char *origin, size_t origin_len, char *why, size_t why_len);

/* The libcupti already loaded in the process (the application's), NULL when none is. */
void *ub_cupti_loaded(void);

/* The application is about to subscribe (its cuptiSubscribe was called): usbyte drops its own
 * subscription, every communicator it was watching for is judged not schedulable, saying why,
 * and no warm-up subscribes until the application's subscription ends.  Then the application's
 * call returned (ok: with the handle sub), and later its cuptiUnsubscribe(sub) succeeded.  Each
 * takes the global lock. */
void ub_cupti_yield(void) UB_EXCLUDES(ub_state_mutex);
void ub_cupti_foreign_subscribed(bool ok, CUpti_SubscriberHandle sub) UB_EXCLUDES(ub_state_mutex);
void ub_cupti_foreign_unsubscribed(CUpti_SubscriberHandle sub) UB_EXCLUDES(ub_state_mutex);

/* CUPTI's way into the runtime (cupti_wrap.c): the callback of usbyte's subscription, at the top
 * like the wrappers, which hands the warm-up the stream-ordered work of each watched call
 * (ub_warmup_stream_work) and is set at the runtime's start (ub_cupti_set_callback). */
void CUPTIAPI ub_cupti_callback(void *user, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data);

/* CUPTI (cupti_watch.c): reference-counted subscription while some communicator profiles, with
 * the callback set once (NULL: none, no subscription).  false: unavailable, detail says why;
 * *taken: because another subscriber holds CUPTI. */
void ub_cupti_set_callback(CUpti_CallbackFunc fn);
bool ub_cupti_acquire(char *detail, size_t len, bool *taken);
/* The subscription's number, new at each subscription (a callback's per-thread state is kept
 * within one). */
unsigned ub_cupti_generation(void);
void ub_cupti_release(void);
/* Lock held: communicator c's warm-up watches (USBYTE_CUPTI=1) or stops watching with CUPTI.
 * cupti_watch.c is the one writer of c's cupti_held, cupti_taken and report's cupti and
 * cupti_detail. */
struct ub_comm;
void ub_comm_watch_cupti(struct ub_comm *c) UB_REQUIRES(ub_state_mutex);
void ub_comm_unwatch_cupti(struct ub_comm *c) UB_REQUIRES(ub_state_mutex);

#endif
