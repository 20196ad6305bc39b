/* What the page's parts share (report_html.c: the frame and the run; report_html_comm.c: one
 * communicator's sections). */
#ifndef USBYTE_TOOLS_REPORT_HTML_H
#define USBYTE_TOOLS_REPORT_HTML_H

#include <stdbool.h>
#include <stdint.h>

#include "report.h"

#define esc sim_xml_text

/* A number the page derives (not copied from a report): data-v holds its exact value. */
void rp_derived(rp_page *pg, const char *tag, const char *attrs, double scale, int dec, double v);
/* "0-3, 5": the ranks of the job's reports whose flag is set. */
void rp_rank_list(rp_page *pg, const bool *on);
/* Calls shaped like PyTorch DDP's gradient buckets (report_html_ddp.c): at least two calls that
 * are neither the first nor the last of their dtype and op, the smallest of them at least half
 * their median (buckets closed at one cap; tensors alone vary far more). */
typedef struct rp_ddp_shape {
    int n_buckets, n_middle;           /* calls; those neither first nor last of their class */
    uint64_t min_middle, max_middle;   /* bytes of the smallest and largest of those */
} rp_ddp_shape;
bool rp_ddp_shaped(const ub_profile *p, rp_ddp_shape *out);
/* The profile with every call but the first of its class ready when the previous call of its
 * class was (if earlier) and needed no sooner than that one: the earliest any finer bucketing
 * of the same gradients could make their bytes ready.  out shares p's strings and forward; free
 * out->calls alone.  Returns 0. */
int rp_ddp_earliest(const ub_profile *p, ub_profile *out);
/* The DDP section of one communicator: nothing unless its calls are DDP-shaped. */
void rp_html_ddp(rp_page *pg, const rp_comm *c);
/* The sections of communicator `index`. */
void rp_html_comm(rp_page *pg, int index);

#endif
