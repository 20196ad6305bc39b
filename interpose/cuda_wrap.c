/* The exported CUDA runtime wrappers, generated from UB_CUDA_LIST.  The fast path (nothing of
 * usbyte involved, the steady state) is one relaxed atomic load and a branch before the real
 * function; the version script exports them under the runtime's own version node so that
 * references bound to cudaEventRecord@libcudart.so.13 reach them. */
#include "capture.h"
#include "cuda_hooks.h"
#include "cuda_list.h"
#include "driver_list.h"
#include "globals.h"
#include "log.h"
#include "redirect.h"
#include "runtime.h"
#include "warmup.h"

#define UB_EXPORT __attribute__((visibility("default")))

static cudaError_t missing(ub_cuda_id id)
{
    ub_error("%s: the real CUDA runtime function is not available; returning cudaErrorNotSupported",
             ub_cuda_names[id]);
    return cudaErrorNotSupported;
}

static inline bool slow_path(void)
{
    return (atomic_load_explicit(&ub_cuda_tracking, memory_order_relaxed) != 0 ||
            atomic_load_explicit(&ub_sched_live, memory_order_relaxed) != 0 ||
            atomic_load_explicit(&ub_capture_live, memory_order_relaxed) != 0) &&
           !ub_bypass();
}

#define PROLOGUE(name, args)                                   \
    if (__builtin_expect(!atomic_load_explicit(&ub_cuda_resolved, memory_order_acquire), 0)) { \
        ub_runtime_init();                                     \
        ub_cuda_resolve();                                     \
    }                                                          \
    if (__builtin_expect(!ub_cuda.name, 0))                    \
        return missing(UB_CUDA_##name);                        \
    if (__builtin_expect(!slow_path(), 1))                     \
        return ub_cuda.name args;

#define PROLOGUE_ALWAYS(name, args)                            \
    if (__builtin_expect(!atomic_load_explicit(&ub_cuda_resolved, memory_order_acquire), 0)) { \
        ub_runtime_init();                                     \
        ub_cuda_resolve();                                     \
    }                                                          \
    if (__builtin_expect(!ub_cuda.name, 0))                    \
        return missing(UB_CUDA_##name);                        \
    if (ub_bypass())                                           \
        return ub_cuda.name args;

/* A record on a stream with deferred calls is kept pending or recorded behind them (schedule
 * mode); every record must be known after it happened (the binding of later waits). */
#define EVREC_TAKEN(ev, st, flags) ub_cuda_event_record((ev), (st), (flags), &r)
#define EVREC_HOOK(ev, st, flags) (ub_cuda_event_recorded((ev), (st)), ub_capture_recorded((ev), (st), (flags)))
#define WRAP_EVREC(name, params, args, hook)                   \
    UB_EXPORT cudaError_t name params                          \
    {                                                          \
        PROLOGUE(name, args)                                   \
        cudaError_t r;                                         \
        if (!(EVREC_TAKEN hook))                               \
            r = ub_cuda.name args;                             \
        if (r == cudaSuccess)                                  \
            EVREC_HOOK hook;                                   \
        return r;                                              \
    }

/* Queries answered by the runtime when the event is pending. */
#define EVQUERY_TAKEN(ev) ub_cuda_event_query((ev), &r)
#define EVELAPSED_TAKEN(a, b) ub_cuda_event_elapsed((a), (b), &r)
#define WRAP_TAKEN(cls, name, params, args, hook)              \
    UB_EXPORT cudaError_t name params                          \
    {                                                          \
        PROLOGUE(name, args)                                   \
        cudaError_t r;                                         \
        if (cls##_TAKEN hook)                                  \
            return r;                                          \
        return ub_cuda.name args;                              \
    }
#define WRAP_EVQUERY(...) WRAP_TAKEN(EVQUERY, __VA_ARGS__)
#define WRAP_EVELAPSED(...) WRAP_TAKEN(EVELAPSED, __VA_ARGS__)

/* Waits are observed before they are forwarded: the timing event that measures "when was this
 * needed" must be ahead of the wait on the waiting stream, and a wait on deferred work returns
 * only once that work is issued. */
#define SWAIT_HOOK(st, ev) ub_cuda_stream_wait((st), (ev))
#define EVSYNC_HOOK(ev) ub_cuda_event_sync(ev)
#define SSYNC_HOOK(st) ub_cuda_stream_host_wait((st), false)
#define SQUERY_HOOK(st) ub_cuda_stream_host_wait((st), true)
#define DSYNC_HOOK() ub_cuda_device_wait()
#define SDESTROY_HOOK(st) ub_cuda_stream_destroyed(st)
#define EDESTROY_HOOK(ev) ub_cuda_event_destroyed(ev)
#define WRAP_BEFORE(cls, name, params, args, hook)             \
    UB_EXPORT cudaError_t name params                          \
    {                                                          \
        PROLOGUE(name, args)                                   \
        cls##_HOOK hook;                                       \
        return ub_cuda.name args;                              \
    }
#define WRAP_EVSYNC(...) WRAP_BEFORE(EVSYNC, __VA_ARGS__)
/* Host waits on a stream also see its deferred calls (schedule mode), after the real wait; a
 * wait on an event recorded in a capture joins the waiting stream to it. */
#define SWAIT_AFTER(st, ev) ((r == cudaSuccess ? ub_capture_waited((st), (ev)) : (void)0), r)
#define SSYNC_AFTER(st) ub_cuda_stream_host_waited((st), false, r)
#define SQUERY_AFTER(st) ub_cuda_stream_host_waited((st), true, r)
#define WRAP_AROUND(cls, name, params, args, hook)             \
    UB_EXPORT cudaError_t name params                          \
    {                                                          \
        PROLOGUE(name, args)                                   \
        cls##_HOOK hook;                                       \
        cudaError_t r = ub_cuda.name args;                     \
        return cls##_AFTER hook;                               \
    }
#define WRAP_SWAIT(...) WRAP_AROUND(SWAIT, __VA_ARGS__)
#define WRAP_SSYNC(...) WRAP_AROUND(SSYNC, __VA_ARGS__)
#define WRAP_SQUERY(...) WRAP_AROUND(SQUERY, __VA_ARGS__)
#define WRAP_DSYNC(...) WRAP_BEFORE(DSYNC, __VA_ARGS__)
#define WRAP_SDESTROY(...) WRAP_BEFORE(SDESTROY, __VA_ARGS__)
#define WRAP_EDESTROY(...) WRAP_BEFORE(EDESTROY, __VA_ARGS__)
/* Graph capture: seen whatever the state (a capture may begin before any communicator); what
 * is deferred on the stream goes out before its capture begins. */
#define WRAP_BEGINCAP(name, params, args, hook)                \
    UB_EXPORT cudaError_t name params                          \
    {                                                          \
        PROLOGUE_ALWAYS(name, args)                            \
        return UB_CAPTURE_BEGIN((cudaStream_t)hook, cudaSuccess, ub_cuda.name args); \
    }
#define WRAP_ENDCAP(name, params, args, hook)                  \
    UB_EXPORT cudaError_t name params                          \
    {                                                          \
        PROLOGUE_ALWAYS(name, args)                            \
        return UB_CAPTURE_END((cudaStream_t)hook, ub_cuda.name args); \
    }
/* A driver capture function looked up through the runtime is handed out as usbyte's wrapper. */
#define WRAP_ENTRY(name, params, args, hook)                   \
    UB_EXPORT cudaError_t name params                          \
    {                                                          \
        PROLOGUE_ALWAYS(name, args)                            \
        cudaError_t r = ub_cuda.name args;                     \
        if (r == cudaSuccess)                                  \
            ub_cu_substitute hook;                             \
        return r;                                              \
    }
#define WRAP_CALLONLY(name, params, args, hook)

#define X(name, cls, params, args, hook) WRAP_##cls(name, params, args, hook)
UB_CUDA_LIST(X)
#undef X

/* The same wrappers under the CUDA 12 runtime's version node: PyTorch's cu12 wheels load
 * libcudart.so.12, whose programs reference cudaEventRecord@libcudart.so.12.  Each is a jump to
 * the wrapper above (through a local alias: no PLT); the default version stays 13's, which
 * unversioned references take. */
#define V12_CALLONLY(name, params, args)
#define V12_WRAPPED(name, params, args)                                              \
    static __typeof__(name) ub_local_##name __attribute__((alias(#name)));           \
    UB_EXPORT cudaError_t ub_v12_##name params { return ub_local_##name args; }       \
    __asm__(".symver ub_v12_" #name ", " #name "@libcudart.so.12");
#define V12_EVREC V12_WRAPPED
#define V12_SWAIT V12_WRAPPED
#define V12_EVSYNC V12_WRAPPED
#define V12_EVQUERY V12_WRAPPED
#define V12_EVELAPSED V12_WRAPPED
#define V12_SSYNC V12_WRAPPED
#define V12_SQUERY V12_WRAPPED
#define V12_DSYNC V12_WRAPPED
#define V12_SDESTROY V12_WRAPPED
#define V12_EDESTROY V12_WRAPPED
#define V12_BEGINCAP V12_WRAPPED
#define V12_ENDCAP V12_WRAPPED
#define V12_ENTRY V12_WRAPPED
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#define X(name, cls, params, args, hook) V12_##cls(name, params, args)
UB_CUDA_LIST(X)
#undef X
#pragma GCC diagnostic pop
