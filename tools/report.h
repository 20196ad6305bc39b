/* usbyte-report's model of the runtime's report JSON (docs/runtime.md, "usbyte_report": 1):
 * loading and checking one rank's file, comparing the ranks of one job, and the two writers
 * (the HTML page and the Chrome trace).  Every loader error is one line naming the file, the
 * JSON place and what is wrong, e.g. "r-0.json: comms[0].fit.alpha: must be a number". */
#ifndef USBYTE_TOOLS_REPORT_H
#define USBYTE_TOOLS_REPORT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "sim.h"
#include "usbyte/plan.h"
#include "usbyte/policy.h"
#include "usbyte/profile.h"

#define RP_VERSION 1 /* the "usbyte_report" version this tool reads */

/* Schedule mode's measurements of one communicator (the report's "schedule" object). */
typedef struct rp_schedule {
    bool present;
    long iterations, deviations, flushes, staging_bytes;
    double measured_iteration, predicted_iteration, measured_pass_through;
    double measured_speedup, predicted_speedup;
    const char *completion;  /* "stream" or "call" */
    sim_span *blocks;        /* one steady iteration, plan order, relative to its start */
    int n_blocks;
} rp_schedule;

typedef struct rp_policy {
    const char *name;
    double iteration;
} rp_policy;

typedef struct rp_comm {
    const json_t *json;  /* the comm object inside the report's document */
    int index, rank, nranks;
    const char *state, *state_reason;  /* state_reason NULL when absent */
    long calls_per_iteration, nccl_calls_per_iteration, iterations_observed, warmup;
    double measured_iteration;
    bool have_profile;
    ub_profile profile;
    bool have_fit;
    double alpha, beta, rms, rel_rms, max_abs;
    long samples, distinct_sizes;
    const json_t *fit_flags;  /* array of strings */
    bool schedulable;
    int n_reasons;
    const char **reasons;
    int n_policies;
    rp_policy *policies;
    bool have_plan;
    ub_plan plan;          /* as reported, block times re-evaluated under the profile */
    double plan_reported;  /* the plan's "iteration" as written */
    int optimal;           /* plan's "optimal": -1 absent, 0 false, 1 true */
    bool has_lower_bound;  /* the plan carries "lower_bound" */
    rp_schedule schedule;
} rp_comm;

typedef struct rp_report {
    char *path;
    json_t *root;
    int rank, world_size;
    const char *usbyte_version, *mode, *policy;
    long nccl, cuda_runtime, cuda_driver;
    int n_comms;
    rp_comm *comms;
} rp_report;

/* Loads and checks one rank's report.  0, or -1 with one line in err (out left safe to free). */
int rp_load(const char *path, rp_report *out, char *err, size_t errlen);
int rp_from_json(json_t *root, const char *path, rp_report *out, char *err, size_t errlen);  /* takes root */
void rp_free(rp_report *r);

/* What must be identical on every rank of one communicator (docs/runtime.md) and is not. */
enum { RP_DIFF_STATE = 1, RP_DIFF_PROFILE = 2, RP_DIFF_VERDICT = 4, RP_DIFF_PLAN = 8, RP_DIFF_POLICIES = 16 };

/* The reports of one job, sorted by rank. */
typedef struct rp_job {
    int n;
    rp_report *r;
    int world_size;
    int n_comm_ids;
    int *comm_ids;  /* every communicator index seen, ascending */
} rp_job;

/* Sorts the reports by rank and checks that they are one job (same world size, distinct ranks).
 * Takes the array.  0, or -1 with one line in err. */
int rp_job_make(rp_job *job, rp_report *reports, int n, char *err, size_t errlen);
void rp_job_free(rp_job *job);
/* Communicator `index` in report r, or NULL. */
const rp_comm *rp_comm_find(const rp_report *r, int index);
/* The first report holding communicator `index`: the reference others are compared with. */
const rp_comm *rp_job_reference(const rp_job *job, int index, int *ref_report);
/* RP_DIFF_* bits where c differs from ref. */
int rp_comm_diff(const rp_comm *ref, const rp_comm *c);
/* "profile, plan" for the bits set; "" for none. */
void rp_diff_text(int bits, char *buf, size_t len);

/* The fix for a verdict reason or a pass-through state reason the runtime writes, or NULL when
 * none is known. */
const char *rp_hint(const char *reason);

/* Every policy's plan recomputed from the profile (index = ub_policy_id), the reported plan of
 * the chosen policy standing for it.  plans[] initialised here; free with rp_plans_free. */
void rp_plans(const rp_comm *c, ub_plan plans[UB_POLICY_COUNT]);
void rp_plans_free(ub_plan plans[UB_POLICY_COUNT]);

/* The writers: 0, or -1 with one line in err. */
int rp_write_html(const rp_job *job, const char *path, char *err, size_t errlen);
int rp_write_trace(const rp_job *job, const char *path, char *err, size_t errlen);

#endif
