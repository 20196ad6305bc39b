/* A host wait, by polling, for the completion event of a collective usbyte issued at a fixed call
 * index on every rank (the agreement, the verification's measurements), without the global lock. */
#ifndef USBYTE_COLLWAIT_H
#define USBYTE_COLLWAIT_H

#include <stdbool.h>

#include "state.h"

/* Polls `done` (never a blocking CUDA call: a peer may be gone) until it completes, another thread
 * ends the communicator (a watchdog's abort), NCCL reports an asynchronous error (stored in
 * c->peer_error; returns cudaErrorNotReady) or, when `limited`, USBYTE_HANG_S pass.  Every
 * USBYTE_HANG_S it says what it waits for: "waiting N s for <what>" and then `why`. */
cudaError_t ub_comm_wait_done(ub_comm *c, cudaEvent_t done, bool limited, const char *what, const char *why);

#endif
