/* The policies of MODEL.md, one X-macro list: the registry, the simulator's --policy names
 * and the report's policy table are all generated from it. */
#ifndef USBYTE_POLICY_H
#define USBYTE_POLICY_H

#include <stddef.h>

#include "usbyte/plan.h"
#include "usbyte/profile.h"

/* X(ENUM, name, function).  `best` must stay last: it starts from all the others. */
#define UB_POLICY_LIST(X)                                 \
    X(WFBP, "wfbp", ub_policy_wfbp)                       \
    X(SYNCEA, "syncea", ub_policy_syncea)                 \
    X(MGWFBP, "mgwfbp", ub_policy_mgwfbp)                 \
    X(MGWFBP_DP, "mgwfbp-dp", ub_policy_mgwfbp_dp)        \
    X(BYTESCHEDULER, "bytescheduler", ub_policy_bytescheduler) \
    X(USBYTE, "usbyte", ub_policy_usbyte)                 \
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

#endif
