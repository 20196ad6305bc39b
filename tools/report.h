/* usbyte-report's model of the runtime's report JSON (docs/runtime.md, "usbyte_report": 1):
 * loading and checking one rank's file, telling jobs apart, comparing the ranks of one job, and
 * the writers (the HTML page, the comparison page of two runs and the Chrome trace).  Every
 * loader error is one line naming the file, the JSON place and what is wrong, e.g.
 * "r-0.json: comms[0].fit.alpha: must be a number". */
#ifndef USBYTE_TOOLS_REPORT_H
#define USBYTE_TOOLS_REPORT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "sim.h"
#include "usbyte/plan.h"
#include "usbyte/policy.h"
#include "usbyte/profile.h"

#define RP_VERSION 1 /* the "usbyte_report" version this tool reads */

/* Count, mean, extremes and standard deviation of a rank's iteration times (seconds). */
typedef struct rp_spread {
    long n;
    double mean, min, max, stdev;  /* NAN when n is 0 */
} rp_spread;

/* One recorded iteration of schedule mode: its start and each plan block's [start, end], in
 * seconds from the recording's origin (NAN where a time was not read). */
typedef struct rp_rec_iteration {
    long iteration, run;
    double start;
    sim_span *blocks;  /* the plan's n_blocks */
} rp_rec_iteration;

/* Schedule mode's measurements of one communicator (the report's "schedule" object). */
typedef struct rp_schedule {
    bool present;
    long iterations, deviations, flushes, staging_bytes;
    double measured_iteration, predicted_iteration, measured_pass_through;
    double measured_speedup, predicted_speedup;
    const char *completion;  /* "stream" or "call" */
    bool pass_through_side_by_side;  /* measured_pass_through is the verification's, not the warm-up's */
    sim_span *blocks;        /* one steady iteration, plan order, relative to its start */
    int n_blocks;
    rp_spread spread;        /* this rank's steady iterations (n 0: not in the report) */
    double origin;           /* the recording's CLOCK_REALTIME origin, NAN: no recording */
    int n_rec;
    rp_rec_iteration *rec;
    uint32_t plan_blocks;    /* the held plan's blocks: each recorded iteration has as many */
    /* The plan schedule mode held at the report when it has other blocks than the chosen plan
     * (verification's candidate): the measured and recorded blocks are its. */
    bool has_plan;
    ub_plan plan;
} rp_schedule;

/* One candidate plan of schedule mode's verification. */
typedef struct rp_candidate {
    const char *policy;
    double predicted_iteration, measured_iteration, spread;  /* NAN: not measured */
    double refit_predicted_iteration;  /* the model re-fitted with its own blocks; NAN: not re-fitted */
    long iterations;
    bool refit;              /* planned again on the model re-fitted with a judged plan's blocks */
} rp_candidate;

/* The verification of the plan against pass-through (the report's "verification" object; older
 * reports have none: present false). */
typedef struct rp_verification {
    bool present;
    int n_candidates;
    rp_candidate *candidates;
    double pass_through_iteration, pass_through_spread;  /* NAN: not measured */
    long pass_through_iterations, checks, every, at_call;  /* at_call -1: no decision yet */
    const char *kept;        /* a policy, "pass-through", NULL before the first decision */
    const char *reason;
} rp_verification;

/* This rank's own warm-up measurements (the report's "local" object). */
typedef struct rp_local {
    bool present;
    rp_spread iteration;
    int n_ready;
    double *ready;           /* per call, relative to the iteration's first ready; NAN unknown */
    double origin;           /* the warm-up recording's CLOCK_REALTIME origin, NAN: none */
    int rec_iterations;
    double *rec;             /* rec_iterations x n_ready x {ready, start, end}, seconds from origin */
} rp_local;

typedef struct rp_policy {
    const char *name;
    double iteration;
} rp_policy;

typedef struct rp_comm {
    const json_t *json;  /* the comm object inside the report's document */
    int index, rank, nranks;
    const char *id;      /* the identity its ranks share; NULL when the report has none */
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
    rp_verification verification;
    rp_local local;
} rp_comm;

/* The run details of a rank (the report's "run" object; each NULL / NAN / -1 when absent). */
typedef struct rp_run {
    const char *started, *host, *command, *gpu;
    double started_unix;
    long pid, device;
} rp_run;

typedef struct rp_report {
    char *path;
    const char *arg;     /* the command-line argument it came from (a file, a glob, a directory) */
    json_t *root;
    int rank, world_size;
    const char *job_id;  /* NULL when the report has none */
    const char *usbyte_version, *mode, *policy;
    long nccl, cuda_runtime, cuda_driver;
    const char *nccl_library, *cudart_library;
    const json_t *config;  /* the "config" object, NULL when absent */
    rp_run run;
    int n_comms;
    rp_comm *comms;
} rp_report;

/* Loads and checks one rank's report.  0, or -1 with one line in err (out left safe to free). */
int rp_load(const char *path, rp_report *out, char *err, size_t errlen);
int rp_from_json(json_t *root, const char *path, rp_report *out, char *err, size_t errlen);  /* takes root */
void rp_free(rp_report *r);

/* What must be identical on every rank of one communicator (docs/runtime.md) and is not. */
enum { RP_DIFF_STATE = 1, RP_DIFF_PROFILE = 2, RP_DIFF_VERDICT = 4, RP_DIFF_PLAN = 8, RP_DIFF_POLICIES = 16 };

