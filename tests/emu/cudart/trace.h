/* The CUPTI hook (trace.c): the API callbacks around the runtime's entry points, and around the
 * driver functions those entry points stand for. */
#ifndef USBYTE_EMU_CUDART_TRACE_H
#define USBYTE_EMU_CUDART_TRACE_H

#include <stdatomic.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "../emu_internal.h"
#include "errors.h"

/* ---- the runtime function called ---- */
struct emu_trace {
    usbyteEmuApiHookFn hook;
    int domain;
    uint32_t cbid;
    const char *name;
    const void *params;
    uint32_t correlation_id;
    uint64_t correlation_data;
};
extern _Atomic(usbyteEmuApiHookFn) emu_api_hook;
void emu_trace_enter(struct emu_trace *t, usbyteEmuApiHookFn hook, int domain, uint32_t cbid, const char *name, const void *params);
void emu_trace_exit(struct emu_trace *t, const void *ret);

/* Runs `call` (a cudaError_t expression) between the CUPTI enter and exit callbacks when a
 * subscriber is attached; otherwise one predictable branch. */
#define EMU_TRACED(cbid, name, params, call)                                               \
    do {                                                                                   \
        usbyteEmuApiHookFn hook_ = atomic_load_explicit(&emu_api_hook, memory_order_acquire); \
        if (__builtin_expect(hook_ == NULL, 1))                                            \
            return emu_result(call);                                                       \
        struct emu_trace tr_;                                                              \
        emu_trace_enter(&tr_, hook_, 2 /* CUPTI_CB_DOMAIN_RUNTIME_API */, (cbid), (name), (params)); \
        cudaError_t r_ = emu_result(call);                                                 \
        emu_trace_exit(&tr_, &r_);                                                         \
        return r_;                                                                         \
    } while (0)

/* ---- the driver function a runtime call reports ----
 * Real CUPTI reports, inside a runtime API callback, the driver API callbacks of the driver
 * functions the runtime calls on that thread.  EMU_NESTED runs `call` (a cudaError_t
 * expression) between the driver-domain enter and exit callbacks of `name` (a cuXxx function
 * with its CUPTI_DRIVER_TRACE_CBID_ id and params struct), when a subscriber is attached. */
struct emu_nested {
    usbyteEmuApiHookFn hook;
    uint32_t cbid;
    const char *name;
    const void *params;
    uint32_t correlation_id;
    uint64_t correlation_data;
};
void emu_nested_enter(struct emu_nested *n, usbyteEmuApiHookFn hook, uint32_t cbid, const char *name, const void *params);
cudaError_t emu_nested_exit(struct emu_nested *n, cudaError_t err);

#define EMU_NESTED(cbid, name, params, call)                                                  \
    __extension__({                                                                           \
        usbyteEmuApiHookFn nh_ = atomic_load_explicit(&emu_api_hook, memory_order_acquire);   \
        cudaError_t nr_;                                                                      \
        if (__builtin_expect(nh_ == NULL, 1)) {                                               \
            nr_ = (call);                                                                     \
        } else {                                                                              \
            struct emu_nested nt_;                                                            \
            emu_nested_enter(&nt_, nh_, (cbid), (name), (params));                            \
            nr_ = emu_nested_exit(&nt_, (call));                                              \
        }                                                                                     \
        nr_;                                                                                  \
    })

#endif
