/* The policy registry, generated from UB_POLICY_LIST, and `best`'s entry points, which run the
 * other policies of the registry before the search (best.c). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "order_internal.h"
#include "usbyte/clock.h"
#include "usbyte/model.h"
#include "usbyte/policy.h"
#include "usbyte/schedulers.h"

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

int ub_policy_run(ub_policy_id id, const ub_profile *prof, ub_plan *out)
{
    double t0 = ub_monotonic_s();
    double lb = ub_lower_bound(prof);
    double t_lb = ub_monotonic_s() - t0;
    int rc = ub_policy_run_bounded(id, prof, out, lb);
    if (id == UB_POLICY_BEST)
        out->plan_seconds += t_lb; /* best needs the bound to know when to stop */
    return rc;
}

int ub_policy_run_bounded(int id, const ub_profile *prof, ub_plan *out, double lower_bound)
{
    if (id < 0 || id >= UB_POLICY_COUNT)
        return -1;
    /* The clock only measures planning cost for the report; it never influences the plan. */
    double t0 = ub_monotonic_s();
    ub_plan_clear(out);
    memcpy(out->policy, names[id], strlen(names[id]) + 1);
    int rc = id == UB_POLICY_BEST ? ub_best_plan_bounded(prof, lower_bound, 1.0, out) : fns[id](prof, out);
    double spent = ub_monotonic_s() - t0;
    memcpy(out->policy, names[id], strlen(names[id]) + 1);
    if (rc == 0)
        ub_evaluate_with_bound(prof, out, lower_bound, NULL);
    out->plan_seconds = spent;
    return rc;
}

/* A policy's plan that cannot be used: emptied, iteration NAN; the first reason goes to err. */
static void reject(ub_plan *plan, const char *why, char *err, size_t errlen, int *rc)
{
    if (*rc == 0 && err && errlen)
        snprintf(err, errlen, "policy %s %s", plan->policy, why);
    *rc = -1;
    ub_plan_clear(plan);
    plan->iteration = NAN;
}

static void check(const ub_profile *prof, ub_plan *plan, int status, char *err, size_t errlen, int *rc)
{
    char why[512], msg[600];
    if (status != 0) {
        reject(plan, "failed on this profile", err, errlen, rc);
    } else if (ub_plan_validate(prof, plan, why, sizeof(why)) != 0) {
        snprintf(msg, sizeof(msg), "produced an invalid plan: %s", why);
        reject(plan, msg, err, errlen, rc);
    }
}

int ub_plan_every(const ub_profile *prof, ub_plan plans[UB_POLICY_COUNT], char *err, size_t errlen)
{
    int rc = 0;
    const ub_plan *starts[UB_POLICY_COUNT];
    int n_starts = 0;
    double t_lb = ub_monotonic_s();
    double lb = ub_lower_bound(prof);
    double others = ub_monotonic_s() - t_lb; /* best's time includes the bound, as ub_policy_run's does */
    for (int id = 0; id < UB_POLICY_COUNT; id++) {
        if (id == UB_POLICY_BEST)
            continue;
        int status = ub_policy_run_bounded(id, prof, &plans[id], lb);
        others += plans[id].plan_seconds;
        check(prof, &plans[id], status, err, errlen, &rc);
        if (plans[id].n_blocks > 0 && !ub_policy_is_reference(id))
            starts[n_starts++] = &plans[id];
    }
    ub_plan *best = &plans[UB_POLICY_BEST];
    double t0 = ub_monotonic_s();
    ub_plan_clear(best);
    memcpy(best->policy, names[UB_POLICY_BEST], strlen(names[UB_POLICY_BEST]) + 1);
    int status = ub_best_from_starts(prof, starts, n_starts, lb, 1.0, best);
    double spent = ub_monotonic_s() - t0;
    memcpy(best->policy, names[UB_POLICY_BEST], strlen(names[UB_POLICY_BEST]) + 1); /* the copy took the start's */
    if (status == 0) {
        ub_evaluate_with_bound(prof, best, lb, NULL);
        for (int id = 0; id < UB_POLICY_COUNT; id++)
            if (ub_policy_is_reference(id))
                ub_best_floor(&plans[id], best);
    }
    best->plan_seconds = spent + others; /* what ub_policy_best alone would have spent */
    check(prof, best, status, err, errlen, &rc);
    return rc;
}

int ub_plan_all(const ub_profile *prof, int chosen, double iteration[UB_POLICY_COUNT], ub_plan *chosen_plan)
{
    if (chosen < 0 || chosen >= UB_POLICY_COUNT)
        return -1;
    ub_plan plans[UB_POLICY_COUNT];
    for (int id = 0; id < UB_POLICY_COUNT; id++)
        ub_plan_init(&plans[id], names[id]);
    ub_plan_every(prof, plans, NULL, 0);
    for (int id = 0; id < UB_POLICY_COUNT; id++)
        iteration[id] = plans[id].iteration;
    int rc = plans[chosen].n_blocks > 0 ? 0 : -1;
    if (rc == 0)
        ub_plan_copy(chosen_plan, &plans[chosen]);
    for (int id = 0; id < UB_POLICY_COUNT; id++)
        ub_plan_free(&plans[id]);
    return rc;
}

/* `best`'s entry points: the registry runs every other policy for its starts, then the search
 * (best.c), which never calls the registry back. */
/* Runs every other policy but the references, evaluated against lb, into start[] (initialised
 * here); returns how many succeeded. */
static int run_starts(const ub_profile *prof, double lb, ub_plan *start)
{
    int n_start = 0;
    for (int id = 0; id < UB_POLICY_COUNT; id++) {
        if (id == UB_POLICY_BEST || ub_policy_is_reference(id))
            continue;
        ub_plan_init(&start[n_start], ub_policy_name(id));
        if (ub_policy_run_bounded(id, prof, &start[n_start], lb) != 0) {
            ub_plan_free(&start[n_start]);
            continue;
        }
        n_start++;
    }
    return n_start;
}

int ub_best_plan_bounded(const ub_profile *prof, double lb, double budget_scale, ub_plan *out)
{
    if (prof->n_calls <= 0)
        return -1;
    ub_plan start[UB_POLICY_COUNT];
    const ub_plan *view[UB_POLICY_COUNT] = {0};
    int n_start = run_starts(prof, lb, start);
    for (int k = 0; k < n_start; k++)
        view[k] = &start[k];
    int rc = ub_best_from_starts(prof, view, n_start, lb, budget_scale, out);
    for (int k = 0; k < n_start; k++)
        ub_plan_free(&start[k]);
    if (rc == 0)
        ub_evaluate_with_bound(prof, out, lb, NULL);
    for (int id = 0; rc == 0 && id < UB_POLICY_COUNT; id++) {
        if (!ub_policy_is_reference(id))
            continue;
        ub_plan ref;
        ub_plan_init(&ref, ub_policy_name(id));
        if (ub_policy_run_bounded(id, prof, &ref, lb) == 0)
            ub_best_floor(&ref, out);
        ub_plan_free(&ref);
    }
    return rc;
}

int ub_policy_best(const ub_profile *prof, ub_plan *out) { return ub_best_plan(prof, 1.0, out); }

int ub_best_plan(const ub_profile *prof, double budget_scale, ub_plan *out)
{
    if (prof->n_calls <= 0)
        return -1;
    return ub_best_plan_bounded(prof, ub_lower_bound(prof), budget_scale, out);
}
