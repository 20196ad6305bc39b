/* Memory for the planner's working arrays (partition/, order/, tools/).  A planner that runs
 * out of memory mid-plan has nothing sensible to fall back to, so these print one line,
 * "usbyte: out of memory <what>", and abort.  Code that can report failure to its caller
 * instead (profile and plan readers, ub_plan_validate, the synthetic profiles) does not use
 * them. */
#ifndef USBYTE_ALLOC_H
#define USBYTE_ALLOC_H

#include <stddef.h>
#include <stdint.h>

/* realloc(p, bytes) (a zero size asks for one byte, so NULL never means "empty"); `what` is a
 * printf format naming what was being done, e.g. "planning usbyte". */
void *ub_xrealloc(void *p, size_t bytes, const char *what, ...) __attribute__((format(printf, 3, 4)));

/* calloc(n, size) with the same failure rule. */
void *ub_xcalloc(size_t n, size_t size, const char *what, ...) __attribute__((format(printf, 3, 4)));

/* The capacity of a growable array that must hold `need` entries: cap itself when it does,
 * else doubled from cap (from `first` when cap is 0) until it does. */
uint32_t ub_grown_cap(uint32_t cap, uint32_t need, uint32_t first);

#endif
