/* The settings of the reference policies (usbyte/reference.h): the frameworks' defaults unless
 * a tool changes them before planning. */
#include "usbyte/reference.h"

static const ub_reference_settings defaults = {
    .ddp_first_bucket = UB_DDP_FIRST_BUCKET_DEFAULT,
    .ddp_bucket = UB_DDP_BUCKET_DEFAULT,
    .horovod_cycle = UB_HOROVOD_CYCLE_DEFAULT,
    .horovod_threshold = UB_HOROVOD_THRESHOLD_DEFAULT,
};

static ub_reference_settings current = {
    .ddp_first_bucket = UB_DDP_FIRST_BUCKET_DEFAULT,
    .ddp_bucket = UB_DDP_BUCKET_DEFAULT,
    .horovod_cycle = UB_HOROVOD_CYCLE_DEFAULT,
    .horovod_threshold = UB_HOROVOD_THRESHOLD_DEFAULT,
};

void ub_reference_set(const ub_reference_settings *s) { current = s ? *s : defaults; }

ub_reference_settings ub_reference_get(void) { return current; }