/* One thing the ranks of a job disagree on: a setting, or a communicator's agreed values. */
typedef struct rp_problem {
    int comm;    /* communicator index, -1 for the job's settings */
    int rank;    /* the rank whose values differ from the reference, -1 for a setting */
    int bits;    /* RP_DIFF_* (0 for a setting or a missing communicator) */
    char *text;  /* one line, e.g. "USBYTE_ALIGN differs: 512 on ranks 0, 2, 3; 256 on rank 1" */
} rp_problem;

/* The reports of one job, sorted by rank. */
typedef struct rp_job {
    int n;
    rp_report *r;
    int world_size;
    int n_comm_ids;
    int *comm_ids;  /* every communicator index seen, ascending */
    int n_problems;
    rp_problem *problems;  /* what the page, the summary and the exit status report */
} rp_job;

/* Sorts the reports by rank, checks that they are one job (same world size, distinct ranks) and
 * finds what the ranks disagree on.  Takes the array.  0, or -1 with one line in err. */
int rp_job_make(rp_job *job, rp_report *reports, int n, char *err, size_t errlen);
void rp_job_free(rp_job *job);
/* "0-2, 5": the ranks of the job's reports whose flag in `on` is set (allocated). */
char *rp_rank_ranges(const rp_job *job, const bool *on);
/* Communicator `index` in report r, or NULL. */
const rp_comm *rp_comm_find(const rp_report *r, int index);
/* The first report holding communicator `index`: the reference others are compared with. */
const rp_comm *rp_job_reference(const rp_job *job, int index, int *ref_report);
/* RP_DIFF_* bits where c differs from ref. */
int rp_comm_diff(const rp_comm *ref, const rp_comm *c);
/* "profile, plan" for the bits set; "" for none. */
void rp_diff_text(int bits, char *buf, size_t len);
/* The settings every rank must share (those the runtime agrees on). */
extern const char *const rp_agreed_settings[];
extern const int rp_n_agreed_settings;

/* Splits loaded reports into jobs: reports that share a communicator identity (or the job's) are
 * one job; reports without any identity (written by an older usbyte) form one job of their own.
 * group[i] receives report i's job number (0..return value - 1), numbered by first appearance. */
int rp_group_jobs(const rp_report *reports, int n, int *group);

/* What the page's headline says about a communicator. */
typedef enum { RP_SCHEDULED, RP_OBSERVED, RP_NOT_SCHEDULED } rp_outcome;
/* The outcome and, for RP_NOT_SCHEDULED and RP_OBSERVED, one line saying why (static, or the
 * communicator's state reason); *bad: the headline is red (not schedulable, the agreement
 * failed), else green or yellow. */
rp_outcome rp_comm_outcome(const rp_report *r, const rp_comm *c, const char **why, int *bad);

/* Does `shown` (a state reason) say `reason` again, whole or cut, after "not schedulable: "? */
bool rp_repeats(const char *shown, const char *reason);

/* The fix for a verdict reason or a pass-through state reason the runtime writes, or NULL when
 * none is known. */
const char *rp_hint(const char *reason);
/* One line about what a policy does, or NULL for a name this tool does not know. */
const char *rp_policy_about(const char *name);

/* Compute alone in one iteration: backward_end + gap + the forward segments (docs/model.md's
 * iteration with free communication); NAN without a profile. */
double rp_compute_alone(const rp_comm *c);

/* Every policy's plan recomputed from the profile (index = ub_policy_id), the reported plan of
 * the chosen policy standing for it.  plans[] initialised here; free with rp_plans_free. */
void rp_plans(const rp_comm *c, ub_plan plans[UB_POLICY_COUNT]);
void rp_plans_free(ub_plan plans[UB_POLICY_COUNT]);

/* The writers: 0, or -1 with one line in err. */
int rp_write_html(const rp_job *job, const char *path, char *err, size_t errlen);
int rp_write_trace(const rp_job *job, const char *path, char *err, size_t errlen);
/* Two runs side by side (labels: how each was named on the command line). */
int rp_write_compare(const rp_job *a, const char *label_a, const rp_job *b, const char *label_b, const char *path,
                     char *err, size_t errlen);

/* Shared by the page writers (report_html*.c, report_compare.c). */
typedef struct rp_page {
    FILE *f;
    const rp_job *job;
} rp_page;
void rp_out(rp_page *pg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A number from rank `rank`'s report at JSON place `where` (printf-formatted), shown times
 * `scale` with `dec` decimals (dec < 0: %.4e), in element `tag` with extra attributes; a dash
 * when it is not finite. */
void rp_num(rp_page *pg, const char *tag, const char *attrs, int rank, double scale, int dec, double v,
            const char *where, ...) __attribute__((format(printf, 8, 9)));
/* "2.28.9" from NCCL_VERSION_CODE (nccl set) or "13.0" from a CUDA version; "?" when < 0. */
const char *rp_version_text(long v, char *buf, size_t len, int nccl);
/* The page's style, script, and the opening of a page titled `title` (escaped). */
extern const char rp_style[], rp_script[];
void rp_page_open(rp_page *pg, const char *title);
void rp_page_close(rp_page *pg);
/* The settings every rank should share, as text for the comparison and run details. */
const char *rp_setting(const rp_report *r, const char *name, char *buf, size_t len);

#endif
