/* Shared pieces of usbyte-sim: network presets, the per-policy results it prints, the SVG
 * timeline.  Everything here is reporting; the plans come from the policy registry. */
#ifndef USBYTE_TOOLS_SIM_H
#define USBYTE_TOOLS_SIM_H

#include <stdbool.h>
#include <stdio.h>

#include "usbyte/plan.h"
#include "usbyte/policy.h"
#include "usbyte/profile.h"

/* A network preset: per-step latency a0 and per-byte time b0 of a ring allreduce, which for
 * p ranks costs 2(p-1)*a0 + 2(p-1)/p * M * b0 (docs/model.md). */
typedef struct sim_net {
    const char *name;
    double a0, b0;
    const char *source;
} sim_net;

const sim_net *sim_net_find(const char *name);  /* NULL when unknown */
/* The list, for --help and error messages: "10gbe, 56gb-ib, ..." */
void sim_net_names(char *buf, size_t len);
void sim_net_apply(const sim_net *net, int ranks, double *alpha, double *beta);
extern const sim_net sim_nets[];
extern const int sim_n_nets;

/* A measured allreduce curve (usbyte-sim --net-table): rows of bytes (rising) and seconds, the
 * in-place column when every row has one.  The time of M bytes is linear between rows, the first
 * row's time below it and the last row's time times the ratio of bytes above it. */
#define SIM_NET_TABLE_MAX (UB_NET_MAX_SEGMENTS - 1)
typedef struct sim_net_table {
    int n;
    bool has_inplace;
    double bytes[SIM_NET_TABLE_MAX], out_s[SIM_NET_TABLE_MAX], in_s[SIM_NET_TABLE_MAX];
} sim_net_table;

/* 0, or -1 with one line in err naming the file and the line. */
int sim_net_table_load(const char *path, sim_net_table *t, char *err, size_t errlen);
/* The table as the cost function's segments (the in-place column when it has one); not
 * necessarily monotone: posted tables have spikes. */
int sim_net_table_curve(const sim_net_table *t, ub_net_curve *out);

/* The profile with the table's curve as its cost (a plan evaluated on it is "on the curve"). */
void sim_table_profile(const ub_profile *prof, const sim_net_table *t, ub_profile *on_curve);

/* The planner's model of a table as the runtime fits it: samples at the profile's call sizes
 * read off the table, plus (SIM_MODEL_FIT) its calibration sizes (ub_calibration_sizes), fitted
 * by ub_fit_cost_model; SIM_MODEL_LINE is the one line of ub_fit_linear on the call sizes.  Sets
 * prof's alpha, beta and curve; *n_probes (may be NULL) the calibration sizes used. */
typedef enum { SIM_MODEL_FIT, SIM_MODEL_LINE } sim_model_kind;
int sim_model_from_table(ub_profile *prof, const sim_net_table *t, sim_model_kind kind, int *n_probes);

/* The line fitted (relative least squares) to the table's rows between lo and hi bytes. */
void sim_line_on_rows(const sim_net_table *t, double lo, double hi, ub_profile *prof);

/* A model's relative error against the table's rows between lo and hi bytes; with held_out, only
 * the rows whose size is none of the sizes the model's profile samples (its calls' and its
 * calibration sizes), i.e. where the model interpolates. */
typedef struct sim_error {
    double median, max;
    int rows;
} sim_error;
void sim_model_error(const ub_profile *model, const sim_net_table *t, double lo, double hi, bool held_out,
                     sim_error *out);

/* One evaluated plan per selected policy (index = ub_policy_id; `used` marks the selected). */
typedef struct sim_result {
    int used;
    ub_plan plan;
} sim_result;

/* The forward segments' start times under a plan (n_forward doubles), from its call completions. */
void sim_forward_starts(const ub_profile *prof, const double *call_completion, double *starts);

/* A stretch of time (seconds from the iteration's start), e.g. one block that was really run. */
typedef struct sim_span {
    double start, end;
} sim_span;

/* What the timeline draws besides the plans.  Zeroed: the simulator's plain timeline. */
typedef struct sim_svg_opts {
    const char *title;     /* heading before the profile's name; NULL: "usbyte-sim timeline" */
    const char *subtitle;  /* may be NULL */
    /* Blocks measured in one steady iteration, drawn as a lane under plans[measured_plan]
     * (ignored when n_measured is 0 or measured_plan is out of range). */
    const sim_span *measured;
    int n_measured;
    int measured_plan;
} sim_svg_opts;

/* Writes a self-contained SVG timeline of the given plans (n of them, drawn in order) to f:
 * the backward compute with a tick per call's ready time, then per plan its link blocks, its
 * forward segments and the iteration's end.  Shapes carry classes (ub-ready, ub-block,
 * ub-forward, ub-measured, ub-end) and each plan's lanes are one <g class="ub-policy"
 * data-policy=NAME>, so that pages embedding it and tests can find them.  Returns 0, or -1 when
 * the stream reports a write error. */
int sim_svg_emit(FILE *f, const ub_profile *prof, const ub_plan *const *plans, int n, const sim_svg_opts *opts);

/* sim_svg_emit into a new file at path (subtitle may be NULL).  Returns 0, or -1 with a
 * one-line message in err. */
int sim_svg_write(const char *path, const ub_profile *prof, const ub_plan *const *plans, int n, const char *subtitle,
                  char *err, size_t errlen);

/* Writes s with XML's special characters escaped (and control characters dropped): for SVG and
 * HTML text and attribute values. */
void sim_xml_text(FILE *f, const char *s);

#endif
