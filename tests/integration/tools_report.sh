#!/usr/bin/env bash
# usbyte-report on reports that the tests produce: the DDP-like trainer on 4 emulated ranks and the
# fused Horovod-like trainer on 2 (not schedulable, with a reason and its fix), in observe mode,
# and a schedule-mode report derived from them.  Checked (tools_report_check.py): every number the
# page shows equals its report's, the numbers it derives (communication exposed, share hidden,
# ready-time spread across ranks) follow from the reports, the headline follows the state, each
# reason and fix appears once, the chart has an axis and a legend and says which predictions are
# equal, the run's details are shown, every policy's timeline lane, plan block, profile call and
# rank row is there, the page loads nothing from outside, its SVGs are well-formed; the trace
# follows the Chrome trace event format, its model is the report's plan and usbyte-sim's plans, and
# each rank's recording is its report's; the timeline is usbyte-sim --svg's drawing; ranks that
# disagree are shown in red and exit 1; the DDP job's page says what usbyte can and cannot do with
# DDP's buckets, with the bound on a smaller bucket_cap_mb that usbyte-sim gives for the profile
# derived here, and the Horovod page has no such section; another report version and malformed input exit 2 with one
# line naming the file and the place.  With chromium: the page loads without a console message, a
# screenshot is not blank and shows the verdict, and the DOM's numbers equal the JSON's.
# tools_report_modes.sh covers the runtime's schedule mode, tools_report_jobs.sh jobs and runs.
source "$(dirname "$0")/tools_report_lib.sh"

mkdir -p "$WORK/ddp" "$WORK/hvd"
USBYTE_REPORT="$WORK/ddp/report-%r.json" run ddp "$WORK/ddp.out" 4 yes -- ddp_like \
    --profile "$PROFILES/resnet50-v100-b64-barrier.json" --iters 12 --time-scale 0.2 --bytes-scale 0.01
USBYTE_REPORT="$WORK/hvd/report-%r.json" run horovod "$WORK/hvd.out" 2 yes -- horovod_like \
    --profile "$PROFILES/vgg16-v100-b64-barrier.json" --iters 12 --time-scale 0.05 --bytes-scale 0.002
mapfile -t DDP < <(reports "$WORK/ddp" 4)
mapfile -t HVD < <(reports "$WORK/hvd" 2)

# ---- observe reports ----
"$REPORT" "${DDP[@]}" -o "$WORK/out-ddp" > "$WORK/stdout" || fail "ddp: exit $?"
grep -q "wrote $WORK/out-ddp/usbyte-report.html and $WORK/out-ddp/usbyte-trace.json" "$WORK/stdout" ||
    fail "ddp: does not say what it wrote: $(cat "$WORK/stdout")"
check ddp "$WORK/out-ddp" "${DDP[@]}"
# DDP's buckets: the page says what usbyte can and cannot do with them, and bounds what a smaller
# bucket_cap_mb could gain by the lower bound of the profile whose buckets' bytes are ready as
# soon as the previous bucket of their dtype and op (derived here from the report, bounded by
# usbyte-sim); the Horovod page, whose calls are fused buffers of every size, has no such section.
python3 - "${DDP[0]}" "$WORK/earliest.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["comms"][0]
prof = c["profile"]
prev = {}
for call in prof["calls"]:
    key = (call.get("dtype", "float32"), call.get("op", "sum"))
    own = dict(call)  # the previous bucket's own ready time and need, not the moved ones
    if key in prev:
        call["ready"], call["need"] = min(call["ready"], prev[key]["ready"]), max(call.get("need", 0), prev[key].get("need", 0))
    prev[key] = own
