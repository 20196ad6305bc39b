#!/usr/bin/env bash
# The runtime's own checks: only the wrappers are exported (the CUDA runtime and CUPTI ones under
# the real libraries' version nodes, the driver's under a node of ours); a program whose references
# are versioned (cudaStreamWaitEvent@libcudart.so.13) reaches our wrappers through LD_PRELOAD (the
# report sees its upstream events and end events); USBYTE_MODE=off writes nothing and says nothing; results are bit-identical in every mode.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
source tests/integration/preload-env.sh
LIB=$BUILD/libusbyte.so
TRAINER=$BUILD/trainers/ddp_like
for f in "$LIB" "$TRAINER" "$BUILD/emu/emu-run"; do
    [ -e "$f" ] || { echo "missing $f: build it first (make)"; exit 1; }
done
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# 1. Exports: the wrappers and nothing else.
readelf -W --dyn-syms "$LIB" | awk '$7 != "UND" && ($5 == "GLOBAL" || $5 == "WEAK") {print $8}' | sort >"$WORK/exports"
grep -v -E '^(nccl[A-Za-z]+@@USBYTE_NCCL_1|cuda[A-Za-z_]+@@libcudart\.so\.13|cuda[A-Za-z_]+@libcudart\.so\.12|(cuptiSubscribe|cuptiSubscribe_v2|cuptiUnsubscribe)@@libcupti\.so\.13|(cuptiSubscribe|cuptiSubscribe_v2|cuptiUnsubscribe)@libcupti\.so\.12|(cuStreamBeginCapture(_v2)?(_ptsz)?|cuStreamBeginCaptureToGraph(_ptsz)?|cuStreamEndCapture(_ptsz)?|cuGetProcAddress(_v2)?)@@USBYTE_CUDA_DRIVER_1|USBYTE_CUDA_DRIVER_1|USBYTE_NCCL_1|libcudart\.so\.1[23]|libcupti\.so\.1[23])$' "$WORK/exports" \
    && fail "unexpected exports above"
for s in ncclAllReduce@@USBYTE_NCCL_1 ncclGroupStart@@USBYTE_NCCL_1 ncclCommDestroy@@USBYTE_NCCL_1 \
         cudaEventRecord@@libcudart.so.13 cudaStreamWaitEvent@@libcudart.so.13 cudaEventSynchronize@@libcudart.so.13 \
         cuStreamBeginCapture_v2@@USBYTE_CUDA_DRIVER_1 cuGetProcAddress_v2@@USBYTE_CUDA_DRIVER_1; do
    grep -qx "$s" "$WORK/exports" || fail "$s not exported"
done
grep -q '^pnccl' "$WORK/exports" && fail "pncclXxx must stay NCCL's"
# 2. The test program's references are versioned like against the real runtime.
# (into a file first: grep -q stops reading at the first match, and under pipefail readelf's
# SIGPIPE on a big, sanitized symbol table would fail the test at random)
readelf -W --dyn-syms "$TRAINER" >"$WORK/trainer-syms"
grep -q 'cudaStreamWaitEvent@libcudart.so.13' "$WORK/trainer-syms" \
    || fail "$TRAINER does not reference cudaStreamWaitEvent@libcudart.so.13 (emulator not versioned?)"

export USBYTE_EMU_ALPHA_US=200 USBYTE_EMU_GBPS=0.2 USBYTE_WARMUP=2
ARGS=(--profile data/profiles/resnet50-v100-b64-barrier.json --iters 9 --time-scale 0.1 --bytes-scale 0.01)
run() { # OUT PRELOAD MODE
    LD_PRELOAD="$2" USBYTE_MODE="$3" USBYTE_REPORT="$WORK/r-$3-%r.json" \
        "$BUILD/emu/emu-run" -n 2 --timeout 60 -- "$TRAINER" "${ARGS[@]}" >"$1" 2>&1 \
        || { sed 's/^/    | /' "$1"; fail "run $3 failed"; }
}
run "$WORK/base.out" "" none
run "$WORK/off.out" "$USBYTE_PRELOAD" off
run "$WORK/observe.out" "$USBYTE_PRELOAD" observe
sums() { grep -o 'checksum [0-9a-f]\{16\}' "$1" | sort; }
[ "$(sums "$WORK/base.out" | wc -l)" -eq 2 ] || fail "no checksums in the baseline run"
[ "$(sums "$WORK/base.out")" = "$(sums "$WORK/off.out")" ] || fail "USBYTE_MODE=off changed the results"
[ "$(sums "$WORK/base.out")" = "$(sums "$WORK/observe.out")" ] || fail "observe changed the results"
# 3. Off: silent, no report.
grep -q 'usbyte\[' "$WORK/off.out" && fail "USBYTE_MODE=off printed something"
ls "$WORK"/r-off-* >/dev/null 2>&1 && fail "USBYTE_MODE=off wrote a report"
# 4. Observe: both ranks report; the versioned CUDA references reached the wrappers.
python3 - "$WORK/r-observe-0.json" "$WORK/r-observe-1.json" <<'PY'
import json, sys
reps = [json.load(open(p)) for p in sys.argv[1:]]
for r in reps:
    c = r["comms"][0]
    assert c["state"] == "planned", c["state"]
    pat = c["pattern"]
    assert pat["ready"]["upstream_event_calls"] > 0, "cudaStreamWaitEvent not intercepted: %r" % pat
    assert pat["consumers"]["end_events_on_nccl_stream"], "cudaEventRecord not intercepted: %r" % pat
    assert pat["stream_ordered_work"]["cupti"], pat
