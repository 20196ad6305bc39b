/* The runtime's log (log.c): one line per message, prefixed with the rank, to USBYTE_LOG_FILE or
 * stderr, at or above USBYTE_LOG's level; and the names of NCCL's results in its lines. */
#ifndef USBYTE_LOG_H
#define USBYTE_LOG_H

#include <stdbool.h>

#include <nccl.h>

#include "usbyte/config.h"

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
/* "ncclRemoteError", ...: an ncclResult_t in a diagnostic ("ncclResult 9" when unknown). */
const char *ub_nccl_result_name(ncclResult_t r);

#endif
