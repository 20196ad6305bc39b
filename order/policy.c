/* The policy registry, generated from UB_POLICY_LIST. */
#include <string.h>
#include <time.h>

#include "usbyte/model.h"
#include "usbyte/policy.h"

static const char *const names[] = {
#define X(e, name, fn) name,
    UB_POLICY_LIST(X)
#undef X
};

static const ub_policy_fn fns[] = {
#define X(e, name, fn) fn,
    UB_POLICY_LIST(X)
#undef X
};

const char *ub_policy_name(ub_policy_id id) { return (unsigned)id < UB_POLICY_COUNT ? names[id] : "?"; }

int ub_policy_parse(const char *name)
{
    for (int i = 0; name && i < UB_POLICY_COUNT; i++)
        if (strcmp(names[i], name) == 0)
            return i;
    return -1;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int ub_policy_run(ub_policy_id id, const ub_profile *prof, ub_plan *out)
{
    /* The clock only measures planning cost for the report; it never influences the plan. */
    double t0 = now();
    ub_plan_clear(out);
    memcpy(out->policy, names[id], strlen(names[id]) + 1);
    int rc = fns[id](prof, out);
    double spent = now() - t0;
    memcpy(out->policy, names[id], strlen(names[id]) + 1);
    if (rc == 0)
        ub_evaluate(prof, out, NULL);
    out->plan_seconds = spent;
    return rc;
}