assert reps[0]["comms"][0]["profile"] == reps[1]["comms"][0]["profile"]
print("info: versions %s" % json.dumps(reps[0]["versions"]))
PY
# 5. Configuration that says what is wrong: a USBYTE_NCCL_LIB that is not NCCL, and a value that
# is not UTF-8 (still in the report's config, its bad bytes replaced).
LD_PRELOAD="$USBYTE_PRELOAD" USBYTE_MODE=observe USBYTE_NCCL_LIB=libm.so.6 USBYTE_REPORT="$WORK/r-notnccl-%r.json" \
    "$BUILD/emu/emu-run" -n 2 --timeout 60 -- "$TRAINER" "${ARGS[@]}" >"$WORK/notnccl.out" 2>&1 \
    || { sed 's/^/    | /' "$WORK/notnccl.out"; fail "USBYTE_NCCL_LIB=libm.so.6: the run failed"; }
[ "$(grep -c 'USBYTE_NCCL_LIB="libm.so.6" is not NCCL' "$WORK/notnccl.out")" -eq 2 ] \
    || fail "USBYTE_NCCL_LIB=libm.so.6: not one line per rank saying it is not NCCL"
[ "$(sums "$WORK/base.out")" = "$(sums "$WORK/notnccl.out")" ] || fail "USBYTE_NCCL_LIB=libm.so.6 changed the results"
# USBYTE_NCCL_LIB naming usbyte itself: said, and the process's own NCCL used.
LD_PRELOAD="$USBYTE_PRELOAD" USBYTE_MODE=observe USBYTE_NCCL_LIB="$(readlink -f "$LIB")" USBYTE_REPORT="$WORK/r-self-%r.json" \
    "$BUILD/emu/emu-run" -n 2 --timeout 60 -- "$TRAINER" "${ARGS[@]}" >"$WORK/self.out" 2>&1 \
    || { sed 's/^/    | /' "$WORK/self.out"; fail "USBYTE_NCCL_LIB=libusbyte.so: the run failed"; }
[ "$(grep -c "USBYTE_NCCL_LIB=\".*libusbyte.so\" is usbyte's own library, not NCCL" "$WORK/self.out")" -eq 2 ] \
    || fail "USBYTE_NCCL_LIB=libusbyte.so: not one line per rank saying it is usbyte's own: $(grep usbyte "$WORK/self.out" | head -3)"
[ "$(sums "$WORK/base.out")" = "$(sums "$WORK/self.out")" ] || fail "USBYTE_NCCL_LIB=libusbyte.so changed the results"
LD_PRELOAD="$USBYTE_PRELOAD" USBYTE_MODE=observe USBYTE_NCCL_LIB=$'/nonexistent/lib\xffnccl.so' \
    USBYTE_REPORT="$WORK/r-utf-%r.json" "$BUILD/emu/emu-run" -n 2 --timeout 60 -- "$TRAINER" "${ARGS[@]}" \
    >"$WORK/utf.out" 2>&1 || { sed 's/^/    | /' "$WORK/utf.out"; fail "a non-UTF-8 value: the run failed"; }
python3 - "$WORK/r-utf-0.json" <<'PY' || fail "a non-UTF-8 configuration value is missing from the report"
import json, sys
v = json.load(open(sys.argv[1]))["config"]["USBYTE_NCCL_LIB"]
assert v == "/nonexistent/lib\ufffdnccl.so", repr(v)
PY

if [[ "${SAN:-}" == *thread* ]]; then
    # ThreadSanitizer kills a child that starts threads after a multi-threaded fork.
    echo "info: fork test skipped under ThreadSanitizer"
    echo "runtime modes: ok"
    exit 0
fi
# 5. Fork: the child's exit writes no report and leaves the parent's intact.
FORK=$BUILD/tests/integration/runtime_fork
[ -x "$FORK" ] || fail "missing $FORK: build it first (make)"
mkdir "$WORK/fork"
LD_PRELOAD="$USBYTE_PRELOAD" USBYTE_MODE=observe USBYTE_WARMUP=2 USBYTE_REPORT="$WORK/fork/r-%r-%p.json" \
    "$BUILD/emu/emu-run" -n 2 --timeout 60 -- "$FORK" >"$WORK/fork.out" 2>&1 \
    || { sed 's/^/    | /' "$WORK/fork.out"; fail "fork test failed"; }
n=$(ls "$WORK/fork" | grep -c '\.json$' || true)
[ "$n" -eq 2 ] || fail "fork test: $n reports (expected one per rank): $(ls "$WORK/fork")"
ls "$WORK/fork" | grep -q partial && fail "fork test: a .partial report was left behind"
python3 - "$WORK"/fork/*.json <<'PY'
import json, sys
for p in sys.argv[1:]:
    c = json.load(open(p))["comms"][0]
    assert c["state"] == "planned", (p, c["state"], c.get("state_reason"))
    assert c["calls_per_iteration"] == 4, c["calls_per_iteration"]
PY
echo "runtime modes: ok"
