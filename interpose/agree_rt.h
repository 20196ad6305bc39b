/* The agreement (agree_rt.c), every function called with the global lock held and returning
 * with it held. */
#ifndef USBYTE_AGREE_RT_H
#define USBYTE_AGREE_RT_H

#include "lock_contract.h"
#include "state.h"
#include "transition.h"
#include "usbyte/record.h"

/* agree_rt.c, all called with the global lock held and returning with it held:
 * ub_comm_agree_issue: at call agree_at, before forwarding it, whatever the group depth, the
 *   communicator in AGREE: issues the two fixed-size agreement collectives (never waits for
 *   them); returns the move to pass-through where NCCL refuses them;
 * ub_comm_agree_copy_back: once the thread is outside any group (at once, or after the outermost
 *   ncclGroupEnd's launch): enqueues the copy of the result to the host and its completion event;
 * ub_comm_agree_read: at a later call from outside a group (only if the result is there), at call
 *   agree_at + period, or before the communicator is destroyed: decodes and plans, and returns
 *   what the life cycle applies. */
ub_transition ub_comm_agree_issue(ub_comm *c) UB_REQUIRES_UNLOCKS(ub_state_mutex);
/* The agreement's buffers, made when a warm-up starts (lock held): the memory the agreement needs
 * is taken before the warm-up's end, when the executor's is (a failure there is a flag).  Also
 * called by the agreement's issue without the lock, while issuing_agreement keeps every other
 * thread off the communicator's warm-up resources: outside the analysis, hence no contract. */
bool ub_comm_agree_buffers(ub_comm *c);
void ub_comm_agree_copy_back(ub_comm *c) UB_REQUIRES(ub_state_mutex);
/* How a read waits: not at all; at most USBYTE_HANG_S, then the communicator goes to pass-through
 * (destroy: the last chance); until the result is there or another thread ends the communicator
 * (call agree_at + period: without the result this rank cannot know what the others issue; a
 * line every USBYTE_HANG_S says what it waits for, and an abort from the watchdog releases it). */
typedef enum { UB_AGREE_POLL, UB_AGREE_WAIT_OR_GIVE_UP, UB_AGREE_WAIT } ub_agree_wait;
/* What a read of the agreement found. */
typedef enum {
    UB_AGREE_UNREAD,   /* not there yet, or another thread ended the communicator meanwhile: nothing decided */
    UB_AGREE_REISSUE,  /* some rank had no complete iteration: PLANNED until the agreement is issued again */
    UB_AGREE_DECLINED, /* no decision (the ranks disagree, the agreement failed, this rank cannot read it) */
    UB_AGREE_ADOPTED,  /* decided and planned: PLANNED, and in schedule mode the schedule is decided next */
} ub_agree_read_kind;
typedef struct ub_agree_result {
    ub_agree_read_kind kind;
    ub_transition next;   /* where the communicator goes (the life cycle applies it) */
    ub_agreed agreed;     /* UB_AGREE_ADOPTED: the agreed numbers, the caller's (calibration may take
                           * them; ub_agreed_free) */
    bool stream_sem;      /* UB_AGREE_ADOPTED: planned for stream completion */
} ub_agree_result;
void ub_comm_agree_read(ub_comm *c, ub_agree_wait how, ub_agree_result *out) UB_REQUIRES_UNLOCKS(ub_state_mutex);
/* The agreement will never be read (the communicator ends first): it no longer counts as unread. */
void ub_comm_agree_abandon(ub_comm *c);
/* Some communicator's agreement is issued and not read yet (read without the lock). */
bool ub_agree_any_unread(void);
/* Lock held: every rank leaves c in pass-through from this call without a decision, `why` the
 * verdict's one reason, profiling stopped; returns the move to pass-through (its reason `why`, or
 * `short_why` where it does not fit), which the life cycle applies. */
ub_transition ub_agree_refused(ub_comm *c, const char *why, const char *short_why) UB_REQUIRES(ub_state_mutex);

#endif
