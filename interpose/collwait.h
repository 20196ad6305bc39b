/* usbyte's own collectives, issued at a fixed call index on every rank (the agreement, the
 * verification's measurements): their buffers, and the host wait, by polling, for their completion
 * event, without the global lock. */
#ifndef USBYTE_COLLWAIT_H
#define USBYTE_COLLWAIT_H

#include <stdbool.h>

#include "state.h"

/* Polls `done` (never a blocking CUDA call: a peer may be gone) until it completes, another thread
 * ends the communicator (a watchdog's abort), NCCL reports an asynchronous error (stored in
 * c->peer_error; returns cudaErrorNotReady) or, when `limited`, USBYTE_HANG_S pass.  Every
 * USBYTE_HANG_S it says what it waits for: "waiting N s for <what>" and then `why`. */
/* The pinned host vector, its device copy and the completion event of a collective of `bytes` on
 * `device`; each made only where *host, *dev or *done is still NULL (NULL again on failure).
 * True when all three exist. */
bool ub_coll_buffers(int device, size_t bytes, double **host, void **dev, cudaEvent_t *done);
/* Frees what ub_coll_buffers made (each may be NULL).  Without the global lock: cudaFree may
 * synchronise the device; nothing may still use them. */
void ub_coll_buffers_free(double *host, void *dev, cudaEvent_t done);
cudaError_t ub_comm_wait_done(ub_comm *c, cudaEvent_t done, bool limited, const char *what, const char *why);

#endif
