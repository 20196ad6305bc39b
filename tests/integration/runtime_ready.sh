#!/usr/bin/env bash
# The runtime's ready reading of every profiled allreduce is the time of the very record the NCCL
# stream waited on, to the microsecond: tests/integration/runtime_ready.c re-records a producer
# event before the runtime can have read the previous record's time, and issues half the calls
# from a second thread.  Every record is issued before its stream reaches it (a gate), so the
# application's own timing event right after it carries the same time as the runtime's.  The
# runtime's per-iteration readings (USBYTE_LOG=debug "raw it" lines, against its own epoch) minus
# the program's (against its first record) must be one constant for all calls of all profiled
# iterations; a reading of the wrong record is off by 0.3 ms or more.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
source tests/integration/preload-env.sh
PROG=$BUILD/tests/integration/runtime_ready
for f in "$BUILD/libusbyte.so" "$PROG" "$BUILD/emu/emu-run"; do
    [ -e "$f" ] || { echo "missing $f: build it first (make)"; exit 1; }
done
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# Second run: one gate per iteration, opened after the host issued it all: the runtime must not
# wait, at the agreement, for the producer of the call being issued (the run would hang).  That
# gate is a host function waiting for the host, which no GPU work does: a stream sharing the
# compute stream's hardware queue could not begin before the host has issued the iteration, and
# the agreement the runtime waits for at the switch would wait for the gate.  So that run gets a
# queue per stream, whatever CUDA_DEVICE_MAX_CONNECTIONS the suite runs under.
for mode in call-gates iteration-gate; do
echo "== $mode"
queues=()
[ $mode = iteration-gate ] && queues=(CUDA_DEVICE_MAX_CONNECTIONS=32)
env "${queues[@]}" LD_PRELOAD="$USBYTE_PRELOAD" USBYTE_LOG=debug USBYTE_WARMUP=5 USBYTE_REPORT="$WORK/r-%r.json" \
    "$BUILD/emu/emu-run" -n 2 --timeout 30 -- "$PROG" $mode >"$WORK/out" 2>&1 \
    || { sed 's/^/    | /' "$WORK/out" | tail -40; echo "FAIL: runtime_ready $mode failed"; exit 1; }
python3 - "$WORK/out" "$WORK" <<'PY'
import json, math, re, sys
work = sys.argv[2]
TOL = 5e-6   # the debug line prints microseconds
lines = open(sys.argv[1]).read().splitlines()
bad = 0
for r in (0, 1):
    mine = [l for l in lines if l.startswith("[rank %d]" % r)]
    truth, raw, start, period = {}, {}, None, None
    for l in mine:
        m = re.search(r"truth call (\d+) offset ([-\d.e]+)", l)
        if m:
            truth[int(m[1])] = float(m[2])
        m = re.search(r"period (\d+) calls found at call \d+; profiling (\d+) iterations from call (\d+)", l)
        if m:
            period, start = int(m[1]), int(m[3])
        m = re.search(r"raw it (\d+) call (\d+): ready ([-\d.e]+|nan)", l)
        if m:
            raw[(int(m[1]), int(m[2]))] = float(m[3])
    if period != 4 or start is None or len(raw) != 5 * 4 or not truth:
        print("FAIL: rank %d: period %r, start %r, %d readings, %d truths" % (r, period, start, len(raw), len(truth)))
        bad = 1
        continue
    # The profile starts at an iteration boundary of the detector's phase: reading (it, k) is
    # the program's call start + 4 it + k (the program issues nothing else on the communicator).
    # A reading not yet complete when the agreement went out is nan (the agreement never waits
    # for timing): allowed only in an iteration the rank did not use.
    used = set(json.load(open("%s/r-%d.json" % (work, r)))["comms"][0]["warmup_iterations_used"])
    for (it, k), v in sorted(raw.items()):
        if math.isnan(v) and it in used:
            print("FAIL: rank %d: profiled iteration %d call %d is used but has no ready time" % (r, it, k))
            bad = 1
    raw = {key: v for key, v in raw.items() if not math.isnan(v)}
    if not used or len(raw) < 4:
        print("FAIL: rank %d: %d iterations used, %d readings" % (r, len(used), len(raw)))
        bad = 1
        continue
    diffs = {key: v - truth[start + 4 * key[0] + key[1]] for key, v in raw.items()}
    ref = sorted(diffs.values())[len(diffs) // 2]
    worst = max(abs(d - ref) for d in diffs.values())
    for (it, k), d in sorted(diffs.items()):
        if not abs(d - ref) <= TOL:
            print("FAIL: rank %d: profiled iteration %d call %d (program call %d): ready off by %+.1f us"
                  % (r, it, k, start + 4 * it + k, 1e6 * (d - ref)))
            bad = 1
    print("info: rank %d: %d readings (iterations used: %s), largest difference from the program's own event times %.1f us"
          % (r, len(diffs), sorted(used), 1e6 * worst))
sys.exit(bad)
PY
done
echo "runtime ready: ok"
