#!/usr/bin/env bash
# A CUPTI profiler in the job (torch.profiler, a tool of its own: cupti_profiler.c links libcupti
# and subscribes through the PLT, as kineto does).  CUPTI takes one subscriber:
#   before: the profiler holds CUPTI from the start; usbyte cannot watch the warm-up, and the
#           verdict says so, with its fix; the report's CUPTI detail says the application holds it;
#   tool:   the same, subscribed from inside libcupti's caller where no interposer sees it (as an
#           injected tool, Nsight Systems, does): CUPTI turns usbyte away, telling it the holder's
#           name, which the report's CUPTI detail gives;
#   later:  the profiler subscribes while usbyte watches the warm-up: usbyte lets go, the
#           profiler's subscription succeeds and its callbacks are called, and the verdict says
#           why the communicator is not schedulable; once the profiler unsubscribes, a second
#           communicator's warm-up is watched again (and is schedulable).  Should a stall inside
#           an iteration make usbyte profile the first communicator again from the right phase
#           (the log says "profiling again from call K"), that warm-up's verdict is the one kept:
#           watched wholly if it began after the profiler unsubscribed, else not schedulable.
# The fix reaches usbyte-report's summary and page whole.
source "$(dirname "$0")/../runtime_lib.sh"
PROG=$BUILD/tests/integration/cupti/cupti_profiler
need "$BUILD/libusbyte.so" "$PROG" "$BUILD/emu/emu-run" "$BUILD/usbyte-report"
export USBYTE_LOG=info USBYTE_EMU_ALPHA_US=50 USBYTE_EMU_GBPS=1 USBYTE_WARMUP=3 USBYTE_MODE=observe
N=2
REASON="another CUPTI subscriber held CUPTI during the warm-up on rank $((N - 1)), the highest such rank"
FIX="profile without usbyte (leave LD_PRELOAD unset for the profiling run), or run with USBYTE_MODE=observe while \
profiling: usbyte schedules only a job that no CUPTI profiler or NVIDIA tool watches"

for mode in before tool later; do
    LD_PRELOAD="$USBYTE_PRELOAD" USBYTE_REPORT="$WORK/$mode-%r.json" \
        "$BUILD/emu/emu-run" -n $N --timeout 120 -- "$PROG" $mode >"$WORK/$mode.out" 2>&1 \
        || { sed 's/^/    | /' "$WORK/$mode.out" | tail -20; fail "$mode: the run failed (did the profiler get CUPTI?)"; }
    [ "$(grep -c 'cupti_profiler ok' "$WORK/$mode.out")" -eq $N ] || fail "$mode: not every rank finished"
done
grep -E 'profiler (subscribed|unsubscribed|saw)|profiling again' "$WORK/later.out" | sed 's/^/info: later: /'
# Later: the profiler found CUPTI held (by usbyte, the only other subscriber) before it subscribed.
[ "$(grep -c 'profiler subscribed at iteration [1-9]' "$WORK/later.out")" -eq $N ] \
    || fail "later: the profiler did not subscribe while usbyte held CUPTI"
[ "$(grep -c 'usbyte lets it have CUPTI; the 1 communicator profiled now is judged not schedulable' \
    "$WORK/later.out")" -eq $N ] || fail "later: usbyte did not say it let the profiler have CUPTI"
python3 - "$WORK" $N "$REASON" <<'PY'
import json, re, sys
work, n, reason = sys.argv[1], int(sys.argv[2]), sys.argv[3]
detail = {"before": "another CUPTI subscriber (the application's cuptiSubscribe) holds CUPTI",
          "tool": "another CUPTI subscriber holds CUPTI (CUPTI for test-profiler)",
          "later": "another CUPTI subscriber (the application's cuptiSubscribe) took CUPTI during the warm-up"}
watched = "runtime and driver API callbacks during the warm-up"
log = open("%s/later.out" % work).read()
CALLS = 8   # allreduces per iteration of cupti_profiler.c
bad = []
for mode in ("before", "tool", "later"):
    for r in range(n):
        want_detail, want_schedulable = detail[mode], False
        again = re.findall(r"\[rank %d\] usbyte\[%d\]: communicator 0: .*profiling again from call (\d+)" % (r, r), log)
        if mode == "later" and again:
            off = re.findall(r"\[rank %d\] profiler unsubscribed at iteration (\d+)" % r, log)
            after = bool(off) and int(again[-1]) >= CALLS * int(off[0])
            want_detail = watched if after else detail["before"]
            want_schedulable = after
            print("info: later rank %d: profiled again from call %s, the profiler unsubscribed at iteration %s: "
                  "expecting %s" % (r, again[-1], off[0] if off else "?", "a watched warm-up" if after else "no CUPTI"))
        comms = json.load(open("%s/%s-%d.json" % (work, mode, r)))["comms"]
        c = comms[0]
        if mode == "later":
            second = comms[1] if len(comms) == 2 else {}
            so = second.get("pattern", {}).get("stream_ordered_work", {})
            if not so.get("cupti") or (second.get("verdict") or {}).get("schedulable") is not True:
                bad.append("later rank %d: after the profiler unsubscribed, the second communicator: %s, verdict %s"
                           % (r, so, second.get("verdict")))
        so, v = c["pattern"]["stream_ordered_work"], c["verdict"]
        if so["cupti"] != want_schedulable or so["cupti_detail"] != want_detail:
            bad.append("%s rank %d: cupti %s, detail %r" % (mode, r, so["cupti"], so["cupti_detail"]))
        if want_schedulable:
            if v["schedulable"] is not True:
                bad.append("%s rank %d: a watched warm-up, yet schedulable %s, reasons %s"
                           % (mode, r, v["schedulable"], v["reasons"]))
        elif v["schedulable"] is not False or len(v["reasons"]) != 1 or not v["reasons"][0].startswith(reason):
            bad.append("%s rank %d: schedulable %s, reasons %s" % (mode, r, v["schedulable"], v["reasons"]))
for b in bad:
    print("FAIL: " + b)
sys.exit(1 if bad else 0)
PY
"$BUILD/usbyte-report" --summary --quiet -o "$WORK/page" "$WORK"/before-*.json >"$WORK/summary" 2>&1 \
    || { cat "$WORK/summary"; fail "usbyte-report failed"; }
grep -qxF "  fix: $FIX" "$WORK/summary" || { cat "$WORK/summary"; fail "the summary lacks the whole fix"; }
grep -qF "Fix: $FIX</div>" "$WORK/page/usbyte-report.html" || fail "the page lacks the whole fix"
echo "cupti profiler: ok"
