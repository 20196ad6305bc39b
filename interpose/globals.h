/* The process globals every layer reads (globals.c): the configuration, the rank, the start time
 * and the reentrancy guard's depth.  Everything here is internal to libusbyte.so. */
#ifndef USBYTE_GLOBALS_H
#define USBYTE_GLOBALS_H

#include <stdatomic.h>
#include <stdbool.h>

#include "usbyte/config.h"

extern ub_config ub_cfg;

/* Off: the whole library forwards; set by USBYTE_MODE=off and in a forked child. */
extern atomic_bool ub_passthrough_all;

/* Nonzero while usbyte itself runs on this thread: calls we make to the real functions, and
 * callbacks (CUPTI) they trigger, must not be observed as the application's. */
extern _Thread_local int ub_inside;

/* CLOCK_REALTIME seconds when usbyte started in this process (the report's start time). */
extern double ub_started_unix;

/* Process rank for log prefixes and %r: RANK from the environment, else the first
 * communicator's rank; -1 while unknown. */
extern atomic_int ub_rank;
extern atomic_int ub_world;
/* The report's directory was found missing or not writable at start-up (said then, once). */
extern atomic_bool ub_report_dir_bad;

/* The wrappers' entry: true when the call must go straight to the real function. */
static inline bool ub_bypass(void)
{
    return atomic_load_explicit(&ub_passthrough_all, memory_order_relaxed) || ub_inside;
}

#endif
