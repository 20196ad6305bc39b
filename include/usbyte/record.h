/* The warm-up recorder and the cross-rank agreement (docs/design.md sections 1 and 5), as pure code:
 * no CUDA, no NCCL, no clocks.  The runtime fills a ub_record with times (seconds since its own
 * epoch) as its timing events complete; ub_record_summarize reduces it to one rank's numbers per
 * call; ub_agree_* pack those into the fixed-layout vectors the agreement collectives combine
 * (max and sum); ub_derive_profile turns the agreed numbers into a docs/model.md profile.  Every rank
 * runs ub_derive_profile on identical agreed numbers, so every rank derives the same profile. */
#ifndef USBYTE_RECORD_H
#define USBYTE_RECORD_H

#include <stdbool.h>
#include <stdint.h>

#include "usbyte/config_agree.h"
#include "usbyte/fit.h"
#include "usbyte/profile.h"

/* One allreduce of one warm-up iteration.  Times are seconds since the recorder's epoch; NAN
 * until measured (or when the measurement failed). */
typedef struct ub_rec_call {
    double ready;  /* upstream producer's event, or the event before the call on the NCCL stream */
    double start;  /* event just before the call on the NCCL stream */
    double end;    /* event just after it */
    double need;   /* first wait on its completion (stream or host) */
    bool upstream; /* ready came from the producer's event (false: fallback to the NCCL stream) */
    bool barrier;  /* something waited on it before the next allreduce arrived */
    bool needed;   /* a wait covering it was seen (need may still be NAN until measured) */
    bool split;    /* the consumer did other work since its previous wait (or nobody can tell):
                      false only when this wait directly followed another one */
} ub_rec_call;

typedef struct ub_record {
    int warmup;          /* iterations recorded */
    int capacity;        /* calls per iteration the arrays hold (the NCCL period) */
    int n_calls;         /* allreduces per iteration (from iteration 0) */
    ub_rec_call *calls;  /* warmup * capacity, iteration-major */
    /* per allreduce of iteration 0: what was called */
    uint64_t *bytes;
    int *dtype;          /* ub_dtype */
    int *op;             /* ub_op */
    double end_ready;    /* the first ready of the iteration after the last one (measured like every
                            ready, on the device's timeline): the last iteration's end; NAN until
                            measured */
} ub_record;

int ub_record_init(ub_record *r, int warmup, int capacity);  /* -1: out of memory */
void ub_record_free(ub_record *r);
ub_rec_call *ub_record_at(ub_record *r, int iteration, int call);
/* This rank's own iteration lengths (first ready to the next first ready; the last one's to
 * end_ready) into out[warmup] (NAN where either end is unmeasured), as ub_record_summarize
 * averages them. */
void ub_record_iterations(const ub_record *r, double *out);

/* One rank's numbers per call, averaged over the warm-up.  Times are relative to each
 * iteration's first ready time (docs/model.md), -1 when never observed. */
typedef struct ub_summary_call {
    double ready, need, done;  /* done: completion (end event) */
    double comm_mean;          /* its duration (start to end event), the mean */
    double comm_cost;          /* the cost model's sample: the median over the iterations of its
                                  time from where the model starts it (the later of its ready
                                  time and the end of the calls before it) to its end */
    bool barrier;
    bool fallback;             /* at least one iteration without an upstream event */
    bool split;                /* its first wait may open a new forward segment (see derive.c) */
} ub_summary_call;

typedef struct ub_summary {
    int n_calls;
    ub_summary_call *calls;
    double iteration;          /* mean iteration length (first ready to next first ready) */
    int iterations_used;       /* how many of the warm-up's iterations it covers */
    bool *used;                /* per warm-up iteration: covered */
    int *phase_votes;          /* per call: how many of the covered iterations whose next one's
                                  first ready is known begin at this call (ub_iteration_phase on
                                  their own ready times; 0: where profiled) */
    int phase_voters;          /* how many iterations voted */
} ub_summary;

/* settled (NULL: all): per warm-up iteration, whether every timing event recorded for it has
 * completed.  -1: out of memory or no calls. */
int ub_record_summarize(const ub_record *r, const bool *settled, ub_summary *out);
void ub_summary_free(ub_summary *s);

