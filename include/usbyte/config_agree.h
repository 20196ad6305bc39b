/* The configuration agreement (docs/runtime.md, "One configuration for every rank"), as pure
 * code: the settings that decide whether and when a rank takes part in a warm-up's agreement
 * must be the same on every rank, or the ranks would issue different collectives.  Every rank
 * (USBYTE_MODE=off too) sends them at the first lock of a communicator, the same call on every
 * rank, in one max-allreduce of UB_CFG_AGREE_LEN doubles; the combined vector says, per setting,
 * the smallest and the largest value over the ranks and a rank holding each. */
#ifndef USBYTE_CONFIG_AGREE_H
#define USBYTE_CONFIG_AGREE_H

#include <stdbool.h>
#include <stddef.h>

/* X(field of ub_config, its variable): each must be the same on every rank.  USBYTE_MAX_DEVIATIONS
 * decides at which call a scheduled rank gives up its plan and starts a new warm-up (whose
 * agreement the others would not issue). */
#define UB_CFG_AGREE_LIST(X)   \
    X(mode, "USBYTE_MODE")     \
    X(warmup, "USBYTE_WARMUP") \
    X(max_deviations, "USBYTE_MAX_DEVIATIONS")

/* X(field of ub_config, its variable): the settings that change what a plan issues, sent in the
 * header of the warm-up's agreement (usbyte/record.h); ranks that differ in one stay in
 * pass-through, with the reason naming it.  USBYTE_MODE is agreed at the first lock above, before
 * any warm-up agreement can be issued, and so is not repeated here. */
#define UB_AGREE_SETTING_LIST(X)               \
    X(policy, "USBYTE_POLICY")                 \
    X(completion, "USBYTE_COMPLETION")         \
    X(staging_mb, "USBYTE_STAGING_MB")         \
    X(align, "USBYTE_ALIGN")                   \
    X(min_gain_pct, "USBYTE_MIN_GAIN_PCT")     \
    X(verify, "USBYTE_VERIFY")                 \
    X(verify_every, "USBYTE_VERIFY_EVERY")     \
    X(calibrate, "USBYTE_CALIBRATE")

typedef enum {
#define X(field, var) UB_AGREE_SETTING_##field,
    UB_AGREE_SETTING_LIST(X)
#undef X
    UB_AGREE_SETTING_COUNT
} ub_agree_setting_id;

typedef enum {
#define X(field, var) UB_CFG_AGREE_##field,
    UB_CFG_AGREE_LIST(X)
#undef X
    UB_CFG_AGREE_COUNT
} ub_cfg_agree_id;

/* Values and ranks are below UB_CFG_AGREE_SCALE: value * scale + rank is exact in a double. */
#define UB_CFG_AGREE_SCALE 16777216.0
/* Per setting: the largest value with the largest rank holding it, and the smallest likewise. */
#define UB_CFG_AGREE_LEN (2 * UB_CFG_AGREE_COUNT)

/* This rank's contribution: values[UB_CFG_AGREE_COUNT] (each 0 .. UB_CFG_AGREE_SCALE - 1). */
void ub_cfg_agree_encode(const int *values, int rank, double out[UB_CFG_AGREE_LEN]);

typedef struct ub_cfg_agreed {
    int lo, hi;           /* the smallest and the largest value over the ranks */
    int rank_lo, rank_hi; /* a rank holding each (the largest such rank) */
} ub_cfg_agreed;

/* Decodes the max-combined vector into out[UB_CFG_AGREE_COUNT]; false when it is not what any
 * set of ranks could have sent (then out is unspecified). */
bool ub_cfg_agree_decode(const double combined[UB_CFG_AGREE_LEN], ub_cfg_agreed *out);
const char *ub_cfg_agree_var(ub_cfg_agree_id id);

#endif
