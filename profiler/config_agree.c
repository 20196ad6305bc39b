/* The configuration agreement's encoding (see usbyte/config_agree.h). */
#include <math.h>

#include "usbyte/config_agree.h"

void ub_cfg_agree_encode(const int *values, int rank, double out[UB_CFG_AGREE_LEN])
{
    for (int s = 0; s < UB_CFG_AGREE_COUNT; s++) {
        double v = values[s], r = rank;
        out[2 * s] = v * UB_CFG_AGREE_SCALE + r;
        out[2 * s + 1] = (UB_CFG_AGREE_SCALE - 1 - v) * UB_CFG_AGREE_SCALE + r;
    }
}

/* x = value * scale + rank: the value and the rank, false when x is no such number. */
static bool split(double x, int *value, int *rank)
{
    if (!isfinite(x) || x < 0 || x >= UB_CFG_AGREE_SCALE * UB_CFG_AGREE_SCALE || x != floor(x))
        return false;
    double v = floor(x / UB_CFG_AGREE_SCALE);
    *value = (int)v;
    *rank = (int)(x - v * UB_CFG_AGREE_SCALE);
    return true;
}

bool ub_cfg_agree_decode(const double combined[UB_CFG_AGREE_LEN], ub_cfg_agreed *out)
{
    for (int s = 0; s < UB_CFG_AGREE_COUNT; s++) {
        int lo_inv;
        if (!split(combined[2 * s], &out[s].hi, &out[s].rank_hi) ||
            !split(combined[2 * s + 1], &lo_inv, &out[s].rank_lo))
            return false;
        out[s].lo = (int)(UB_CFG_AGREE_SCALE - 1) - lo_inv;
        if (out[s].lo > out[s].hi)
            return false;
    }
    return true;
}

const char *ub_cfg_agree_var(ub_cfg_agree_id id)
{
    static const char *const names[] = {
#define X(field, var) var,
        UB_CFG_AGREE_LIST(X)
#undef X
    };
    return id >= 0 && id < UB_CFG_AGREE_COUNT ? names[id] : "?";
}
