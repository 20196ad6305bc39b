/* Schedule mode's verification (docs/design.md, "Verification"): after the switch, the candidate
 * plans are measured against the application's own order in alternating iterations, the ranks'
 * measurements are agreed by one fixed-size collective at a fixed iteration of the window, and the
 * verdict keeps the plan or drops it, on every rank at the same call.  verify.c is the only writer
 * of ub_verify_rt; it returns what an iteration runs, and defer.c (the plan cursor's owner)
 * applies it.  The window's layout and the verdict are usbyte/verify.h's (pure). */
#ifndef USBYTE_VERIFY_RT_H
#define USBYTE_VERIFY_RT_H

#include <stdbool.h>
#include <stdint.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "lock_contract.h"
#include "usbyte/plan.h"
#include "verify_rt.h"

struct ub_comm;

/* What one iteration runs, returned to the plan cursor. */
typedef struct ub_verify_step {
    bool pass_through;       /* its allreduces are forwarded as the application issues them */
    const ub_plan *plan;     /* non-NULL: the cursor takes this plan from this iteration on */
    double predicted;        /* that plan's predicted iteration (s) */
    /* Not ncclSuccess: CUDA or NCCL refused the window's collective (after a peer's death NCCL
     * refuses every operation with the communicator's asynchronous error); failure says which
     * call and why, verification is off, and the caller ends schedule mode with the error. */
    ncclResult_t failed;
    const char *failure;
    /* Verification kept or dropped a plan here and its blocks may show the model where it is
     * wrong: the life cycle fits the model again right after this call (ub_comm_refit). */
    bool refit;
} ub_verify_step;

/* Before the agreement, beside the executor's reservation (agree_rt.c, without the lock, the
 * issuing thread): the window's timing events and buffers, when USBYTE_VERIFY is on; -1 with why
 * when they cannot be had, which the agreement carries (every rank then stays in pass-through). */
int ub_verify_reserve(struct ub_comm *c, char *why, size_t len);
/* Lock held.  The candidates for the plan about to run (first: the chosen plan); verification is
 * on when USBYTE_VERIFY is (agreed).  A second candidate is offered by the decision (it may be
 * NULL).  Allocates nothing on the device (ub_verify_reserve did): -1 with why only when that
 * reservation is missing, a bug. */
int ub_verify_prepare(struct ub_comm *c, const ub_plan *first, double predicted_first, const ub_plan *second,
                      double predicted_second, char *why, size_t len) UB_REQUIRES(ub_state_mutex);
/* Lock held: the plan starts at this iteration boundary (the switch): a window begins. */
void ub_verify_begin(struct ub_comm *c) UB_REQUIRES(ub_state_mutex);
/* Lock held on entry and return (released while the measurements are issued or the verdict is
 * waited for).  The first call of an iteration of the plan's cursor, on stream `st`, at call
 * index `call`: what this iteration runs. */
ub_verify_step ub_verify_iteration(struct ub_comm *c, cudaStream_t st, uint64_t call) UB_REQUIRES_UNLOCKS(ub_state_mutex);
/* Lock held: a deviation in the running iteration (its length is not a measurement). */
void ub_verify_spoil(struct ub_comm *c) UB_REQUIRES(ub_state_mutex);
/* Lock held on entry and return (released while its resources are freed): the communicator ends,
 * its private stream drained (abort: nothing waits for device work, nothing is freed that device
 * work may still touch). */
void ub_verify_end(struct ub_comm *c, bool abort) UB_REQUIRES_UNLOCKS(ub_state_mutex);
/* Lock held, right after the call whose verdict kept or dropped a candidate: true (once) when
 * that candidate's agreed block times are there for a re-fit, with its plan (valid until the
 * candidates change), its first *n blocks' durations (NAN: not timed), the executor's wait before
 * a block (ub_verify_executor_wait, agreed; NAN: none timed), and whether it was
 * dropped (then the re-planned plan must gain over pass-through, else over it). */
bool ub_verify_refit_wanted(struct ub_comm *c, const ub_plan **plan, double seconds[UB_VERIFY_BLOCKS], int *n,
                            double *wait, bool *against_pass_through) UB_REQUIRES(ub_state_mutex);
/* Lock held, after ub_verify_refit_wanted said true: measured_predicted is what the re-fitted model
 * predicts for the candidate whose blocks it was fitted with (NAN: no re-fit), for the report.
 * `plan` (NULL: none) planned again on the re-fitted model (predicted: its iteration there) runs
 * in a window from the next iteration on,
 * against pass-through; after a keep it stays only where it also measures faster than the plan
 * kept before, which runs again otherwise.  With no plan, or no room, a drop's next candidate
 * (if any) starts its window instead. */
void ub_verify_refit_result(struct ub_comm *c, const ub_plan *plan, double predicted, double measured_predicted)
    UB_REQUIRES(ub_state_mutex);
/* Whether the issuing thread is enqueueing the window's collective (without the lock) right now. */
bool ub_verify_issuing(const struct ub_comm *c);

#endif
