/* The process's report (report_rt.c). */
#ifndef USBYTE_REPORT_RT_H
#define USBYTE_REPORT_RT_H

#include "state.h"

/* The versions, libraries and GPU for the report, learnt once (the first agreement). */
void ub_report_learn_versions(void);
/* Lock held on entry and return; unlock_for_io: released while the file is written (never at exit). */
void ub_state_write_reports(bool unlock_for_io);
/* At exit, when no communicator was seen: one line (NCCL linked statically?) and a report that
 * says so, unless a file is at the report's path already. */
void ub_report_no_communicator(void);

#endif