/* Facts about the communicator every rank must agree on, combined with max: X(field, meaning). */
#define UB_AGREE_FLAG_LIST(X)                                                                     \
    X(stream_ordered, "operations seen on the NCCL stream between collectives")                \
    X(stream_compute, "of which kernels, graphs, host functions and stream callbacks")        \
    X(stream_copies, "of which copies, memsets and memory writes")                             \
    X(cupti_missing, "1 + the highest rank where CUPTI could not be had (USBYTE_CUPTI=0 or not found), 0: none") \
    X(cupti_taken, "1 + the highest rank where another CUPTI subscriber (a profiler) held or took CUPTI, 0: none") \
    X(no_end_records, "1: no event was recorded on the NCCL stream after a call")              \
    X(other_calls, "non-allreduce NCCL calls per iteration")                                   \
    X(copy_beta, "seconds per byte of a device-to-device copy on the private stream (staging)") \
    X(multi_stream, "1: the allreduces of an iteration were issued on more than one stream")   \
    X(legacy_stream, "1: an allreduce was issued on the legacy or a per-thread default stream") \
    X(blocking_stream, "1: an allreduce was issued on a blocking stream (not cudaStreamNonBlocking)") \
    X(missing_own_end, "1: some allreduce had no event recorded right after it")               \
    X(p2p, "1: point-to-point calls in the iteration")                                         \
    X(period_refuted, "1: an allreduce's buffers differ from the same position's one period earlier") \
    X(addr_period, "the period of the full signatures (buffers included), 0 when none")        \
    X(neg_addr_period, "its negation: every rank found the same iff max == -max(-x)")            \
    X(neg_iterations, "minus the warm-up iterations whose timing events this rank had read: -max is the least over ranks") \
    X(exec_failed_rank, "1 + the rank that could not set up schedule mode's executor before the agreement, 0: none") \
    X(neg_staging, "minus the staging bytes this rank holds for a plan: -max is the least over ranks")

typedef struct ub_agree_flags {
#define X(field, meaning) double field;
    UB_AGREE_FLAG_LIST(X)
#undef X
} ub_agree_flags;

/* The configuration that changes what is issued to NCCL (usbyte/config_agree.h's list): ranks
 * that differ in it stay in pass-through (they still issue the same agreement). */
typedef struct ub_agree_settings {
#define X(field, var) int field;
    UB_AGREE_SETTING_LIST(X)
#undef X
} ub_agree_settings;

/* The agreement (docs/design.md sections 1 and 2).  Its collectives must depend only on the call
 * sequence: they are issued at a call index derived from the portable sequence, and their SIZES
 * are constants, the same on every rank whatever it measured, whether the ranks agree or not.
 * Two in-place allreduces of doubles, issued back to back with no host step between them:
 *   max vector: header [n_calls, period, 4 x 16 bits of the sequence hash, format, and the
 *               settings of UB_AGREE_SETTING_LIST] and
 *               their negations (every rank sent the same header iff max(x) == -max(-x)); then
 *               per call [ready, need, done, -comm_cost, barrier, fallback, split] for
 *               UB_AGREE_CAP calls (zeros past n_calls); then the flags, the iteration length and
 *               a rank-local failure flag;
 *   sum vector: per call comm_mean (UB_AGREE_CAP), then 1 (counts ranks), then per call the
 *               phase votes (UB_AGREE_CAP), then the number of voting iterations.
 * An iteration with more than UB_AGREE_CAP allreduces still agrees on the header (n_calls is in
 * it) and every rank goes to pass-through with that reason. */
#define UB_AGREE_CAP 4096
/* n_calls, period, the hash's four pieces, the format; then the settings. */
#define UB_AGREE_HEADER_SETTINGS_AT 7
#define UB_AGREE_HEADER_FIELDS (UB_AGREE_HEADER_SETTINGS_AT + UB_AGREE_SETTING_COUNT)
#define UB_AGREE_HEADER_LEN (2 * UB_AGREE_HEADER_FIELDS)
#define UB_AGREE_PER_CALL 7
/* One per flag of the list (a sizeof cannot be used in the constant sizes below the list). */
#define UB_AGREE_FLAG_ONE(field, meaning) +1
#define UB_AGREE_FLAG_COUNT (0 UB_AGREE_FLAG_LIST(UB_AGREE_FLAG_ONE))
#define UB_AGREE_GLOBALS (UB_AGREE_FLAG_COUNT + 2)
#define UB_AGREE_MAX_LEN (UB_AGREE_HEADER_LEN + UB_AGREE_PER_CALL * UB_AGREE_CAP + UB_AGREE_GLOBALS)
#define UB_AGREE_SUM_RANKS UB_AGREE_CAP
#define UB_AGREE_SUM_VOTES (UB_AGREE_CAP + 1)
#define UB_AGREE_SUM_VOTERS (2 * UB_AGREE_CAP + 1)
#define UB_AGREE_SUM_LEN (2 * UB_AGREE_CAP + 2)

void ub_agree_header_encode(int n_calls, uint32_t period, uint64_t seq_hash, const ub_agree_settings *set,
                            double out[UB_AGREE_HEADER_LEN]);
/* True when the max-combined header shows every rank sent the same values. */
bool ub_agree_header_unanimous(const double combined[UB_AGREE_HEADER_LEN]);

/* One rank's contribution. */
typedef struct ub_agree_local {
    int n_calls;                /* allreduces per iteration (portable: from the call sequence) */
    uint32_t period;            /* NCCL calls per iteration */
    uint64_t seq_hash;          /* portable sequence hash of one iteration */
    ub_agree_settings settings; /* a plan must come from the same configuration everywhere */
    const ub_summary *summary;  /* NULL: this rank has no numbers (a rank-local failure) */
    ub_agree_flags flags;
} ub_agree_local;

