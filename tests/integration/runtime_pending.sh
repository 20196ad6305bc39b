#!/usr/bin/env bash
# Pending events (schedule mode keeps an event recorded after a deferred call unrecorded until the
# block that completes it is issued) and their consumers, on 3 emulated ranks with the
# self-checking loop of runtime_pending.c, with and without the library: a query and an elapsed
# time say cudaErrorNotReady while pending; cudaEventSynchronize, cudaStreamWaitEvent and
# cudaStreamSynchronize from another thread return once the issuing thread issued the blocks, with
# exact results; re-recording or destroying a pending event drops it (no flush); a query loop of
# the issuing thread gets one diagnostic line and is never stopped; an abort from a watchdog thread
# mid-iteration, then cudaEventSynchronize and cudaDeviceSynchronize, all return.
source "$(dirname "$0")/runtime_lib.sh"
PROG=$BUILD/tests/integration/runtime_pending
need "$BUILD/libusbyte.so" "$PROG" "$BUILD/emu/emu-run"
# syncea: the plan's one block holds every call, so call 0's event is pending until the last call;
# it runs whatever it is predicted to gain (USBYTE_MIN_GAIN_PCT=-100).
export USBYTE_EMU_ALPHA_US=200 USBYTE_EMU_GBPS=1 USBYTE_WARMUP=2 USBYTE_LOG=info USBYTE_MIN_GAIN_PCT=-100 \
    USBYTE_POLICY=syncea USBYTE_HANG_S=1
unset USBYTE_MODE USBYTE_COMPLETION
N=3
# The test iteration comes after the warm-up (2) and up to 8 re-issues of the agreement (timings
# not yet settled, as under one hardware queue), so the schedule has begun by then.
ITERS=20
IT=14

# run NAME LIB(none|usbyte) ARGS...: every rank must print "runtime_pending ok".
run() {
    local name=$1 lib=$2
    shift 2
    local pre="" args=("$@") rc=0
    [ "$lib" = usbyte ] && { pre=$USBYTE_PRELOAD; args+=(--expect-pending); }
    LD_PRELOAD="$pre" USBYTE_REPORT="$WORK/$name-$lib-%r.json" \
        "$BUILD/emu/emu-run" -n $N --timeout 60 -- "$PROG" --iters $ITERS "${args[@]}" >"$WORK/$name-$lib.out" 2>&1 || rc=$?
    if [ $rc -ne 0 ] || [ "$(grep -c 'runtime_pending ok' "$WORK/$name-$lib.out")" -ne $N ]; then
        sed 's/^/    | /' "$WORK/$name-$lib.out" | tail -30
        fail "$name ($lib): exit $rc, $(grep -c 'runtime_pending ok' "$WORK/$name-$lib.out") of $N ranks ok"
    fi
    echo "info: $name ($lib): ok"
}

# report NAME PYTHON: asserts on every rank's report (c: the communicator, s: its schedule object).
report() {
    python3 - "$WORK/$1-usbyte" $N "$2" <<'PY' || fail "$1: report check failed"
import json, sys
base, n, code = sys.argv[1], int(sys.argv[2]), sys.argv[3]
for rank in range(n):
    c = json.load(open("%s-%d.json" % (base, rank)))["comms"][0]
    s = c.get("schedule") or {}
    try:
        exec(code)
    except AssertionError as e:
        print("FAIL: rank %d: %s; state %r (%s), schedule %s" % (rank, e, c.get("state"), c.get("state_reason"),
              json.dumps({k: v for k, v in s.items() if k != "blocks"})))
        sys.exit(1)
PY
}
# Scheduled iterations run to the end of the job: at least ITERS - IT + 1 means it began before IT.
SCHEDULED="assert c['state'] == 'schedule' and s['iterations'] >= $((ITERS - IT + 1)), 'not scheduled before the test iteration'"

for lib in none usbyte; do
    run other-thread $lib --other-thread-at $IT
    run rerecord $lib --rerecord-at $IT
    run query-loop $lib --query-loop-at $IT --poll-s 3
done
report other-thread "$SCHEDULED
assert s['unexpected_waits'] == 0 and s['deviations'] == 0, 'a wait of another thread flushed'"
report rerecord "$SCHEDULED
assert s['unexpected_waits'] == 0 and s['deviations'] == 0, 'a re-recorded event was still pending'"
report query-loop "$SCHEDULED
assert s['unexpected_waits'] == 0 and s['deviations'] == 0, 'a query flushed'"
n=$(grep -c 'has polled an event' "$WORK/query-loop-usbyte.out" || true)
[ "$n" -eq $N ] || { grep 'usbyte\[' "$WORK/query-loop-usbyte.out" | sed 's/^/    | /' | tail; fail "query loop: $n diagnostic lines, expected one per rank ($N)"; }

# The watchdog's abort mid-iteration: blocks and events pending, nothing waits for good.
for lib in none usbyte; do
    run watchdog $lib --watchdog-abort-at $IT
    n=$(grep -c 'watchdog: ncclCommAbort returned' "$WORK/watchdog-$lib.out" || true)
    [ "$n" -eq $N ] || fail "watchdog ($lib): $n of $N ranks returned from the waits after the abort"
    grep -m1 'watchdog:' "$WORK/watchdog-$lib.out" | sed "s/^/info: $lib: /"
done
echo "runtime pending: ok"
