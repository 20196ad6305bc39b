/* Shared pieces of usbyte-sim: network presets, the per-policy results it prints, the SVG
 * timeline.  Everything here is reporting; the plans come from the policy registry. */
#ifndef USBYTE_TOOLS_SIM_H
#define USBYTE_TOOLS_SIM_H

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