json.dump(prof, open(sys.argv[2], "w"))
PY
want_bound=$("$SIM" "$WORK/earliest.json" --policy wfbp --json | jq -r 'select(.policy == "wfbp") | .lower_bound')
want_best=$("$SIM" "${DDP[0]}" --policy best --json | jq -r 'select(.policy == "best") | .iteration')
page_value() { grep -o "class=\"$1\" data-v=\"[^\"]*\"" "$2" | head -1 | sed 's/.*data-v="\([^"]*\)"/\1/'; }
grep -q 'id="ddp-0"' "$WORK/out-ddp/usbyte-report.html" || fail "ddp: no section on DDP's buckets"
grep -q "usbyte sees the buckets, not the tensors in them" "$WORK/out-ddp/usbyte-report.html" ||
    fail "ddp: the page does not say that usbyte sees buckets, not tensors"
got_bound=$(page_value ddp-bound "$WORK/out-ddp/usbyte-report.html")
got_best=$(page_value ddp-best "$WORK/out-ddp/usbyte-report.html")
got_gain=$(page_value ddp-gain "$WORK/out-ddp/usbyte-report.html")
awk -v g="$got_bound" -v w="$want_bound" 'BEGIN { d = g - w; exit !(w > 0 && (d < 0 ? -d : d) <= 1e-12 * w) }' ||
    fail "ddp: the page bounds finer buckets at '$got_bound' s, usbyte-sim's lower bound of the earliest profile is $want_bound s"
awk -v g="$got_best" -v w="$want_best" 'BEGIN { d = g - w; exit !(w > 0 && (d < 0 ? -d : d) <= 1e-12 * w) }' ||
    fail "ddp: the page's best on the buckets is '$got_best' s, usbyte-sim's $want_best s"
awk -v g="$got_gain" -v b="$want_best" -v l="$want_bound" 'BEGIN { w = b / l - 1; if (w < 0) w = 0; d = g - w; exit !((d < 0 ? -d : d) <= 1e-9) }' ||
    fail "ddp: the page's gain left to finer buckets is '$got_gain', best/bound - 1 is $(awk -v b="$want_best" -v l="$want_bound" 'BEGIN { print b / l - 1 }')"
# A quoted wildcard is expanded, and the summary names the verdict.
"$REPORT" "$WORK/hvd/report-*.json" -o "$WORK/out-hvd" --summary > "$WORK/summary" || fail "hvd: exit $?"
check horovod "$WORK/out-hvd" "${HVD[@]}"
grep -q "not schedulable" "$WORK/summary" || fail "hvd summary: no verdict: $(cat "$WORK/summary")"
grep -q "fix: .*HOROVOD_FUSION_THRESHOLD=0" "$WORK/summary" || fail "hvd summary: no fix"
grep -q 'class="box bad verdict" id="verdict-0"' "$WORK/out-hvd/usbyte-report.html" || fail "hvd: verdict not red"
grep -q 'id="ddp-0"' "$WORK/out-hvd/usbyte-report.html" && fail "hvd: fused buffers taken for DDP's buckets"

# usbyte-sim --svg and the page draw the same timeline: the same shapes, attribute for attribute.
"$SIM" "${DDP[0]}" --policy all --svg "$WORK/sim.svg" > /dev/null
shapes() { grep -oE '<(rect|line) class="ub-[a-z]+"[^>]*>' "$1" | sort; }
[ "$(shapes "$WORK/sim.svg" | wc -l)" -gt 10 ] || fail "usbyte-sim --svg drew no classed shapes"
diff <(shapes "$WORK/sim.svg") <(shapes "$WORK/out-ddp/usbyte-report.html") > "$WORK/svgdiff" ||
    fail "the page's timeline differs from usbyte-sim --svg: $(head -5 "$WORK/svgdiff")"

