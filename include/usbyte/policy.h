/* The policies of docs/model.md, one X-macro list: the registry, the simulator's --policy names
 * and the report's policy table are all generated from it. */
#ifndef USBYTE_POLICY_H
#define USBYTE_POLICY_H

#include <stddef.h>

#include "usbyte/plan.h"
#include "usbyte/profile.h"

/* X(ENUM, name, function).  `ddp` and `horovod` are what users run today, `ddp-tuned` DDP at its
 * best bucket_cap_mb (usbyte/reference.h).
 * `best` must stay last: it searches from the others and is floored by the references. */
#define UB_POLICY_LIST(X)                                 \
    X(WFBP, "wfbp", ub_policy_wfbp)                       \
    X(SYNCEA, "syncea", ub_policy_syncea)                 \
    X(MGWFBP, "mgwfbp", ub_policy_mgwfbp)                 \
    X(MGWFBP_DP, "mgwfbp-dp", ub_policy_mgwfbp_dp)        \
    X(BYTESCHEDULER, "bytescheduler", ub_policy_bytescheduler) \
    X(USBYTE, "usbyte", ub_policy_usbyte)                 \
    X(DDP, "ddp", ub_policy_ddp)                          \
    X(DDP_TUNED, "ddp-tuned", ub_policy_ddp_tuned)        \
    X(HOROVOD, "horovod", ub_policy_horovod)              \
    X(BEST, "best", ub_policy_best)

typedef enum {
#define X(e, name, fn) UB_POLICY_##e,
    UB_POLICY_LIST(X)
#undef X
    UB_POLICY_COUNT
} ub_policy_id;

/* A policy fills `out` (initialised by the caller, cleared by the policy) with a valid plan
 * for a valid profile whose net is set; it is a pure function of the profile.  Returns 0, or
 * -1 only when the profile has no calls to plan. */
typedef int (*ub_policy_fn)(const ub_profile *prof, ub_plan *out);

#define X(e, name, fn) int fn(const ub_profile *prof, ub_plan *out);
UB_POLICY_LIST(X)
#undef X

const char *ub_policy_name(ub_policy_id id);
int ub_policy_parse(const char *name);  /* -1 when unknown */

/* Runs one policy, evaluates its plan (block times, iteration, lower bound) and records
 * plan_seconds.  Returns the policy's status. */
int ub_policy_run(ub_policy_id id, const ub_profile *prof, ub_plan *out);

/* Every policy on one profile, the way the runtime and usbyte-sim plan: each through
 * ub_policy_run (evaluated), each plan checked with ub_plan_validate, and `best` searching from
 * the other policies' plans (computed once; its plan_seconds includes theirs).  plans[] must
 * be initialised by the caller.  A policy that fails or returns an invalid plan leaves its plan
 * empty with iteration NAN.  Returns 0 when every policy gave a valid plan, else -1 with one
 * line in err (may be NULL) naming the first policy that did not and why. */
int ub_plan_every(const ub_profile *prof, ub_plan plans[UB_POLICY_COUNT], char *err, size_t errlen);

/* ub_plan_every, keeping only what the runtime needs: every policy's predicted iteration
 * (NAN where a policy failed) and a copy of the plan of policy `chosen` in chosen_plan
 * (initialised by the caller).  Returns 0, or -1 when `chosen` is not a policy or failed. */
int ub_plan_all(const ub_profile *prof, int chosen, double iteration[UB_POLICY_COUNT], ub_plan *chosen_plan);

#endif
