/* The per-rank report of the runtime (docs/design.md section 8): what was measured per
 * communicator, what every policy would gain and the chosen plan.  Pure JSON building and an
 * atomic file write (usbyte/atomic_write.h); no CUDA, so it is safe at exit. */
#ifndef USBYTE_REPORT_H
#define USBYTE_REPORT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "usbyte/config.h"
#include "usbyte/fit.h"
#include "usbyte/plan.h"
#include "usbyte/policy.h"
#include "usbyte/profile.h"

#define UB_REPORT_MAX_REASONS 8

typedef struct ub_comm_report {
    int index;                  /* creation order in this process */
    int rank, nranks;
    const char *state;          /* "detect", "profile", "planned", "pass-through", ... */
    char state_reason[256];     /* why pass-through/disabled; "" otherwise */
    int calls_per_iteration;    /* allreduces per iteration (the profile's calls); 0 unknown */
    uint32_t nccl_calls_per_iteration;  /* every NCCL call of the period */
    uint64_t iterations_observed;       /* whole iterations seen since the period was found */
    double measured_iteration;  /* agreed mean iteration time of the warm-up, seconds */
    int warmup;                 /* iterations profiled */

    bool have_profile;
    ub_profile profile;         /* agreed, times relative to the first call's ready */
    ub_fit_result fit;

    /* pattern: what was detected */
    int ready_upstream_calls;   /* calls whose ready time came from the producer's event */
    int ready_fallback_calls;   /* calls measured on the NCCL stream instead */
    int merge_barriers;         /* calls with "merge": false */
    int need_segments;          /* distinct forward segments */
    int consumers_stream, consumers_host;  /* waits on call completion seen on this rank */
    int consumers_host_other;   /* host waits from a thread that does not issue the calls: not
                                   needs (they cannot hold back the next call), only counted */
    bool end_records;           /* events recorded on the NCCL stream after calls */
    double stream_ordered;      /* operations on the NCCL stream between collectives (max over ranks) */
    char stream_ordered_example[80];
    bool cupti;                 /* CUPTI watched the warm-up */
    char cupti_detail[200];
    int other_calls;            /* non-allreduce NCCL calls per iteration */

    bool schedulable;
    int n_reasons;
    char reasons[UB_REPORT_MAX_REASONS][320];

    bool have_plans;
    double policy_iteration[UB_POLICY_COUNT];
    int chosen;                 /* ub_policy_id of `plan` */
    ub_plan plan;
} ub_comm_report;

void ub_comm_report_init(ub_comm_report *r);
void ub_comm_report_free(ub_comm_report *r);
void ub_comm_report_add_reason(ub_comm_report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

typedef struct ub_versions {
    const char *usbyte;
    int nccl;           /* NCCL_VERSION_CODE, 0 unknown */
    int cuda_runtime;   /* cudaRuntimeGetVersion, 0 unknown */
    int cuda_driver;    /* cudaDriverGetVersion, 0 unknown */
} ub_versions;

json_t *ub_comm_report_json(const ub_comm_report *r);
json_t *ub_report_json(int rank, int world_size, const ub_config *cfg, const ub_versions *v,
                       const ub_comm_report *const *comms, int n);
/* Writes doc to path with ub_write_file_atomic (a unique temporary in path's directory, fsync,
 * rename; only a regular file or a missing path is replaced).  0, or -1 with one line in err. */
int ub_report_write(const char *path, const json_t *doc, char *err, size_t errlen);

#endif
