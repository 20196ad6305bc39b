/* What users run today, as reference policies: PyTorch DDP's gradient buckets (order/ddp.c) and
 * Horovod's tensor fusion (order/horovod.c), evaluated under the same model as every other policy
 * (docs/planner.md says how each is modelled and where it departs from the framework). */
#ifndef USBYTE_REFERENCE_H
#define USBYTE_REFERENCE_H

#include <stdint.h>

#include "usbyte/plan.h"
#include "usbyte/profile.h"

/* The frameworks' defaults: dist._DEFAULT_FIRST_BUCKET_BYTES and bucket_cap_mb = 25 (MiB, as DDP
 * converts it: int(25 * 1024 * 1024)); HOROVOD_CYCLE_TIME = 1 ms and HOROVOD_FUSION_THRESHOLD =
 * 128 MiB (the defaults since Horovod 0.21). */
#define UB_DDP_FIRST_BUCKET_DEFAULT ((uint64_t)1 << 20)
#define UB_DDP_BUCKET_DEFAULT ((uint64_t)25 << 20)
#define UB_HOROVOD_CYCLE_DEFAULT 1e-3
#define UB_HOROVOD_THRESHOLD_DEFAULT ((uint64_t)128 << 20)

typedef struct ub_reference_settings {
    uint64_t ddp_first_bucket;   /* bytes: the first bucket of each dtype closes at this size */
    uint64_t ddp_bucket;         /* bytes: every later bucket closes at this size */
    double horovod_cycle;        /* seconds between Horovod's background cycles (>= 0) */
    uint64_t horovod_threshold;  /* bytes: the largest fused buffer (0: no fusion) */
} ub_reference_settings;

/* The settings the `ddp` and `horovod` policies of the registry use.  Process-wide and not
 * synchronised: a tool sets them once before it plans anything (usbyte-sim from its options);
 * the runtime never changes them, so every rank plans with the frameworks' defaults.  NULL
 * restores the defaults. */
void ub_reference_set(const ub_reference_settings *s);
ub_reference_settings ub_reference_get(void);

/* DDP's bucket assignment with the given caps (bytes).  Returns 0, -1 for a profile without
 * calls.  `out` is cleared first; params records the caps. */
int ub_ddp_plan(const ub_profile *prof, uint64_t first_cap, uint64_t cap, ub_plan *out);

/* The largest bucket_cap_mb (MiB) the `ddp-tuned` policy tries. */
#define UB_DDP_TUNED_MAX_MB 1000

/* DDP's bucket assignment at the best setting of its knobs: bucket_cap_mb swept from 1 to
 * UB_DDP_TUNED_MAX_MB MiB, the first bucket 1 MiB or equal to the cap, (first_cap, cap) tried
 * first and kept on a tie; each plan evaluated with ub_evaluate_const.  Returns 0, -1 for a
 * profile without calls.  params names the chosen cap and first bucket (MiB). */
int ub_ddp_tuned_plan(const ub_profile *prof, uint64_t first_cap, uint64_t cap, ub_plan *out);

/* Horovod's cycles and fusion with the given cycle (seconds, >= 0; 0: a cycle at every ready
 * time) and threshold (bytes).  Returns 0, -1 for a profile without calls or a negative or
 * non-finite cycle. */
int ub_horovod_plan(const ub_profile *prof, double cycle, uint64_t threshold, ub_plan *out);

#endif
