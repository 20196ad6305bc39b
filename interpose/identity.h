/* A communicator's identity, the same on every rank of it (identity.c). */
#ifndef USBYTE_IDENTITY_H
#define USBYTE_IDENTITY_H

#include <nccl.h>

#include "lock_contract.h"

/* After ub_comm_created: the new communicator's identity, from its ncclUniqueId
 * array (ids, n), or, ids NULL, from the parent it was split (n: the color) or shrunk (n: -1)
 * from; ub_comm_identify_all for ncclCommInitAll's n communicators of this process. */
void ub_comm_identify(ncclComm_t *out, const ncclUniqueId *ids, int n, ncclComm_t parent, ncclResult_t r) UB_EXCLUDES(ub_state_mutex);
void ub_comm_identify_all(ncclComm_t *out, int n, ncclResult_t r) UB_EXCLUDES(ub_state_mutex);

#endif
