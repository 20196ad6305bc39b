/* Verification of a plan against the application's own order (docs/design.md, "Verification"):
 * which iteration of a verification window runs the candidate plan and which passes through, which
 * are measured, the fixed-size vector each rank contributes to the collective that agrees the
 * measurements, and the verdict on the agreed vector.  Pure: every answer is a function of window
 * indices and agreed numbers, so every rank decides the same at the same call.
 *
 * A window, counted in iterations from its first (w = 0):
 *   w < UB_VERIFY_SETTLE                  the candidate runs, not measured (the switch settles);
 *   then UB_VERIFY_SLOTS runs of UB_VERIFY_RUN iterations, the candidate's and pass-through's
 *                                         alternating (side by side in time); the last iteration of
 *                                         each run is measured (slot j: the candidate for even j):
 *                                         it follows an iteration of its own side, so neither side's
 *                                         measurement carries the other's transition;
 *   later                                 pass-through, not measured, until the verdict applies;
 *   w == UB_VERIFY_ISSUE_AT               at its first call the ranks' measurements are issued;
 *   w == UB_VERIFY_APPLY_AT               at its first call the agreed verdict takes effect.
 * A slot's time is its iteration's length: the start of the next iteration minus its own start. */
#ifndef USBYTE_VERIFY_H
#define USBYTE_VERIFY_H

#include <stdbool.h>
#include <stdint.h>

#define UB_VERIFY_PER_SIDE 8
#define UB_VERIFY_SLOTS (2 * UB_VERIFY_PER_SIDE)
#define UB_VERIFY_SETTLE 2
#define UB_VERIFY_RUN 2
/* Window iterations in the slots' runs. */
#define UB_VERIFY_RUNS_END (UB_VERIFY_SETTLE + UB_VERIFY_RUN * UB_VERIFY_SLOTS)
/* The last slot ends at the start of iteration RUNS_END; its timing event completes when the
 * device gets there, which may be iterations behind the host (a framework thread that queues ahead):
 * UB_VERIFY_LAG iterations later the measurements are issued. */
#define UB_VERIFY_LAG 3
#define UB_VERIFY_ISSUE_AT (UB_VERIFY_RUNS_END + UB_VERIFY_LAG)
/* One iteration between the issue and its use: the collective has completed by then on a device
 * that keeps up with its host, so the read at the apply rarely waits. */
#define UB_VERIFY_APPLY_AT (UB_VERIFY_ISSUE_AT + 2)
/* Marks kept: every iteration start up to the last slot's end. */
#define UB_VERIFY_MARKS (UB_VERIFY_RUNS_END + 1)
/* The sum-reduced vector: [1 (counts the ranks), per slot its length in integer nanoseconds (0:
 * not measured), per slot 1 when measured].  Integers below 2^53: their sum is exact in any
 * order, so every rank reads bit-identical numbers. */
#define UB_VERIFY_LEN (1 + 2 * UB_VERIFY_SLOTS)
/* The min-reduced vector issued beside it: per block of the candidate (its first UB_VERIFY_BLOCKS),
 * the median duration of its allreduce over the iterations this rank timed, in seconds, or
 * UB_VERIFY_NO_BLOCK where it timed none, then the executor's wait before a block
 * (ub_verify_executor_wait; UB_VERIFY_NO_BLOCK: none timed).  The least over the ranks is the
 * link's time (the last rank to arrive waits for no one), as for the warm-up's calls; the minimum
 * of doubles is one of them, the same on every rank. */
#define UB_VERIFY_BLOCKS 256
#define UB_VERIFY_MIN_LEN (UB_VERIFY_BLOCKS + 1)
#define UB_VERIFY_NO_BLOCK 1e30
/* The candidates: the chosen plan, a merge-only plan, and the plan planned again on the model
 * re-fitted with a kept or dropped candidate's measured blocks (tried once per check). */
#define UB_VERIFY_MAX_CANDIDATES 3
/* Windows one candidate may run in one check: a window whose plan side measured faster but not
 * beyond the noise margin (or with fewer than 3 pairs) is followed by another of the same
 * candidate, judged on the pairs of all of them; only after the last is an inconclusive plan
 * dropped.  A loaded machine's stalls can hit half a window's pairs, where 8 pairs cannot tell. */
#define UB_VERIFY_MAX_WINDOWS 3
#define UB_VERIFY_MAX_PAIRS (UB_VERIFY_MAX_WINDOWS * UB_VERIFY_PER_SIDE)
/* Standard errors of the paired difference a plan must gain by to be kept (one-sided, about 2%
 * false keeps where the plan gains nothing). */
#define UB_VERIFY_Z 2.0

typedef enum { UB_VERIFY_RUN_PLAN, UB_VERIFY_RUN_PASS } ub_verify_side;

