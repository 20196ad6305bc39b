/* Queue deadlocks (queue_check.c): waits at the head of a hardware queue that nothing
 * submitted can ever release. */
#ifndef USBYTE_EMU_CUDART_QUEUE_CHECK_H
#define USBYTE_EMU_CUDART_QUEUE_CHECK_H

#include <stdbool.h>

/* Writes one line per queue deadlock found now to fd (fd < 0: none) and returns how many;
 * with heads, first one line per queue with ops not begun, naming the first.  With try_only
 * the queue locks are only tried (for the signal handler); returns -1 when one was busy.
 * Allocates nothing and uses no stdio. */
int emu_queue_deadlocks(int fd, bool try_only, bool heads);

#endif
