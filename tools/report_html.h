/* What the page's parts share (report_html.c: the frame and the run; report_html_comm.c: one
 * communicator's sections). */
#ifndef USBYTE_TOOLS_REPORT_HTML_H
#define USBYTE_TOOLS_REPORT_HTML_H

#include <stdbool.h>

#include "report.h"

#define esc sim_xml_text

/* A number the page derives (not copied from a report): data-v holds its exact value. */
void rp_derived(rp_page *pg, const char *tag, const char *attrs, double scale, int dec, double v);
/* "0-3, 5": the ranks of the job's reports whose flag is set. */
void rp_rank_list(rp_page *pg, const bool *on);
/* The sections of communicator `index`. */
void rp_html_comm(rp_page *pg, int index);

#endif
