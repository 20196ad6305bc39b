/* Online iteration detection from a communicator's call sequence (docs/design.md section 5).
 *
 * Feed one 64-bit signature per intercepted call (usbyte/signature.h).  The detector is a pure
 * function of the sequence of values fed and of its config: the runtime must feed PORTABLE
 * signatures (no addresses, no stream), so that every rank locks at the same call index, with the
 * same period and the same phase.  Addresses are the runtime's business (compare full signatures
 * per position once locked).  A consequence: equal-sized calls are indistinguishable, so an
 * iteration made only of repetitions of one smaller pattern (four identical buckets and nothing
 * else) is reported with the smaller period.
 *
 * Definition.  Let s[0..] be the values fed.  For a period p, m_p(i) is the
 * number of consecutive calls j = i, i-1, ... with s[j] == s[j-p], not reaching before the oldest
 * call the history holds (j-p >= i+1-H, H = the power of two >= 2*max_period; irrelevant unless
 * min_span is huge).  While searching, the detector locks at the first call i where some
 * p <= max_period has
 *     m_p(i) >= p  (the last 2p calls are two equal periods)  and  m_p(i) + p >= min_span,
 * taking the SMALLEST such p.  The repeating region is then [i+1-m_p-p, i]; its first index is the
 * anchor `start`: iteration k is the calls start + k*p .. start + (k+1)*p - 1.  A changed first
 * iteration (DDP rebuilding its buckets) is therefore skipped: the lock comes later, and the anchor
 * is the first call from which the sequence repeats.  (If the end of the changed iteration happens
 * to equal the end of the next one, the region, and so the anchor, begins inside the changed
 * iteration: the phase is then rotated by those calls; every rank still agrees on it.)
 * The lock may come mid-iteration (when m_p > p): use `position`, not the lock call, to find the
 * iteration boundaries.
 * Once locked with period p, call i is IN_PHASE when s[i] == s[i-p], else it is a DEVIATION: the
 * lock is dropped and the search resumes on that same call with the runs over the whole history
 * (so the event is LOCKED, with `deviated` set, when the deviating call completes another period:
 * in A B A B C A B A B C, period 2 locks on A B A B and period 5 on the second C).
 * Phase across a deviation: when the new lock has the same period as the lock that deviated and
 * its last p calls are a rotation of the old iteration (a transient deviation: a replaced or an
 * extra call), `start` is moved forward (by less than p) to the first call of the region that
 * sits at the old position 0, so iteration boundaries stay at the same call of the iteration
 * (found by KMP in O(p); the smallest matching rotation when several do).
 * Spurious short locks: with min_span = 0 (the literal definition) two equal consecutive calls lock
 * period 1 and the next different call deviates; a min_span of, say, 16 needs a repeating region
 * of 16 calls before locking, which removes most such flickers and delays true locks of periods
 * below 8 only.
 *
 * Algorithm.  A candidate period p is alive at call i only if s[i] == s[i-p], i.e. i-p is an
 * earlier occurrence of the value s[i].  Each stored call links to the previous occurrence of its
 * value (an open-addressing table maps value -> last index), so a search step walks that chain,
 * nearest first, and extends m_p by one for each distance p found (runs not continued are dropped
 * implicitly through a per-period stamp).  The first p satisfying the lock test is the smallest.
 * Cost per searching call: the number of earlier occurrences of the value within max_period,
 * capped at max_chain (deterministic cap: a run whose earlier occurrence is beyond the cap is
 * dropped that call and restarts later, so an iteration in which EVERY call's value occurs more
 * than max_chain times per iteration locks late or not at all).  Once locked: O(1) per call (one
 * comparison, amortised O(1) index upkeep).  Memory: history, chain links, table and per-period
 * runs grow with the calls seen, up to about 100 bytes * max_period (6.5 MiB at 65536), plus one
 * saved iteration (8 bytes * period) after a deviation.
 * The first call searched after a lock rebuilds each candidate's run by scanning back (its length,
 * which is short unless the candidate is almost a period of the old iteration), so deviations cost
 * up to max_chain * (old period + candidate) comparisons once.
 * Giving up: if no period locks within search_limit calls after the last deviation (or the start),
 * the detector stops for good (UB_ITER_GAVE_UP on every later call, O(1), nothing more
 * allocated).
 * An allocation failure also gives up (gave_up_reason says which). */
#ifndef USBYTE_ITERATION_H
#define USBYTE_ITERATION_H

#include <stdint.h>

#define UB_ITER_MAX_PERIOD 65536u  /* hard limit on calls per iteration */

typedef struct ub_iterdet_config {
    uint32_t max_period;   /* longest iteration searched, 1..UB_ITER_MAX_PERIOD; 0: the limit */
    uint32_t min_span;     /* calls the repeating region needs before locking (2p at least anyway);
                              0: no more than 2p; clamped to H (see Definition) */
    uint32_t min_period;   /* shortest period that may lock (0 or 1: any): a period refuted by other
                              evidence (the buffers) is not found again */
    uint32_t max_chain;    /* earlier occurrences examined per call while searching; 0: 256 */
    uint64_t search_limit; /* calls since the last deviation without a lock before giving
                              up; 0: 4*max_period */
} ub_iterdet_config;

typedef enum {
    UB_ITER_SEARCHING,   /* no period yet */
    UB_ITER_LOCKED,      /* this call completed the second period: locked from this call on */
    UB_ITER_IN_PHASE,    /* locked; this call matches the call one period earlier */
    UB_ITER_DEVIATION,   /* locked before, this call differs: lock dropped, searching again */
    UB_ITER_GAVE_UP      /* no period within the limits (or out of memory): for good */
} ub_iter_event;

typedef struct ub_iter_result {
    ub_iter_event event;
    uint64_t index;      /* this call's index: calls fed before it */
    int deviated;        /* this call broke the previous lock (event DEVIATION, or LOCKED again) */
    /* valid for LOCKED and IN_PHASE: */
    uint32_t period;
    uint64_t start;      /* index of the first call of iteration 0 of the locked region */
    uint64_t iteration;  /* (index - start) / period */
    uint32_t position;   /* (index - start) % period: 0 starts an iteration */
    /* valid for DEVIATION: */
    uint64_t expected;   /* the value expected at this position (the one fed one period earlier) */
} ub_iter_result;

typedef struct ub_iterdet ub_iterdet;

/* NULL when out of memory.  cfg NULL: all defaults.  Values above the limits are clamped. */
ub_iterdet *ub_iterdet_new(const ub_iterdet_config *cfg);
void ub_iterdet_free(ub_iterdet *d);

/* Feeds the signature of the next call; fills *out (may be NULL) and returns out->event. */
ub_iter_event ub_iterdet_feed(ub_iterdet *d, uint64_t sig, ub_iter_result *out);

/* Current lock: 1 and period/start when locked, else 0. */
int ub_iterdet_locked(const ub_iterdet *d, uint32_t *period, uint64_t *start);
/* NULL unless gave up; then a short reason ("no period within N calls", "out of memory"). */
const char *ub_iterdet_gave_up_reason(const ub_iterdet *d);

#endif