# ---- schedule mode: the runtime's "schedule" object added to real reports ----
mkdir -p "$WORK/sched"
python3 - "$WORK/sched" "${DDP[@]}" <<'PY'
import json, sys
out = sys.argv[1]
for path in sys.argv[2:]:
    r = json.load(open(path))
    c = r["comms"][0]
    c["state"] = "schedule"
    plan = c["plan"]
    # Measured blocks: the plan's, each a little late, by an amount that depends on rank and block.
    late = [0.0002 * (1 + (r["rank"] + b) % 3) for b in range(len(plan["blocks"]))]
    blocks = [{"start": b["start"] + d, "end": b["end"] + d} for b, d in zip(plan["blocks"], late)]
    # Faster than without the plan whatever the machine measured (the page is green then).
    meas = c["measured_iteration"] * 0.8 + 0.0001 * r["rank"]
    c["schedule"] = {"iterations": 20 + r["rank"], "measured_iteration": meas,
                     "predicted_iteration": plan["iteration"], "measured_pass_through": c["measured_iteration"],
                     "measured_speedup": c["measured_iteration"] / meas,
                     "predicted_speedup": c["measured_iteration"] / plan["iteration"], "deviations": 1,
                     "flushes": 2, "staging_bytes": 1 << 20, "completion": "stream", "blocks": blocks}
    plan["optimal"] = True
    json.dump(r, open("%s/report-%d.json" % (out, r["rank"]), "w"))
PY
mapfile -t SCHED < <(reports "$WORK/sched" 4)
"$REPORT" --quiet "${SCHED[@]}" -o "$WORK/out-sched" || fail "schedule: exit $?"
check schedule "$WORK/out-sched" "${SCHED[@]}"
grep -q 'id="optimal-0">optimal' "$WORK/out-sched/usbyte-report.html" || fail "schedule: optimal not shown"
grep -q '>Scheduled<' "$WORK/out-sched/usbyte-report.html" || fail "schedule: verdict does not say scheduled"
grep -q '<th title="this rank.s steady iterations with the plan running">own iteration, plan running' \
    "$WORK/out-sched/usbyte-report.html" || fail "schedule: no per-rank column"

# ---- a rank whose settings differ (the runtime keeps every rank in pass-through, with the same
# agreed values): its row of the ranks table says so, not "same" ----
mkdir -p "$WORK/setdiff"
cp "${DDP[0]}" "${DDP[1]}" "${DDP[2]}" "$WORK/setdiff/"
# (python, not jq: jq may round a double, which would make the agreed values differ too)
python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); r["config"]["USBYTE_WARMUP"] = 3
json.dump(r, open(sys.argv[2], "w"))' "${DDP[3]}" "$WORK/setdiff/report-3.json"
rc=0
"$REPORT" --quiet "$WORK"/setdiff/report-*.json -o "$WORK/out-setdiff" || rc=$?
[ $rc -eq 1 ] || fail "a rank's settings differ: exit $rc, want 1"
python3 - "$WORK/out-setdiff/usbyte-report.html" <<'PY' || fail "a rank's settings differ: its row says the same"
import re, sys
page = open(sys.argv[1]).read()
table = re.search(r'<table class="sortable" id="ranks-0">.*?</table>', page, re.S).group(0)
rows = {int(m.group(1)): m.group(0) for m in re.finditer(r'<tr data-rank="(\d+)">.*?</tr>', table, re.S)}
assert 'settings differ from rank 0&#39;s: USBYTE_WARMUP=3' in rows[3] or "settings differ from rank 0's: USBYTE_WARMUP=3" in rows[3], rows[3]
assert '>same<' not in rows[3], rows[3]
assert '>same<' in rows[1], rows[1]
PY

# ---- two communicators: the second a copy of the first under index 1 ----
mkdir -p "$WORK/two"
for f in "${DDP[@]}"; do jq '.comms += [.comms[0] | .index = 1]' "$f" > "$WORK/two/$(basename "$f")"; done
mapfile -t TWO < <(reports "$WORK/two" 4)
"$REPORT" --quiet "${TWO[@]}" -o "$WORK/out-two" || fail "two communicators: exit $?"
check "two communicators" "$WORK/out-two" "${TWO[@]}"
grep -q 'id="comm-1"' "$WORK/out-two/usbyte-report.html" || fail "two communicators: no section for the second"

