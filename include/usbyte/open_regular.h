/* Opening an input file that must be a regular file (profiles, plans, reports, data/net tables). */
#ifndef USBYTE_OPEN_REGULAR_H
#define USBYTE_OPEN_REGULAR_H

#include <stddef.h>

/* Opens path read-only and close-on-exec, without blocking: a FIFO or a device (a stray one in a
 * report folder) would otherwise wait for a writer for ever.  Returns the descriptor, or -1 with
 * one line in err (errlen bytes): "PATH: cannot read: REASON" (a directory, not a regular file,
 * or the system's reason). */
int ub_open_regular(const char *path, char *err, size_t errlen);

#endif