/* The measured slot of window iteration w, -1 when it is not measured. */
int ub_verify_slot(int w);
/* The window iteration that slot j measures. */
int ub_verify_slot_iteration(int j);
/* What window iteration w runs. */
ub_verify_side ub_verify_side_of(int w);
/* This rank's contribution: seconds[j] the length of slot j (not finite: not measured). */
void ub_verify_encode(const double seconds[UB_VERIFY_SLOTS], double out[UB_VERIFY_LEN]);

typedef struct ub_verify_stats {
    int n;          /* slots measured */
    double median;  /* s; NAN when n == 0 */
    double spread;  /* s: 1.4826 x the median absolute deviation (the stdev where that is 0) */
} ub_verify_stats;

typedef struct ub_verify_verdict {
    ub_verify_stats plan, pass;   /* over every window of this candidate in this check */
    int pairs;      /* adjacent plan/pass-through slots both measured */
    double gain;    /* s: median over the pairs of pass-through minus plan */
    double margin;  /* s: UB_VERIFY_Z standard errors of that median, from the pairs' own spread */
    bool keep;      /* gain > margin with at least 3 pairs */
    bool again;     /* not kept, and inconclusive with windows left: the same candidate runs again */
    int windows;    /* windows judged together */
    double slots[UB_VERIFY_SLOTS];  /* s, the agreed length of each slot of the latest window (NAN: not measured) */
    /* s, every window's slots side by side (pair i: plan_slots[i], pass_slots[i]; NAN: not measured) */
    double plan_slots[UB_VERIFY_MAX_PAIRS], pass_slots[UB_VERIFY_MAX_PAIRS];
    char reason[400];
} ub_verify_verdict;

/* The verdict on the agreed (sum-reduced) vector for the candidate named policy, together with
 * the earlier windows of the same candidate in this check (`earlier`: the verdict that said
 * `again`; NULL, or one with windows 0, for a check's first window). */
void ub_verify_judge(const double agreed[UB_VERIFY_LEN], const char *policy, const ub_verify_verdict *earlier,
                     ub_verify_verdict *out);

/* The executor's own wait before a block, beyond the model's rule 1 (docs/model.md): over the
 * n_slots timed iterations (t0[slot]: the iteration's start mark) and the first n_blocks blocks
 * (marks start/end[slot * stride + b], seconds, NAN: not timed; ready[b]: the latest agreed ready
 * time of its calls from the iteration's start, NAN: unknown), the median of the time from where
 * rule 1 starts block b (the later of t0 + ready[b] and the end of block b - 1) to when the
 * private stream began it, 0 where it began earlier.  That wait is what the executor pays per
 * block (the wait across streams on its readiness, a hardware queue shared with the application's
 * stream), which the link's cost (start to end) does not hold.  NAN when no block was timed. */
double ub_verify_executor_wait(const double *ready, int n_blocks, int stride, const double *t0, const double *start,
                               const double *end, int n_slots);

/* The report's comms[].verification (written by profiler/report.c). */
typedef struct ub_verify_candidate_report {
    char policy[32];
    double predicted_iteration;  /* s, the model's */
    double measured_iteration;   /* s, median of its agreed slots in the latest window that ran it; NAN */
    double spread;               /* s */
    /* s: what the model re-fitted with this candidate's own measured blocks predicts for it (the
     * re-fit after its verdict); NAN when it was not re-fitted */
    double refit_predicted_iteration;
    int iterations;              /* slots measured */
    int windows;                 /* windows its latest verdict judged together */
    bool refit;                  /* planned on the model re-fitted with another candidate's blocks */
} ub_verify_candidate_report;

typedef struct ub_verify_report {
    bool present;                /* verification ran for this communicator's plan */
    int n_candidates;
    ub_verify_candidate_report candidates[UB_VERIFY_MAX_CANDIDATES];
    double pass_through_iteration, pass_through_spread;  /* s, the latest window's */
    int pass_through_iterations;
    char kept[32];               /* a policy, "pass-through", or "" while the first window runs */
    int64_t at_call;             /* call index of the latest decision, -1 before it */
    int checks;                  /* windows decided */
    int every;                   /* iterations between checks of what is kept (0: never again) */
    char slots_policy[32];       /* the latest window's candidate */
    int n_slots;                 /* the latest verdict's windows' slots, window after window */
    double slots[2 * UB_VERIFY_MAX_PAIRS];  /* s, agreed (even: the candidate), NAN: not measured */
    char reason[4 * UB_VERIFY_MAX_WINDOWS * 400];  /* every verdict of the latest check, "; " between */
} ub_verify_report;

void ub_verify_report_init(ub_verify_report *r);

#endif
