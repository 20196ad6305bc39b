/* A plan: the ordered list of blocks that covers every byte of every call once (docs/model.md).
 * Segments of a block are stored contiguously, so a plan is two flat arrays. */
#ifndef USBYTE_PLAN_H
#define USBYTE_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ub_segment {
    int32_t call;
    uint64_t offset;  /* bytes */
    uint64_t length;  /* bytes, > 0 */
} ub_segment;

typedef struct ub_block {
    uint32_t first_segment;  /* index into ub_plan.segments */
    uint32_t n_segments;
    double start, end;       /* filled by the evaluator */
} ub_block;

typedef struct ub_plan {
    char policy[32];
    ub_segment *segments;
    uint32_t n_segments, cap_segments;
    ub_block *blocks;
    uint32_t n_blocks, cap_blocks;
    double iteration;     /* filled by the evaluator */
    double lower_bound;
    bool optimal;         /* iteration meets lower_bound (1e-9 relative): proven optimal (ub_evaluate) */
    double plan_seconds;  /* time spent computing the plan (reporting only, never a decision input) */
    char params[256];     /* what a policy chose, e.g. "partition=4194304 credit=2"; "" if none */
} ub_plan;

void ub_plan_init(ub_plan *plan, const char *policy);
void ub_plan_free(ub_plan *plan);
void ub_plan_clear(ub_plan *plan);                    /* keeps policy and capacity */
void ub_plan_copy(ub_plan *dst, const ub_plan *src);  /* dst must be initialised */
/* Whether two plans have the same blocks, segment for segment (what the evaluator sees; names,
 * params and times aside). */
bool ub_plan_same_blocks(const ub_plan *a, const ub_plan *b);
/* Opens a new, empty block at the end; segments added next belong to it. */
void ub_plan_begin_block(ub_plan *plan);
void ub_plan_add_segment(ub_plan *plan, int32_t call, uint64_t offset, uint64_t length);
/* Whether a block (its segments; keep: only those flagged, NULL: all) goes through the staging
 * buffer: unless its segments are one contiguous byte range of one call, which is one allreduce
 * in place.  The one rule of the model's copy cost, the staging limit and the runtime's executor
 * (segments of one block never overlap: a valid plan covers every byte once). */
bool ub_segments_staged(const ub_segment *seg, uint32_t n, const bool *keep);

#endif
