/* The exported NCCL wrappers, generated from UB_NCCL_LIST.  Each forwards its arguments
 * unchanged to the real function, except an allreduce that schedule mode defers (its bytes go
 * out later, in the plan's blocks).  The real function runs with the reentrancy guard raised:
 * NCCL calls its own API through the PLT (pncclBcast calls ncclBroadcast), and such an inner call
 * reaches these wrappers again, where it must go straight through (not counted twice, never
 * deferred). */
#include "coll_desc.h"
#include "globals.h"
#include "group.h"
#include "guard.h"
#include "identity.h"
#include "lifecycle.h"
#include "log.h"
#include "nccl_list.h"
#include "redirect.h"
#include "runtime.h"
#include "tables.h"

#define UB_EXPORT __attribute__((visibility("default")))

static ncclResult_t missing(ub_nccl_id id)
{
    ub_error("%s: the real NCCL function is not available; returning ncclInternalError",
             ub_nccl_names[id]);
    return ncclInternalError;
}

#define UB_DESC(s, r, c, dt, o, rt, cm, st) \
    {.send = (s), .recv = (r), .count = (c), .dtype = (int)(dt), .op = (o), .root = (rt), .comm = (cm), .stream = (st)}
#define UB_DESC_COMM(s, r, c, dt, o, rt, cm, st) (cm)

/* A call that goes to NCCL as it is with nothing to note: its communicator passes its calls
 * through (off mode once agreed, pass-through, disabled) and no communicator runs a plan (whose
 * redirection would have to hear of the call's work on its stream).  Off mode's calls take this
 * way, without a descriptor, a token or the life cycle. */
static inline bool passes_quietly(ncclComm_t comm)
{
    return ub_state_call_passes(comm) && atomic_load_explicit(&ub_sched_live, memory_order_relaxed) == 0;
}

#define PROLOGUE(name, args)                               \
    ub_runtime_init();                                     \
    if (ub_nccl_resolve() != 0 || !ub_nccl.name)           \
        return missing(UB_NCCL_##name);                    \
    if (ub_bypass())                                       \
        return ub_nccl.name args;
/* The application's call, forwarded. */
#define REAL(name, args) UB_NCCL(ub_nccl.name args)

#define WRAP_COLL(name, params, args, hook)                \
    UB_EXPORT ncclResult_t nccl##name params               \
    {                                                      \
        PROLOGUE(name, args)                               \
        if (passes_quietly(UB_DESC_COMM hook))             \
            return REAL(name, args);                       \
        ub_coll_desc d = UB_DESC hook;                     \
        d.id = UB_NCCL_##name;                             \
        ub_coll_token t;                                   \
        if (ub_coll_before(&d, &t))                        \
            return t.result;                               \
        if (!t.stream_work_noted)                          \
            ub_coll_forwarded(&d);                         \
        ncclResult_t r = REAL(name, args);                \
        if (t.comm)                                        \
            ub_coll_after(&d, &t, r);                      \
        return r;                                          \
    }
#define WRAP_P2P WRAP_COLL

#define WRAP_GSTART(name, params, args, hook)              \
    UB_EXPORT ncclResult_t nccl##name params               \
    {                                                      \
        PROLOGUE(name, args)                               \
        ncclResult_t r = REAL(name, args);                \
        if (r == ncclSuccess)                              \
            ub_group_enter();                              \
        return r;                                          \
    }

#define WRAP_GEND(name, params, args, hook)                \
    UB_EXPORT ncclResult_t nccl##name params               \
    {                                                      \
        PROLOGUE(name, args)                               \
        ub_group_leave();                                  \
        ncclResult_t r = REAL(name, args);                \
        return ub_group_ended(r);                          \
    }

#define INIT_HOOK(out, config, parent, ids, n)             \
    ub_comm_created((out), 1, (config), (parent), r);      \
    ub_comm_identify((out), (ids), (n), (parent), r)
#define WRAP_INIT(name, params, args, hook)                \
    UB_EXPORT ncclResult_t nccl##name params               \
    {                                                      \
        PROLOGUE(name, args)                               \
        ncclResult_t r = REAL(name, args);                \
        INIT_HOOK hook;                                    \
        return r;                                          \
    }

#define INITALL_HOOK(out, n)                               \
    ub_comm_created((out), (n), NULL, NULL, r);            \
    ub_comm_identify_all((out), (n), r)
#define WRAP_INITALL(name, params, args, hook)             \
    UB_EXPORT ncclResult_t nccl##name params               \
    {                                                      \
        PROLOGUE(name, args)                               \
        ncclResult_t r = REAL(name, args);                \
        INITALL_HOOK hook;                                 \
        return r;                                          \
    }

#define FINI_HOOK(c) ub_comm_ending((c), id)
#define WRAP_FINI(name, params, args, hook)                \
    UB_EXPORT ncclResult_t nccl##name params               \
    {                                                      \
        PROLOGUE(name, args)                               \
        int id = UB_NCCL_##name;                           \
        FINI_HOOK hook;                                    \
        return REAL(name, args);                           \
    }

#define WRAP_CALLONLY(name, params, args, hook)

#define X(name, cls, params, args, hook) WRAP_##cls(name, params, args, hook)
UB_NCCL_LIST(X)
#undef X
