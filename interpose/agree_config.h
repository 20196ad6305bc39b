/* The configuration agreement (agree_config.c; docs/runtime.md, "One configuration for every
 * rank").  Called with the global lock held; each returns with it held. */
#ifndef USBYTE_AGREE_CONFIG_H
#define USBYTE_AGREE_CONFIG_H

#include "lock_contract.h"
#include "state.h"
#include "transition.h"

/* At the first lock of the communicator (the same call on every rank, USBYTE_MODE=off too),
 * before forwarding it: issues the one fixed-size collective (never waits for it); later locks
 * issue nothing. */
void ub_cfg_agree_issue(ub_comm *c) UB_REQUIRES_UNLOCKS(ub_state_mutex);
/* Enqueues the copy of the result to the host (at once, or after the launch of the group that
 * holds the collective). */
void ub_cfg_agree_copy_back(ub_comm *c) UB_REQUIRES(ub_state_mutex);
/* At the first call of the warm-up (the same call on every rank): waits for the result (releasing
 * the lock meanwhile); when a setting differs between the ranks, returns the move of every rank
 * to pass-through (the verdict names the setting and the ranks), which the life cycle applies.
 * The caller checks c->ending and c->peer_error afterwards (an abort or a peer gone ends the
 * wait). */
ub_transition ub_cfg_agree_read(ub_comm *c) UB_REQUIRES_UNLOCKS(ub_state_mutex);
/* At the communicator's destroy or abort: its buffers, once nothing can still use them. */
void ub_cfg_agree_release(ub_comm *c, bool abort);

#endif
