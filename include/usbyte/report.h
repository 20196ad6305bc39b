/* The per-rank report of the runtime (docs/design.md section 8): what was measured per
 * communicator, what every policy would gain and the chosen plan, who ran it where, and this
 * rank's own measurements beside the agreed ones.  Pure JSON building and an atomic file write
 * (usbyte/atomic_write.h); no CUDA, so it is safe at exit.  Texts are never cut: the reasons are
 * allocated to their length. */
#ifndef USBYTE_REPORT_H
#define USBYTE_REPORT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "usbyte/calibrate.h"
#include "usbyte/config.h"
#include "usbyte/fit.h"
#include "usbyte/plan.h"
#include "usbyte/policy.h"
#include "usbyte/profile.h"
#include "usbyte/verify.h"

/* Count, mean, extremes and standard deviation of some durations (seconds); n == 0: none. */
typedef struct ub_spread {
    int n;
    double mean, min, max, stdev;
} ub_spread;

/* The spread of the n finite values of v (NANs skipped). */
ub_spread ub_spread_of(const double *v, int n);
/* {"n", "mean", "min", "max", "stdev"} (null where undefined). */
json_t *ub_spread_json(const ub_spread *s);

/* What this rank measured itself, before the agreement took the maximum over the ranks: the
 * straggler view of the report compares these across ranks. */
typedef struct ub_rank_local {
    ub_spread iteration;        /* this rank's warm-up iterations, first ready to next first ready */
    int n_calls;
    double *ready;              /* per call: this rank's mean ready time, relative to its iteration's first */
    /* The warm-up as it happened: per iteration and call its ready, start and end times on the
     * host's CLOCK_REALTIME, in seconds from `origin` (NAN where unmeasured). */
    double origin;              /* CLOCK_REALTIME seconds; NAN: no recording */
    int rec_iterations;
    double *rec;                /* rec_iterations x n_calls x 3 */
} ub_rank_local;

typedef struct ub_comm_report {
    int index;                  /* creation order in this process */
    uint64_t id;                /* the communicator's identity, the same on each of its ranks: a hash of
                                   the ncclUniqueId it was created from (derived from the parent's for a
                                   split); 0 unknown */
    unsigned children;          /* communicators split or shrunk from this one so far: the next one's
                                   identity derives from this count (the same on every rank, as splits
                                   are collective over the parent) */
    int rank, nranks;
    const char *state;          /* "detect", "profile", "planned", "pass-through", ... */
    bool profiling;             /* detect or profile: the plans, if any, are a previous decision's */
    char state_reason[256];     /* why pass-through/disabled (short: the verdict's reasons say the
                                   rest); "" otherwise */
    int calls_per_iteration;    /* allreduces per iteration (the profile's calls); 0 unknown */
    uint32_t nccl_calls_per_iteration;  /* every NCCL call of the period */
    uint64_t iterations_observed;       /* whole iterations seen since the period was found */
    double measured_iteration;  /* agreed mean iteration time of the warm-up, seconds */
    int warmup;                 /* iterations profiled */
    /* this rank: the warm-up iterations its contribution covers (their timing had all completed
     * when the agreement was issued), a bit each (USBYTE_WARMUP is at most 1000) */
    uint64_t warmup_used[16];

    bool have_profile;
    ub_profile profile;         /* agreed, times relative to the first call's ready */
    ub_fit_result fit;
    ub_fit_sample *fit_samples; /* what the net was fitted on (the calls', calibration's probes) */
    size_t n_fit_samples;

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
    char **reasons;             /* n_reasons texts, each allocated; none and no profile: the report
                                   says "not profiled yet", or a disabled record's state_reason */

    bool have_plans;
    bool stream_completion;     /* the plans complete calls in stream order (USBYTE_COMPLETION as
                                   agreed; else each call by its own event) */
    double policy_iteration[UB_POLICY_COUNT];
    int chosen;                 /* ub_policy_id of `plan` */
    ub_plan plan;
    double other_completion;    /* the chosen policy under the other completion semantics; NAN: none */
    char completion_note[300];  /* what that would give, or why it was refused; "" for nothing */

    ub_rank_local local;
} ub_comm_report;

void ub_comm_report_init(ub_comm_report *r);
void ub_comm_report_free(ub_comm_report *r);
/* Adds a reason (nothing when out of memory); ub_comm_report_clear_reasons drops them all. */
void ub_comm_report_add_reason(ub_comm_report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ub_comm_report_clear_reasons(ub_comm_report *r);
/* Replaces the rank-local measurements (takes ready and rec, which may be NULL). */
void ub_comm_report_set_local(ub_comm_report *r, const ub_rank_local *l);
/* "0123456789abcdef": 16 hex digits of an identity. */
void ub_comm_id_text(uint64_t id, char out[17]);

typedef struct ub_versions {
    const char *usbyte;
    int nccl;           /* NCCL_VERSION_CODE, 0 unknown */
    int cuda_runtime;   /* cudaRuntimeGetVersion, 0 unknown */
    int cuda_driver;    /* cudaDriverGetVersion, 0 unknown */
    const char *nccl_library;    /* the file the real NCCL functions come from; NULL unknown */
    const char *cudart_library;  /* the CUDA runtime's file; NULL unknown */
} ub_versions;

/* Who ran what where: the run details of the report (each may be NULL / NAN when unknown). */
typedef struct ub_run_info {
    double started;             /* CLOCK_REALTIME seconds when usbyte started in this process */
    const char *host;
    long pid;
    const char *command;        /* the process's command line, arguments quoted where needed */
    const char *gpu;            /* the CUDA device's name */
    int device;                 /* its ordinal, -1 unknown */
    /* USBYTE_* variables whose value was refused (the default was used): name = value given */
    int n_ignored;
    const char *ignored_name[32], *ignored_value[32];
} ub_run_info;

json_t *ub_comm_report_json(const ub_comm_report *r);
/* comms[].verification: the candidates tried, what each measured, what was kept and why. */
json_t *ub_verify_report_json(const ub_verify_report *v);
/* comms[].calibration: the probe sizes, the agreed times, the call indices, the plan before. */
json_t *ub_calib_report_json(const ub_calib_report *k);
json_t *ub_report_json(int rank, int world_size, const ub_config *cfg, const ub_versions *v,
                       const ub_run_info *run, const ub_comm_report *const *comms, int n);
/* Writes doc to path with ub_write_file_atomic (a unique temporary in path's directory, fsync,
 * rename; only a regular file or a missing path is replaced).  0, or -1 with one line in err. */
int ub_report_write(const char *path, const json_t *doc, char *err, size_t errlen);

#endif