# ---- ranks that disagree: rank 2's plan and rank 3's verdict changed ----
mkdir -p "$WORK/diff"
cp "${DDP[0]}" "${DDP[1]}" "$WORK/diff/"
jq '.comms[0].plan.blocks[0].end += 1e-4' "${DDP[2]}" > "$WORK/diff/report-2.json"
jq '.comms[0].verdict.reasons += ["a reason only this rank has"]' "${DDP[3]}" > "$WORK/diff/report-3.json"
rc=0
"$REPORT" --quiet "$WORK"/diff/report-*.json -o "$WORK/out-diff" || rc=$?
[ $rc -eq 1 ] || fail "disagreeing ranks: exit $rc, want 1"
$CHK html "$WORK/out-diff/usbyte-report.html" "$WORK"/diff/report-*.json --expect-problems 2 \
    --expect-diff 2:plan --expect-diff 3:verdict || fail "disagreeing ranks: page"
# The checker itself must see a disagreement that the page hides.
$CHK html "$WORK/out-diff/usbyte-report.html" "$WORK"/diff/report-*.json > /dev/null &&
    fail "the checker accepts a page with problems when none are expected"

# ---- bad input: exit 2, one line naming the file and the place ----
expect_bad() {
    local what=$1 want=$2
    shift 2
    local rc=0
    timeout 20 "$REPORT" --quiet "$@" -o "$WORK/bad" > /dev/null 2> "$WORK/err" || rc=$?
    [ $rc -eq 2 ] || { fail "$what: exit $rc, want 2"; return; }
    [ "$(wc -l < "$WORK/err")" -eq 1 ] || { fail "$what: not one line: $(cat "$WORK/err")"; return; }
    grep -Eq -- "$want" "$WORK/err" || fail "$what: '$(cat "$WORK/err")' does not match '$want'"
}
B=$WORK/b
mkdir -p "$B"
jq '.usbyte_report = 2' "${DDP[0]}" > "$B/v2.json"
expect_bad "version 2" "^usbyte-report: $B/v2.json: usbyte_report: version 2 is not supported \(this usbyte-report reads version 1\)$" "$B/v2.json"
head -c 500 "${DDP[0]}" > "$B/cut.json"
expect_bad "truncated JSON" "^usbyte-report: $B/cut.json: .*line [0-9]+" "$B/cut.json"
jq '.comms[0].fit.alpha = "fast"' "${DDP[0]}" > "$B/alpha.json"
expect_bad "string alpha" "$B/alpha.json: comms\[0\]\.fit\.alpha: must be a non-negative number, got a string" "$B/alpha.json"
jq '.comms[0].profile.calls[1].bytes = -4' "${DDP[0]}" > "$B/bytes.json"
expect_bad "negative bytes" "$B/bytes.json: comms\[0\]\.profile: calls\[1\]\.bytes" "$B/bytes.json"
jq '.comms[0].plan.blocks[0].segments[0][0] = 99' "${DDP[0]}" > "$B/plan.json"
expect_bad "plan of another profile" "$B/plan.json: comms\[0\]\.plan: .*call" "$B/plan.json"
jq '.comms[0].verdict.reasons = [3]' "${DDP[0]}" > "$B/reason.json"
expect_bad "numeric reason" "$B/reason.json: comms\[0\]\.verdict\.reasons\[0\]: must be a string" "$B/reason.json"
jq '.comms = {}' "${DDP[0]}" > "$B/comms.json"
expect_bad "comms object" "$B/comms.json: comms: must be an array, got an object" "$B/comms.json"
jq '.comms[0].schedule = {"iterations": 3, "measured_iteration": 0.1, "predicted_iteration": 0.1,
    "measured_pass_through": 0.1, "measured_speedup": 1, "predicted_speedup": 1,
    "blocks": [{"start": 0.002, "end": 0.001}]}' "${DDP[0]}" > "$B/sched.json"
