#!/usr/bin/env bash
# usbyte-report on what the runtime writes in schedule mode: the DDP-like trainer running its plan
# (Scheduled: the measured blocks of several iterations in the trace, beside the prediction), the
# fused Horovod-like trainer with a refused USBYTE_ALIGN (Not scheduled: the reason and its fix once
# each, whole, on the page and in the summary; the refused value shown), and the DDP-like trainer
# with another USBYTE_POLICY and USBYTE_ALIGN on rank 1 (the ranks disagree: the runtime's reason,
# the page, the summary and the exit status all name both settings).  The checkers must reject a
# page with a wrong derived number and traces that break the format's rules.  With chromium: the
# three pages load cleanly and show their verdict on the first screen (TOOLS_SCREENSHOTS=DIR keeps
# the screenshots).
source "$(dirname "$0")/tools_report_lib.sh"

# ---- schedule mode as the runtime writes it: Horovod without fusion over a latency-bound link
# (make demo's job), where the plan merges and gains; and a DDP job forced to run a plan that
# gains nothing (USBYTE_MIN_GAIN_PCT=0), which the page must not call a success ----
mkdir -p "$WORK/real-sched" "$WORK/forced"
USBYTE_MODE=schedule USBYTE_EMU_ALPHA_US=1000 USBYTE_EMU_GBPS=10 USBYTE_REPORT="$WORK/real-sched/report-%r.json" \
    run horovod-schedule "$WORK/real-sched.out" 4 yes -- horovod_like --profile "$PROFILES/vgg16-v100-b64-barrier.json" \
    --iters 30 --time-scale 0.05 --bytes-scale 0.002 --fusion-threshold-mb 0
USBYTE_MODE=schedule USBYTE_MIN_GAIN_PCT=0 USBYTE_REPORT="$WORK/forced/report-%r.json" run ddp-schedule \
    "$WORK/forced.out" 4 yes -- ddp_like --profile "$PROFILES/resnet50-v100-b64-barrier.json" --iters 40 \
    --time-scale 0.2 --bytes-scale 0.01
mapfile -t FO < <(reports "$WORK/forced" 4)
"$REPORT" --quiet "${FO[@]}" -o "$WORK/out-forced" || fail "forced plan: exit $?"
check "a forced plan" "$WORK/out-forced" "${FO[@]}"
mapfile -t RS < <(reports "$WORK/real-sched" 4)
jq -e '.comms[0].schedule | type == "object"' "${RS[0]}" > /dev/null \
    || fail "the runtime wrote no \"schedule\" object in schedule mode (USBYTE_MIN_GAIN_PCT=0: the plan runs)"
"$REPORT" --quiet "${RS[@]}" -o "$WORK/out-real-sched" || fail "runtime's schedule mode: exit $?"
check "runtime's schedule mode" "$WORK/out-real-sched" "${RS[@]}"
# A recording of several steady iterations per rank, on the wall clock the trace says.
for f in "${RS[@]}"; do
    jq -e '.comms[0].schedule.recording | .clock == "CLOCK_REALTIME" and (.iterations | length) >= 3
           and (.origin > 1e9)' "$f" > /dev/null || fail "$f: no recording of several scheduled iterations"
done
jq -e '.otherData.clock | test("CLOCK_REALTIME")' "$WORK/out-real-sched/usbyte-trace.json" > /dev/null ||
    fail "the trace does not say which clock it is on"

# ---- Horovod with fusion, in schedule mode, a refused setting: not scheduled, reason and fix once ----
mkdir -p "$WORK/hvd-sched"
USBYTE_MODE=schedule USBYTE_ALIGN=500 USBYTE_REPORT="$WORK/hvd-sched/report-%r.json" run horovod-schedule \
    "$WORK/hvd-sched.out" 2 yes -- horovod_like --profile "$PROFILES/vgg16-v100-b64-barrier.json" --iters 12 \
    --time-scale 0.05 --bytes-scale 0.002
mapfile -t HS < <(reports "$WORK/hvd-sched" 2)
"$REPORT" --quiet --summary "${HS[@]}" -o "$WORK/out-hvd-sched" > "$WORK/hs-summary" || fail "horovod schedule: exit $?"
check "horovod in schedule mode" "$WORK/out-hvd-sched" "${HS[@]}"
grep -q 'data-outcome="Not scheduled"' "$WORK/out-hvd-sched/usbyte-report.html" || fail "horovod schedule: not 'Not scheduled'"
[ "$(grep -c '^  fix: Horovod: set HOROVOD_FUSION_THRESHOLD=0' "$WORK/hs-summary")" -eq 1 ] ||
    fail "horovod schedule: the summary's fix is not there once: $(cat "$WORK/hs-summary")"
