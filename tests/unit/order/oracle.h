/* Exhaustive optimum of small profiles under the docs/model.md timeline (test code only). */
#ifndef USBYTE_TEST_ORACLE_H
#define USBYTE_TEST_ORACLE_H

#include "usbyte/plan.h"
#include "usbyte/profile.h"

#define ORACLE_MAX_ATOMS 12

/* The plan space: every call is divided into `pieces` equal atoms (cut offsets rounded down to
 * whole elements; atoms that would be empty are dropped), and a plan is any sequence of blocks,
 * each block any set of atoms of one dtype/op and one merge group, covering every atom once,
 * the blocks of each merge group after those of the groups before it.
 * So each call may be cut at any multiple of 1/pieces of its bytes, and blocks may merge any
 * atoms in any order.  Requires n_calls * pieces <= ORACLE_MAX_ATOMS.  Writes an optimal plan
 * to out and returns its iteration time (by ub_evaluate_const), or -1 when the profile is too
 * large.  Dynamic programming over the set of atoms already sent, keeping per set the Pareto
 * front of (link free time, latest forward-gated finish), which is exact because the rest of
 * the timeline depends on nothing else. */
double oracle_optimum(const ub_profile *prof, int pieces, ub_plan *out);

#endif
