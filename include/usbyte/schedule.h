/* What schedule mode issues, and when, as pure functions of a plan (docs/design.md sections 1, 3, 6).
 * The runtime keeps no other rule: every decision that changes what NCCL is asked to do comes from
 * here and from the call sequence, so every rank derives the same one.
 *
 * - Cursor: calls arrive in order 0..n-1; blocks go out in plan order, each as soon as all of its
 *   member calls have arrived.  `issue_at[b]` is the call whose arrival issues block b:
 *   max(its largest member, issue_at[b-1]) (monotone, so the blocks issued at one arrival are
 *   consecutive).
 * - Readiness: a block waits for its members' data; on one stream the readiness of its largest
 *   member covers the earlier ones (stream order), so only calls that `close` a block need their
 *   own readiness event.
 * - Block values: block b of the iteration whose base is `base` has value base + b + 1 (the base
 *   grows by n_blocks per iteration, flushed or not, and never goes back).  Call k is complete
 *   once the block of value base + last_block[k] + 1 is; an event recorded after call k
 *   completes, in stream semantics, once calls 0..k are (base + prefix_block[k] + 1).
 * - Flush: at a deviation after the calls 0..arrived-1 of the iteration came, the blocks not yet
 *   issued go out in plan order restricted to the segments of arrived calls (a block left empty
 *   issues nothing), so every deferred call completes and every rank issues the same bytes in
 *   the same blocks. */
#ifndef USBYTE_SCHEDULE_H
#define USBYTE_SCHEDULE_H

#include <stdbool.h>
#include <stdint.h>

#include "usbyte/plan.h"
#include "usbyte/profile.h"
#include "usbyte/signature.h"

typedef struct ub_sched {
    int n_calls, n_blocks;
    int *issue_at;          /* per block */
    int *last_block;        /* per call */
    int *prefix_block;      /* per call: max over calls 0..k of last_block */
    bool *staged;           /* per block: goes through staging (ub_segments_staged) */
    bool *closes;           /* per call: the largest call of some block (its readiness is recorded) */
    uint64_t staging_bytes; /* the largest staged block (the staging buffer's size) */
} ub_sched;

/* 0, or -1 when the plan does not cover calls 0..n_calls-1 (a call without a segment, a segment
 * of another call) or memory is short. */
int ub_sched_build(const ub_plan *plan, int n_calls, ub_sched *out);
void ub_sched_free(ub_sched *s);

/* The block value at which call k of the iteration with base `base` is complete. */
uint64_t ub_sched_done_value(const ub_sched *s, uint64_t base, int k, bool stream_semantics);

/* What the arrival of call k of the iteration with base `base` does, in one look at the plan: the
 * block values at which the call is complete (ub_sched_done_value, in stream and in call
 * semantics) and the blocks [first, end) it issues, given that the blocks before `next` went out
 * already. */
typedef struct ub_sched_arrival {
    uint64_t stream_value, call_value;
    int first, end;
} ub_sched_arrival;
ub_sched_arrival ub_sched_arrive(const ub_sched *s, uint64_t base, int next, int k);

/* One call's look at the cursor, all the pure work a call in schedule mode needs at once: whether
 * the call (its portable signature) is the one the period expects at position `pos`
 * (`pos_sig[pos]`), which allreduce of the plan that position is (`pos_call[pos]`, -1 for another
 * call), and, for an expected allreduce, what its arrival does (ub_sched_arrive with `base` and
 * `next`). */
typedef struct ub_sched_look {
    bool expected;
    int call;
    ub_sched_arrival at; /* when expected and call >= 0 */
} ub_sched_look;
ub_sched_look ub_sched_look_at(const ub_sched *s, const uint64_t *pos_sig, const int *pos_call, uint32_t pos,
                               const ub_call_sig *cs, uint64_t base, int next);

/* The segments of block b that a flush after `arrived` calls issues: fills `keep` (one flag per
 * segment of the block) and returns how many are kept. */
uint32_t ub_sched_flush_segments(const ub_plan *plan, uint32_t b, int arrived, bool *keep);

#endif
