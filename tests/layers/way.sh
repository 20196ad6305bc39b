#!/usr/bin/env bash
# The way of the runtime's calls, measured (docs/design.md, "Layers"): a libusbyte.so whose
# interpose/ and profiler/ functions report their entries and exits (TRACE_CALLS=1, its own
# build in $BUILD/trace-calls) runs framework-shaped trainers in schedule mode on 2 emulated
# ranks, with the runtime's defaults (verification and calibration on), and tests/layers/way.py
# reads the steady state's allreduces from it: the functions, files and tiers each goes through,
# and the most common way.  It fails on what the object check cannot see: a call into a higher
# tier through a function pointer, and a call into a file already on the call's stack.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
SAN=${SAN:-}
TRACE=$BUILD/trace-calls
make --no-print-directory -s SAN="$SAN" BUILD="$TRACE" TRACE_CALLS=1 "$TRACE/libusbyte.so"
PRELOAD=$PWD/$TRACE/libusbyte.so
[[ "$SAN" == *address* ]] && PRELOAD="$(gcc -print-file-name=libasan.so) $PRELOAD"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export USBYTE_MODE=schedule USBYTE_WARMUP=2 USBYTE_EMU_ALPHA_US=300 USBYTE_EMU_GBPS=1 USBYTE_MIN_GAIN_PCT=0
unset USBYTE_VERIFY USBYTE_CALIBRATE USBYTE_COMPLETION
SCALE=(--time-scale 0.05 --bytes-scale 0.002)
fails=0
# trace NAME TRAINER ARGS...: one run, its reports in schedule mode, the way of its allreduces.
trace() {
    local name=$1 trainer=$2
    shift 2
    mkdir -p "$WORK/$name"
    if ! USBYTE_TRACE_CALLS="$WORK/$name/trace" USBYTE_REPORT="$WORK/$name/report-%r.json" LD_PRELOAD="$PRELOAD" \
        "$BUILD/emu/emu-run" -n 2 --timeout 120 -- "$BUILD/trainers/$trainer" "$@" >"$WORK/$name/out" 2>&1; then
        echo "FAIL: $name: the run failed:"
        sed 's/^/    | /' "$WORK/$name/out" | tail -30
        exit 1
    fi
    for r in 0 1; do
        state=$(jq -r '.comms[0].state' "$WORK/$name/report-$r.json")
        if [ "$state" != schedule ]; then
            echo "FAIL: $name: rank $r is in $state, not schedule: the way measured would not be schedule mode's"
            exit 1
        fi
    done
    # The ranks' traces: the two largest files (the launcher's own process traces nothing).
    mapfile -t traces < <(ls -S "$WORK/$name"/trace.* | head -2)
    echo "== $name: $trainer $*"
    jq -r '"   verification kept: \(.comms[0].verification.kept // "-") (\(.comms[0].verification.reason // "no verdict"))"' \
        "$WORK/$name/report-0.json"
    python3 tests/layers/way.py "$TRACE/libusbyte.so" "$TRACE/libusbyte.link-map" "${traces[@]}" --last 60 ||
        fails=$((fails + 1))
}
trace horovod horovod_like --profile data/profiles/resnet50-v100-b64-barrier.json --iters 70 "${SCALE[@]}" \
    --fusion-threshold-mb 0
trace ddp ddp_like --profile data/profiles/resnet50-v100-b64-barrier.json --iters 70 "${SCALE[@]}" \
    --bucket-cap-mb 1 --first-bucket-mb 0.25
trace ddp-group ddp_like --profile data/profiles/resnet50-v100-b64-barrier.json --iters 70 "${SCALE[@]}" \
    --bucket-cap-mb 1 --first-bucket-mb 0.25 --group-rank 1
USBYTE_COMPLETION=call trace per-layer per_layer --profile data/profiles/vgg16-v100-b64.json --iters 70 "${SCALE[@]}"
[ "$fails" -eq 0 ] || { echo "way: $fails of the runs call up a tier or into a file on their stack"; exit 1; }

# Planted faults: traces written by hand from the library's own functions (their offsets from nm),
# each a top-level ncclAllReduce whose calls go as FUNCTIONS say (a nested list), read by way.py.
# planted NAME EXPECT(0: passes, else the line it must print) CALLS
planted() {
    local name=$1 expect=$2 calls=$3
    python3 - "$TRACE/libusbyte.so" "$WORK/planted-$name" "$calls" <<'PY'
import ast, struct, subprocess, sys
lib, out, calls = sys.argv[1], sys.argv[2], ast.literal_eval(sys.argv[3])
sym = {}
for line in subprocess.run(["nm", lib], capture_output=True, text=True, check=True).stdout.splitlines():
    parts = line.split()
    if len(parts) == 3 and parts[1] in "tT":
        sym[parts[2]] = int(parts[0], 16)
events = []
def emit(node):
    fn, children = node[0], node[1:]
    events.append((sym[fn], 1, 1))
    for ch in children:
        emit(ch)
    events.append((sym[fn], 1, 0))
emit(calls)
with open(out, "wb") as f:
    f.write(struct.pack("<Q", 0))
    for e in events:
        f.write(struct.pack("<QII", *e))
PY
    local got rc=0
    got=$(python3 tests/layers/way.py "$TRACE/libusbyte.so" "$TRACE/libusbyte.link-map" "$WORK/planted-$name") || rc=$?
    if [ "$expect" = 0 ]; then
        [ "$rc" -eq 0 ] || { echo "FAIL: planted $name: a legal way is refused:"; echo "$got"; exit 1; }
    elif [ "$rc" -eq 0 ] || ! grep -qF -- "$expect" <<<"$got"; then
        echo "FAIL: planted $name: way.py did not report \"$expect\" (exit $rc):"; echo "$got"; exit 1
    fi
    echo "ok: planted $name"
}
planted legal 0 "['ncclAllReduce', ['ub_coll_before', ['ub_state_lock'], ['ub_sched_call', ['ub_redirect_deferred']]]]"
# The real library calling a wrapper back through the PLT (NCCL's launch calling the CUDA runtime).
planted through-library 0 "['ncclAllReduce', ['ub_coll_before', ['ub_sched_call', ['cudaEventRecord']]]]"
planted callback-upward "upward call: interpose/group.c:ub_group_take_after_launch" \
    "['ncclAllReduce', ['ub_coll_before', ['ub_group_take_after_launch', ['ub_warmup_stream_work']]]]"
planted circle "circle: interpose/defer.c:ub_sched_call entered from interpose/redirect.c:ub_redirect_deferred" \
    "['ncclAllReduce', ['ub_coll_before', ['ub_sched_call', ['ub_redirect_deferred', ['ub_sched_call']]]]]"
echo "way: ok"
