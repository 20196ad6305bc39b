/* The runtime's start in a process (runtime.c): the configuration loaded once, at the first
 * wrapped call, and the process's fork and exit hooks. */
#ifndef USBYTE_RUNTIME_H
#define USBYTE_RUNTIME_H

/* Loads the configuration once (thread-safe); every wrapper calls it first. */
void ub_runtime_init(void);

#endif
