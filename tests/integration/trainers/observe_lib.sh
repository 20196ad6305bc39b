# Sourced by tests/integration/observe_*.sh: runs a trainer on the emulator with and without
# libusbyte.so and checks the reports with check_report.py.  Uses BUILD (default build) and SAN.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
cd "$ROOT"
BUILD=${BUILD:-build}
SAN=${SAN:-}
EMU_RUN=$BUILD/emu/emu-run
LIB=$BUILD/libusbyte.so
TRAINERS=$BUILD/trainers
CHECK="python3 $ROOT/tests/integration/trainers/check_report.py"
# Ready times are checked against when each rank's trainer really made the data available (its
# actual_ready, docs/trainers.md), not against the planned schedule, which a loaded machine misses
# by milliseconds (the trainer's "deadline lateness").  The runtime's value must lie within this
# many seconds of the bounds of the ranks' means over one window of USBYTE_WARMUP iterations.
# It lies inside them by construction: the runtime's timing event is recorded inside the
# trainer's cudaEventRecord call, right after the application's event on the same stream, and the
# emulator stamps a record when its stream got through the work before it (or at the call, if
# later), whatever its worker thread's scheduling.  Measured: 0 us outside the bounds, per
# iteration within 1.2 us of actual_ready under two CPU hogs (the 1.5-5 ms late readings seen
# before came from the emulator stamping a record when its descheduled worker got to it).  What
# is left: a worker descheduled in the microseconds between the trainer's mark and the end of its
# host function, one iteration in five per mean: 0.5 ms here, 1 ms under sanitizers.
# The planned tolerance (2 ms + 5%, 4 ms under sanitizers) only applies to a truth without
# actual_ready.
READY_TOL=(--actual-tol 0.5e-3 --ready-tol-abs 2e-3 --ready-tol-rel 0.05)
[ -n "$SAN" ] && READY_TOL=(--actual-tol 1e-3 --ready-tol-abs 4e-3 --ready-tol-rel 0.05)
# The benchmark profiles of the repository (data/profiles).
PROFILES=$ROOT/data/profiles
# The emulator's link model for every observe test (see docs/trainers.md for the choice).
export USBYTE_EMU_ALPHA_US=${USBYTE_EMU_ALPHA_US:-800}
export USBYTE_EMU_GBPS=${USBYTE_EMU_GBPS:-0.2}
# Five warm-up iterations: the fit takes each call's median over them, so more samples shed more of
# the scheduling noise of a shared machine.
export USBYTE_WARMUP=${USBYTE_WARMUP:-5}
export USBYTE_LOG=${USBYTE_LOG:-info}
# The observe tests measure and plan only (schedule mode, the default, has tests of its own).
export USBYTE_MODE=${USBYTE_MODE:-observe}
# Schedule mode's tests check a plan that runs every iteration; verification has its own test
# (runtime_verify.sh).
export USBYTE_VERIFY=${USBYTE_VERIFY:-0} USBYTE_CALIBRATE=${USBYTE_CALIBRATE:-0}

for f in "$EMU_RUN" "$LIB"; do
    [ -e "$f" ] || { echo "missing $f: build it first (make)"; exit 1; }
done

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# The value of LD_PRELOAD that loads the library: under ASan its runtime must come first.
preload_value() {
    if [ -n "$SAN" ] && [[ "$SAN" == *address* ]]; then
        echo "$(gcc -print-file-name=libasan.so) $ROOT/$LIB"
    else
        echo "$ROOT/$LIB"
    fi
}

# run NAME OUT RANKS PRELOAD(yes|no) -- TRAINER ARGS...: output of all ranks in OUT, the emulator's
# op logs (what its link really delivered) in OUT without .out, plus .oplog-RANK (check_report.py
# --emu-oplog); fails the test with the output shown when the launcher fails.
run() {
    local name=$1 out=$2 ranks=$3 preload=$4
    shift 5
    local trainer=$1
    shift
    local pre=""
    [ "$preload" = yes ] && pre=$(preload_value)
    local start=$(date +%s%N)
    rm -f "${out%.out}".oplog-*
    if ! LD_PRELOAD="$pre" USBYTE_EMU_OPLOG="${out%.out}.oplog-%r" "$EMU_RUN" -n "$ranks" --timeout 60 -- "$TRAINERS/$trainer" "$@" >"$out" 2>&1; then
        echo "FAIL: $name: $trainer ${*} (preload $preload) failed:"
        sed 's/^/    | /' "$out" | tail -60
        exit 1
    fi
    echo "info: $name ran in $((($(date +%s%N) - start) / 1000000)) ms (preload $preload)"
}

# reports DIR RANKS: the report files of every rank, in rank order (fails when one is missing).
reports() {
    local dir=$1 ranks=$2 r
    for ((r = 0; r < ranks; r++)); do
        if [ ! -f "$dir/report-$r.json" ]; then
            echo "FAIL: no report for rank $r in $dir (found: $(ls "$dir" | tr '\n' ' '))" >&2
            exit 1
        fi
        echo "$dir/report-$r.json"
    done
}
