/* The MODEL.md timing model: validity, the timeline evaluator and the lower bound. */
#ifndef USBYTE_MODEL_H
#define USBYTE_MODEL_H

#include <stddef.h>

#include "usbyte/plan.h"
#include "usbyte/profile.h"

/* 0 when the plan is valid for the profile; otherwise -1 and one line in err naming the
 * block/segment and what is wrong. */
int ub_plan_validate(const ub_profile *prof, const ub_plan *plan, char *err, size_t errlen);

/* Evaluates a valid plan: fills every block's start/end and plan->iteration, and returns the
 * iteration time. call_completion (n_calls doubles) may be NULL. */
double ub_evaluate(const ub_profile *prof, ub_plan *plan, double *call_completion);

/* The same timeline, without touching the plan (for searches that evaluate candidates). */
double ub_evaluate_const(const ub_profile *prof, const ub_plan *plan, double *call_completion);

/* Rule 6 of MODEL.md. */
double ub_lower_bound(const ub_profile *prof);

/* Duration of one block of `bytes` bytes; staged when it holds segments of several calls. */
double ub_block_cost(const ub_profile *prof, double bytes, int staged);

#endif
