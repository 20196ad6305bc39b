/* Process-wide state of the LD_PRELOAD runtime: configuration, logging, the reentrancy guard
 * and the life-cycle hooks (start, fork, exit).  Everything here is internal to libusbyte.so. */
#ifndef USBYTE_RUNTIME_H
#define USBYTE_RUNTIME_H

#include <stdatomic.h>
#include <stdbool.h>

#include "usbyte/config.h"

extern ub_config ub_cfg;

/* Loads the configuration once (thread-safe); every wrapper calls it first. */
void ub_runtime_init(void);

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

void ub_log(ub_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define ub_error(...) ub_log(UB_LOG_ERROR, __VA_ARGS__)
#define ub_warn(...) ub_log(UB_LOG_WARN, __VA_ARGS__)
#define ub_info(...) ub_log(UB_LOG_INFO, __VA_ARGS__)
#define ub_debug(...) ub_log(UB_LOG_DEBUG, __VA_ARGS__)
bool ub_log_enabled(ub_log_level level);
/* Whatever the level (USBYTE_DUMP_CONFIG). */
void ub_log_always(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Reopens the log destination (after fork, or once the configuration is known). */
void ub_log_open(void);

/* The wrappers' entry: true when the call must go straight to the real function. */
static inline bool ub_bypass(void)
{
    return atomic_load_explicit(&ub_passthrough_all, memory_order_relaxed) || ub_inside;
}

#endif