[ "$(grep -c 'so that usbyte does the fusion' "$WORK/hs-summary")" -eq 1 ] ||
    fail "horovod schedule: the summary's reason is not there once, whole: $(cat "$WORK/hs-summary")"
jq -e '.config.ignored.USBYTE_ALIGN == "500" and .config.USBYTE_ALIGN == "512"' "${HS[0]}" > /dev/null ||
    fail "the refused USBYTE_ALIGN=500 is not in the report"

# ---- ranks with different settings: the page, the summary and the exit status agree ----
mkdir -p "$WORK/settings"
# (rank 1's own environment, as a launcher given per-rank variables would set it)
LD_PRELOAD="$(preload_value)" USBYTE_MODE=schedule USBYTE_REPORT="$WORK/settings/report-%r.json" "$EMU_RUN" -n 4 \
    --timeout 60 -- sh -c 'if [ "$RANK" = 1 ]; then export USBYTE_POLICY=mgwfbp USBYTE_ALIGN=256; fi; exec "$0" "$@"' \
    "$TRAINERS/ddp_like" --profile "$PROFILES/resnet50-v100-b64-barrier.json" --iters 12 --time-scale 0.2 \
    --bytes-scale 0.01 > "$WORK/settings.out" 2>&1 || { fail "the run with different settings failed"; tail -20 "$WORK/settings.out"; }
mapfile -t ST < <(reports "$WORK/settings" 4)
rc=0
"$REPORT" --quiet --summary "${ST[@]}" -o "$WORK/out-settings" > "$WORK/st-summary" || rc=$?
[ $rc -eq 1 ] || fail "different settings: exit $rc, want 1"
for v in USBYTE_POLICY USBYTE_ALIGN; do
    grep -q "^  - $v differs between the ranks: .* on rank 1 " "$WORK/st-summary" || fail "summary: no $v: $(cat "$WORK/st-summary")"
done
grep -q "THE RANKS DISAGREE" "$WORK/st-summary" || fail "summary says the ranks agree"
$CHK html "$WORK/out-settings/usbyte-report.html" "${ST[@]}" --expect-problems 2 || fail "different settings: page"
$CHK trace "$WORK/out-settings/usbyte-trace.json" "${ST[@]}" --sim "$SIM" || fail "different settings: trace"
jq -e '.comms[0].verdict.reasons[0] | test("USBYTE_POLICY") and test("USBYTE_ALIGN") and test("different settings")' \
    "${ST[0]}" > /dev/null || fail "the runtime's reason does not name both settings: $(jq -c .comms[0].verdict "${ST[0]}")"

# ---- the checkers fail where they must ----
sed 's/class="exposed" data-v="[^"]*"/class="exposed" data-v="0.5"/' "$WORK/out-real-sched/usbyte-report.html" > "$WORK/wrong.html"
$CHK html "$WORK/wrong.html" "${RS[@]}" > /dev/null && fail "the checker accepts a wrong exposed communication"
python3 - "$WORK/out-real-sched/usbyte-trace.json" "$WORK/broken" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
ev = doc["traceEvents"]
x = [e for e in ev if e.get("ph") == "X"]
cases = {"overlap": lambda: ev.append(dict(x[0], ts=x[0]["ts"] + x[0]["dur"] / 2, dur=x[0]["dur"])),
         "nodur": lambda: x[1].pop("dur"), "phase": lambda: ev.append({"ph": "Q", "name": "q", "ts": 0}),
         "meta": lambda: ev.append({"ph": "M", "name": "thread_name", "pid": 0, "tid": 0, "args": {}}),
         "tid": lambda: x[2].__setitem__("tid", "one")}
for name, mutate in cases.items():
    d = json.loads(json.dumps(doc))
    ev, x = d["traceEvents"], [e for e in d["traceEvents"] if e.get("ph") == "X"]
    mutate()
    json.dump(d, open("%s-%s.json" % (sys.argv[2], name), "w"))
PY
for b in overlap nodur phase meta tid; do
    $CHK validate "$WORK/broken-$b.json" > /dev/null && fail "the trace validator accepts a trace with a broken $b"
done

# ---- a real browser ----
if have_browser; then
    in_browser scheduled "$WORK/out-real-sched/usbyte-report.html" 0 e8f5e9:2 -- "${RS[@]}"
    in_browser not-scheduled "$WORK/out-hvd-sched/usbyte-report.html" 0 ffebee:1 -- "${HS[@]}"
    in_browser disagreeing "$WORK/out-settings/usbyte-report.html" 2 ffebee:2 -- "${ST[@]}"
else
    echo "info: chromium not installed (make deps installs it): browser checks skipped"
fi

[ $failures -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "tools_report_modes: all checks passed"