/* Fills max_vec[UB_AGREE_MAX_LEN] and sum_vec[UB_AGREE_SUM_LEN]. */
void ub_agree_encode(const ub_agree_local *l, double *max_vec, double *sum_vec);

typedef struct ub_agreed {
    int n_calls;
    int ranks;                 /* from the sum vector */
    ub_summary_call *calls;    /* ready/need/done/barrier/fallback: max over ranks; comm_cost:
                                  min over ranks; comm_mean: mean over ranks */
    double iteration;          /* max over ranks */
    ub_agree_flags flags;
    int phase;                 /* the call an iteration begins at, by a majority of the ranks'
                                  voting iterations (ub_phase_majority); 0: where profiled */
} ub_agreed;

typedef enum ub_agree_outcome {
    UB_AGREE_OK,
    UB_AGREE_MISMATCH,      /* the ranks' headers differ */
    UB_AGREE_NO_CALLS,      /* no allreduce in the iteration */
    UB_AGREE_TOO_MANY,      /* more than UB_AGREE_CAP allreduces per iteration */
    UB_AGREE_RANK_FAILED,   /* some rank could not measure (its log says why) */
    UB_AGREE_NOMEM,
} ub_agree_outcome;

/* Decodes the combined vectors; out is filled only for UB_AGREE_OK.  Every rank decodes the same
 * bit-identical vectors, so every rank reaches the same outcome. */
ub_agree_outcome ub_agree_decode(const double *max_vec, const double *sum_vec, ub_agreed *out);
const char *ub_agree_outcome_reason(ub_agree_outcome o);
/* For UB_AGREE_MISMATCH: what differs in the max-combined header (each half of which holds the
 * largest and, negated, the smallest value over the ranks): the call sequence, the usbyte version,
 * and every setting with the smallest and largest value, as one line into buf.  Returns the
 * length the whole text needs (as snprintf does: call again with a larger buf when it is len or
 * more). */
size_t ub_agree_mismatch_text(const double combined[UB_AGREE_HEADER_LEN], char *buf, size_t len);
void ub_agreed_free(ub_agreed *a);

/* Builds the docs/model.md profile from agreed numbers: ready, need segments, forward durations,
 * backward_end and gap (see profiler/derive.c for the rules), net from a least-squares fit of
 * (bytes, comm_cost).  bytes/dtype/op: per call.  Returns 0, -1 when out of memory. */
int ub_derive_profile(const ub_agreed *a, const uint64_t *bytes, const int *dtype, const int *op,
                      bool stream_semantics, ub_profile *out, ub_fit_result *fit);
/* The same with n_extra more measured samples (calibration's probes, agreed) in the fit of the
 * net; the calls' samples first.  The fit is a pure function of the samples. */
int ub_derive_profile_with(const ub_agreed *a, const uint64_t *bytes, const int *dtype, const int *op,
                           bool stream_semantics, const ub_fit_sample *extra, int n_extra, ub_profile *out,
                           ub_fit_result *fit);
/* The samples the net is fitted on (ub_derive_profile_with): per call its bytes and comm_cost, then
 * the n_extra more; allocated, *n set; NULL when out of memory. */
ub_fit_sample *ub_derive_fit_samples(const ub_agreed *a, const uint64_t *bytes, const ub_fit_sample *extra,
                                     int n_extra, size_t *n);
/* Stream semantics' need: from[k] is the call (k or later) whose own wait comes first, -1 when
 * none of calls k..n-1 was waited on (own_need < 0). */
void ub_need_transitive(int n, const double *own_need, int *from);

/* Where one profiled iteration begins, from its own ready times (ready[0] is its first call's;
 * non-finite entries were never measured) and its length (first ready to the next iteration's
 * first): the call after the widest silence between ready times when that silence lies inside
 * the iteration and is more than UB_PHASE_RATIO times the one from the latest ready to the next
 * iteration's first (and at least UB_PHASE_MIN_GAP seconds); else 0, the profile's own start
 * (profiler/phase.c). */
int ub_iteration_phase(const double *ready, int n, double iteration);
/* The call that more than half of `voters` iterations voted for (votes per call, summed over
 * the ranks by the agreement); 0 when none.  A pure function of agreed numbers: every rank
 * computes the same. */
int ub_phase_majority(const double *votes, int n, double voters);
#define UB_PHASE_RATIO 4.0
#define UB_PHASE_MIN_GAP 1e-3

/* Consecutive waits closer than this (seconds) after the previous call's wait was satisfied
 * belong to one forward segment: max(UB_SEGMENT_MIN_GAP, UB_SEGMENT_REL_GAP * iteration). */
#define UB_SEGMENT_MIN_GAP 100e-6
#define UB_SEGMENT_REL_GAP 0.001

#endif
