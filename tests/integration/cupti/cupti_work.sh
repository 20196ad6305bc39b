#!/usr/bin/env bash
# Every way a program puts work on the NCCL stream (tests/emu/testing/stream_work.h: the runtime's
# and the driver's launches, graphs, host functions, callbacks, copies and memsets, _ptsz forms
# included) is seen during the warm-up, each call once (a runtime call reports the driver function
# it goes through inside its own callback: not counted again), and the verdict says what kind of
# work it was and what removes it.  NCCL's own kernel launch on that stream (cuLaunchKernelEx,
# which the emulated NCCL reports as the real one is seen) is not the application's work: a
# program with nothing else on the stream is schedulable.  Program: cupti_work.c.
source "$(dirname "$0")/../runtime_lib.sh"
PROG=$BUILD/tests/integration/cupti/cupti_work
need "$BUILD/libusbyte.so" "$PROG" "$BUILD/emu/emu-run"
export USBYTE_EMU_ALPHA_US=50 USBYTE_EMU_GBPS=1 USBYTE_WARMUP=3 USBYTE_MODE=observe USBYTE_LOG=debug
N=2

run() { # NAME: cupti_work NAME on N ranks, report in $WORK/NAME-%r.json, output in $WORK/NAME.out
    LD_PRELOAD="$USBYTE_PRELOAD" USBYTE_REPORT="$WORK/$1-%r.json" \
        "$BUILD/emu/emu-run" -n $N --timeout 120 -- "$PROG" "$1" >"$WORK/$1.out" 2>&1 \
        || { sed 's/^/    | /' "$WORK/$1.out" | tail -20; fail "cupti_work $1: the run failed"; }
    [ "$(grep -c 'cupti_work ok' "$WORK/$1.out")" -eq $N ] || fail "cupti_work $1: not every rank checked its results"
}

for mode in none all rt_copy cu_launch; do
    run $mode
done
python3 - "$WORK" $N <<'PY'
import collections, json, re, sys
work, n = sys.argv[1], int(sys.argv[2])
bad = []
def comm(mode, rank):
    return json.load(open("%s/%s-%d.json" % (work, mode, rank)))["comms"][0]
COPIES, COMPUTE = "stream-ordered work on the NCCL stream", "stream-ordered compute on the NCCL stream"
for mode in ("none", "all", "rt_copy", "cu_launch"):
    out = open("%s/%s.out" % (work, mode)).read()
    kinds = re.findall(r"^\[rank 0\] kind (\S+)$", out, re.M)
    for r in range(n):
        c = comm(mode, r)
        so, v = c["pattern"]["stream_ordered_work"], c["verdict"]
        reasons = v["reasons"]
        if not so["cupti"]:
            bad.append("%s rank %d: CUPTI not held: %s" % (mode, r, so["cupti_detail"]))
        # The warm-up counted is the last one: a re-phased profile (the iteration's start moved)
        # begins again from zero.
        starts = [m.end() for m in re.finditer(r"^\[rank %d\] usbyte\[%d\]: communicator 0: .*profiling (\d+ iterations|again) "
                                               r"from call \d+" % (r, r), out, re.M)]
        seen = collections.Counter(re.findall(r"^\[rank %d\] usbyte\[%d\]: communicator 0: (\S+) on its NCCL stream "
                                              r"during the warm-up$" % (r, r), out[starts[-1] if starts else 0:], re.M))
        if mode == "none":
            if v["schedulable"] is not True or so["operations"] != 0 or seen:
                bad.append("none rank %d: schedulable %s, %s operations %s (NCCL's own launch counted?): %s"
                           % (r, v["schedulable"], so["operations"], dict(seen), reasons))
            continue
        # Each kind once per iteration: each name as often as every other, and nothing else.
        if set(seen) != set(kinds) or len(set(seen.values())) != 1:
            missing = sorted(set(kinds) - set(seen))
            extra = sorted(set(seen) - set(kinds))
            bad.append("%s rank %d: seen %s; never seen %s, not issued %s" % (mode, r, dict(seen), missing, extra))
            continue
        per = next(iter(seen.values()))
        if so["operations"] != per * len(kinds):
            bad.append("%s rank %d: %s operations reported, %d kinds seen %d times each" % (mode, r, so["operations"],
                                                                                          len(kinds), per))
        copies = any(x.startswith(COPIES) for x in reasons)
        compute = any(x.startswith(COMPUTE) for x in reasons)
        want = {"all": (True, True), "rt_copy": (True, False), "cu_launch": (False, True)}[mode]
        if v["schedulable"] is not False or (copies, compute) != want:
            bad.append("%s rank %d: schedulable %s, reasons %s" % (mode, r, v["schedulable"], reasons))
    print("info: %s: %d kinds, %s" % (mode, len(kinds), comm(mode, 0)["pattern"]["stream_ordered_work"]))
for b in bad:
    print("FAIL: " + b)
sys.exit(1 if bad else 0)
PY
echo "cupti work: ok"
