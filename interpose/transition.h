/* A change of a communicator's state that a step decided (the configuration agreement's read,
 * the agreement's read, the schedule decision, calibration's set-up), returned to the life cycle
 * (lifecycle.c), which applies it: those steps never move the state themselves, so each state's
 * ways out are decided where the life cycle handles that state. */
#ifndef USBYTE_TRANSITION_H
#define USBYTE_TRANSITION_H

#include <stdio.h>

#include <nccl.h>

#include "state.h"

typedef enum {
    UB_STAY,      /* nothing decided: the state stays */
    UB_MOVE,      /* to `to`, `why` its reason (empty: none) */
    UB_FAIL,      /* this rank cannot follow the others: it fails with `error` (ub_comm_cannot_take_part) */
} ub_transition_kind;

typedef struct ub_transition {
    ub_transition_kind kind;
    ub_comm_state to;      /* UB_MOVE */
    ncclResult_t error;    /* UB_FAIL: what the application's calls return from here */
    char why[600];         /* UB_FAIL: what cannot be issued and why, in full (the state keeps what fits) */
} ub_transition;

static inline ub_transition ub_stay(void) { return (ub_transition){.kind = UB_STAY}; }

static inline ub_transition ub_move(ub_comm_state to, const char *why)
{
    ub_transition t = {.kind = UB_MOVE, .to = to};
    snprintf(t.why, sizeof t.why, "%s", why ? why : "");
    return t;
}

static inline ub_transition ub_fail(ncclResult_t error, const char *why)
{
    ub_transition t = {.kind = UB_FAIL, .error = error};
    snprintf(t.why, sizeof t.why, "%s", why);
    return t;
}

#endif
