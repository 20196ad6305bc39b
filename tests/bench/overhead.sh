#!/usr/bin/env bash
# make bench-overhead: the host cost of libusbyte.so per intercepted call (see overhead.c).
# Each configuration runs REPEAT times; the table shows the median.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
source tests/integration/preload-env.sh
BIN=$BUILD/tests/bench/overhead
REPEAT=${REPEAT:-3}
export USBYTE_EMU_ALPHA_US=0 USBYTE_EMU_PAYLOAD=0 USBYTE_WARMUP=5 USBYTE_LOG=warn
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
run() { # NAME PRELOAD MODE
    for ((i = 0; i < REPEAT; i++)); do
        LD_PRELOAD="$2" USBYTE_MODE="$3" USBYTE_REPORT="$WORK/report-%r.json" \
            "$BUILD/emu/emu-run" -n 1 --timeout 120 -- "$BIN" >"$WORK/$1.$i" 2>&1 \
            || { cat "$WORK/$1.$i"; exit 1; }
    done
    cat "$WORK/$1".* | sed 's/^\[rank 0\] //' >"$WORK/$1.all"
}
# median over the runs of: via-symbol ns, direct ns, and their difference
row() { # NAME WHAT
    awk -v w="$2" '$1 == w {print $2, $3, $2 - $3}' "$WORK/$1.all" | sort -k3 -n |
        awk '{a[NR]=$0} END {split(a[int((NR+1)/2)], f, " "); printf "%8.1f %8.1f %+8.1f", f[1], f[2], f[3]}'
}
run none "" observe
run off "$USBYTE_PRELOAD" off
state_of() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['comms'][0]['state'])" "$WORK/report-0.json" 2>/dev/null || echo "?"; }
run observe "$USBYTE_PRELOAD" observe
observe_state=$(state_of)
# Every plan of these tiny calls gains little: the threshold at 0 makes the communicator run one.
USBYTE_MIN_GAIN_PCT=0 run schedule "$USBYTE_PRELOAD" schedule
schedule_state=$(state_of)
echo "host ns per call, median of $REPEAT runs: through the linked symbol, direct to the real function, difference"
printf '%-18s %-26s %-26s %-26s %-26s\n' "" "no library" "preloaded, USBYTE_MODE=off" "observe (steady)" "schedule (steady)"
for what in ncclAllReduce cudaEventRecord; do
    printf '%-18s %-26s %-26s %-26s %-26s\n' "$what" "$(row none $what)" "$(row off $what)" "$(row observe $what)" "$(row schedule $what)"
done
echo "communicator state when timing ran: observe $observe_state, schedule $schedule_state (after warm-up, agreement and plan)"
echo "schedule: an intercepted allreduce is deferred and its iteration's blocks issued from it; the real call is one allreduce"
echo "cudaEventRecord is on a stream usbyte is not involved with (the wrappers' fast path)"

# The CUDA calls of schedule mode, counted by the runtime (the report's schedule.cuda_calls over
# schedule.deferred_calls, from the switch to the plan to the end): per plan and per shape of the
# training loop (tests/bench/calls.c).  They include the records usbyte makes in place of the
# application's (the ddp shape records one end event per call), which the application would have
# made itself.
CALL_ITERS=${CALL_ITERS:-400}
echo
echo "schedule mode: real CUDA calls per deferred allreduce (16 calls per iteration, $CALL_ITERS iterations, 1 rank)"
printf '%-8s %-6s %-8s %-16s %s\n' policy shape blocks "calls/deferred" "of which the application's own records"
for policy in syncea best wfbp; do
    for shape in bare ddp; do
        rm -f "$WORK"/calls-*.json
        USBYTE_POLICY=$policy USBYTE_MIN_GAIN_PCT=-100 LD_PRELOAD="$USBYTE_PRELOAD" USBYTE_MODE=schedule \
            USBYTE_REPORT="$WORK/calls-%r.json" "$BUILD/emu/emu-run" -n 1 --timeout 120 -- \
            "$BUILD/tests/bench/calls" "$CALL_ITERS" 16 $shape >"$WORK/calls.out" 2>&1 || { cat "$WORK/calls.out"; exit 1; }
        python3 - "$WORK/calls-0.json" $policy $shape <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["comms"][0]
s = c.get("schedule") or {}
if c["state"] != "schedule" or not s.get("deferred_calls"):
    sys.exit("calls: %s/%s not scheduled: %s (%s)" % (sys.argv[2], sys.argv[3], c["state"], c.get("state_reason")))
own = 1.0 if sys.argv[3] == "ddp" else 0.0
print("%-8s %-6s %-8d %-16.2f %.2f" % (sys.argv[2], sys.argv[3], len(c["plan"]["blocks"]), s["cuda_calls_per_deferred_call"], own))
PY
    done
done
