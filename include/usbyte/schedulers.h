/* ByteScheduler and US-Byte with their parameters fixed, for tests and for tools that want to
 * show one point of the grid the policies search (docs/policies-advanced.md). */
#ifndef USBYTE_SCHEDULERS_H
#define USBYTE_SCHEDULERS_H

#include <stdbool.h>
#include <stdint.h>

#include "usbyte/plan.h"
#include "usbyte/profile.h"

/* ByteScheduler's dynamic policy simulated on the profile with one partition size (bytes, a
 * multiple of 8) and credit (partitions in flight); the posting order is the plan.  Returns
 * the model's iteration time, or -1 for a profile without calls. */
double ub_bytescheduler_plan(const ub_profile *prof, uint64_t partition, int credit, ub_plan *out);

/* US-Byte with one unit (bytes, a multiple of 8): Algorithms 1-2, and Algorithm 3's priority
 * adjustment when `adjust` (unbounded trials).  Returns the model's iteration time, or -1. */
double ub_usbyte_plan(const ub_profile *prof, uint64_t unit, bool adjust, ub_plan *out);

/* `best` with its search budget multiplied by budget_scale (the policy is 1): for tests of
 * convergence and of monotonicity (a larger budget never gives a slower plan). */
int ub_best_plan(const ub_profile *prof, double budget_scale, ub_plan *out);

#endif
