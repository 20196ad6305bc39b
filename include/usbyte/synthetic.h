/* Deterministic, seeded random profiles shaped like a real backward pass: for property tests,
 * benchmarks and planning-time measurements.  Same options -> same profile on every machine
 * (a private splitmix64 stream; never rand()). */
#ifndef USBYTE_SYNTHETIC_H
#define USBYTE_SYNTHETIC_H

#include <stdbool.h>
#include <stdint.h>

#include "usbyte/profile.h"

typedef struct ub_synthetic_opts {
    int n_calls;                 /* >= 1 */
    uint64_t seed;
    bool barrier;                /* every need 0, one forward segment (DDP/Horovod) */
    int n_forward;               /* layer-wise: number of forward segments; 0 = about n/2 */
    double merge_false_fraction; /* share of calls marked "merge": false (0 = none) */
    bool mixed_dtypes;           /* float32 with some float16/bfloat16 calls */
    double alpha, beta;          /* net; 0 = MG-WFBP's 8-node 10GbE figures (523 us, 8.571e-10 s/B) */
    double copy_beta;            /* staging cost, seconds per byte */
    bool comm_bound;             /* hard instances: the backward pass lasts 0.3-0.9 times the link's
                                    byte time alone (startups excluded), so even the best merging
                                    leaves the link the bottleneck at any n */
} ub_synthetic_opts;

/* Fills *out (overwritten; free with ub_synthetic_free).  Returns 0, or -1 when n_calls < 1.
 * Sizes are log-uniform (256 B .. 4 MiB) with about one call in ten a large layer (4 .. 64 MiB),
 * whole elements of the call's dtype; ready times increase; needs never increase along arrival
 * order; the backward compute is drawn so that communication and compute are comparable. */
int ub_synthetic_profile(const ub_synthetic_opts *opts, ub_profile *out);
void ub_synthetic_free(ub_profile *prof);

/* The generator's PRNG, exposed so tests draw their own numbers from the same kind of stream. */
uint64_t ub_splitmix64(uint64_t *state);
double ub_uniform01(uint64_t *state); /* [0, 1) */

#endif
