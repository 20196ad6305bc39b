/* The process globals every layer reads (globals.h): the configuration, the pass-through switch,
 * the rank and world size, the start time, whether the report's directory is usable, and the
 * reentrancy guard's depth.  Set by runtime.c at the first wrapped call (the rank, world size and
 * report directory later, when they are learnt); at the bottom of the layers, so that reading them
 * pulls in nothing. */
#include "globals.h"

ub_config ub_cfg;
atomic_bool ub_passthrough_all = true;  /* until the configuration says otherwise */
_Thread_local int ub_inside;
atomic_int ub_rank = -1;
double ub_started_unix;
atomic_int ub_world = -1;
atomic_bool ub_report_dir_bad;