expect_bad "block ending before it starts" "$B/sched.json: comms\[0\]\.schedule\.blocks\[0\]: ends" "$B/sched.json"
expect_bad "a profile" "$PROFILES/vgg16-v100-b64.json: a usbyte profile, not a report" "$PROFILES/vgg16-v100-b64.json"
expect_bad "missing file" "$B/none.json" "$B/none.json"
expect_bad "no match" "$B/nothing-\*.json: no file matches" "$B/nothing-*.json"
cp "${DDP[0]}" "$B/copy-0.json"
expect_bad "one rank twice" "rank: 0 is also the rank of .*: not one job" "${DDP[0]}" "$B/copy-0.json"
jq '.comms[0].measured_iteration = 1e308' "${DDP[0]}" > "$B/huge.json"
expect_bad "a measured iteration of 1e308 s" "$B/huge.json: comms\[0\]\.measured_iteration: 1e\+308 s is not a time" "$B/huge.json"
jq '.comms[0].nranks = 100000' "${DDP[0]}" > "$B/nranks.json"
expect_bad "a communicator larger than the job" "$B/nranks.json: comms\[0\]\.nranks: 100000 ranks in a job of world_size 4" "$B/nranks.json"
# The same file reached twice (by two names, or a name and its directory) is one rank's report,
# read once: the job is whole.
rc=0
"$REPORT" --quiet "${DDP[@]}" "${DDP[0]}" "$WORK/ddp" -o "$WORK/twice" > /dev/null 2> "$WORK/twice.err" || rc=$?
[ $rc -eq 0 ] || fail "the same files given twice: exit $rc: $(cat "$WORK/twice.err")"
grep -q "the same file as ${DDP[0]}, read once" "$WORK/twice.err" || fail "given twice: $(cat "$WORK/twice.err")"
# A FIFO named like a report, in the folder or named: never opened for reading (it would wait
# for a writer for ever); named, it is refused with one line.
mkdir -p "$WORK/fifo"
cp "${DDP[@]}" "$WORK/fifo/"
mkfifo "$WORK/fifo/stray.json"
rc=0
timeout 20 "$REPORT" --quiet "$WORK/fifo" -o "$WORK/out-fifo" > /dev/null 2> "$WORK/fifo.err" || rc=$?
[ $rc -eq 0 ] || fail "a FIFO in the folder: exit $rc (124: blocked): $(cat "$WORK/fifo.err")"
expect_bad "a FIFO named" "$WORK/fifo/stray.json: cannot read: not a regular file" "$WORK/fifo/stray.json"
expect_bad "two jobs" "these reports are of 2 different jobs: job [0-9a-f]{16} started [0-9T:Z-]+: ${DDP[0]}; job [0-9a-f]{16} started [0-9T:Z-]+: ${HVD[1]} \(give one job's reports" "${DDP[0]}" "${HVD[1]}"

# ---- a real browser ----
if have_browser; then
    # Green bands: the ranks' agreement and a schedulable verdict; red: a verdict that is not.
    in_browser ddp "$WORK/out-ddp/usbyte-report.html" 0 e8f5e9:2 -- "${DDP[@]}"
    in_browser sched "$WORK/out-sched/usbyte-report.html" 0 e8f5e9:2 -- "${SCHED[@]}"
    in_browser hvd "$WORK/out-hvd/usbyte-report.html" 0 ffebee:1 -- "${HVD[@]}"
    # The checks can fail: a page that throws, and a blank page.
    printf '<!DOCTYPE html><title>t</title><p>x</p><script>nosuch();</script>\n' > "$WORK/throws.html"
    browse "$WORK/throws.err" --dump-dom "file://$WORK/throws.html" > /dev/null
    $CHK console "$WORK/throws.err" > /dev/null && fail "the console check misses an uncaught exception"
    printf '<!DOCTYPE html><title>t</title>\n' > "$WORK/blank.html"
    browse "$WORK/blank.err" --screenshot="$WORK/blank.png" --window-size=1280,900 "file://$WORK/blank.html" > /dev/null
    $CHK png "$WORK/blank.png" --min-width 1280 --min-height 900 > /dev/null && fail "the screenshot check passes a blank page"
else
    echo "info: chromium not installed (make deps installs it): browser checks skipped"
fi

[ $failures -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "tools_report: all checks passed"
