/* The MODEL.md timing model: validity, the timeline evaluator and the lower bound. */
#ifndef USBYTE_MODEL_H
#define USBYTE_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "usbyte/plan.h"
#include "usbyte/profile.h"

/* The granularity of cuts inside call k: its element size, or the least common multiple of
 * that and prof->align when the call is larger than align.  UINT64_MAX when that multiple
 * does not fit (no cut is possible then).  A segment's offset and end must be multiples of
 * it, except an end at the call's last byte. */
uint64_t ub_cut_quantum(const ub_profile *prof, int k);

/* The largest allowed cut of call k at or below `offset` (0 when there is none). */
uint64_t ub_cut_floor(const ub_profile *prof, int k, uint64_t offset);

/* May a block of `bytes` total that holds segments of more than one call go through the
 * staging buffer (bytes <= staging_max, or no limit)? */
bool ub_staging_fits(const ub_profile *prof, double bytes);

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
