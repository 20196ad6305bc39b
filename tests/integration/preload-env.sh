# Sourced by tests that LD_PRELOAD libusbyte.so: sets USBYTE_PRELOAD to the value LD_PRELOAD
# needs.  Under SAN=address the ASan runtime must come first in LD_PRELOAD, or it aborts with
# "ASan runtime does not come first in initial library list".  Uses BUILD (default build) and SAN.
_ub_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
USBYTE_PRELOAD="$_ub_root/${BUILD:-build}/libusbyte.so"
if [[ "${SAN:-}" == *address* ]]; then
    USBYTE_PRELOAD="$(gcc -print-file-name=libasan.so) $USBYTE_PRELOAD"
fi
export USBYTE_PRELOAD
# The plan's own mechanics are tested with a plan that runs every iteration: verification (which
# alternates the plan with pass-through and may drop it) is off unless a test turns it on
# (runtime_verify.sh tests it).
export USBYTE_VERIFY=${USBYTE_VERIFY:-0}
# Likewise calibration, which moves the switch two iterations later where the plan issues sizes the
# warm-up did not show: off unless a test turns it on (runtime_calibrate.sh tests it).
export USBYTE_CALIBRATE=${USBYTE_CALIBRATE:-0}
