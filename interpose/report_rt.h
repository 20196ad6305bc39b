/* The process's report (report_rt.c). */
#ifndef USBYTE_REPORT_RT_H
#define USBYTE_REPORT_RT_H

#include "lock_contract.h"
#include "state.h"

/* The versions, libraries and GPU for the report, learnt once (the first agreement). */
void ub_report_learn_versions(void);
/* The report of every communicator seen, written with the lock released (an fsync may take a
 * while; other threads' hooks must not wait for it). */
void ub_state_write_reports(void) UB_REQUIRES_UNLOCKS(ub_state_mutex);
/* The same with the lock kept (at exit, where it may be a dead thread's). */
void ub_state_write_reports_held(void) UB_REQUIRES(ub_state_mutex);
/* At exit, when no communicator was seen: one line (NCCL linked statically?) and a report that
 * says so, unless a file is at the report's path already. */
void ub_report_no_communicator(void);

#endif
