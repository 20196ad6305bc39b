#!/usr/bin/env bash
# Schedule mode's verification (docs/design.md, "Verification"), on the Horovod-like trainer with
# fusion off (one allreduce per tensor, VGG16's 32 calls) on 2 emulated ranks:
# - a plan that pays is kept: on a latency-bound linear link where `best` is predicted at least 10%
#   faster than wfbp, it is kept in each of 10 runs (on a loaded machine: the margin comes from the
#   noise each run measures);
# - a forced plan that is slower (syncea: one block, every call waits for the last gradient, on a
#   bandwidth-bound link) is dropped on every rank at the same call; with USBYTE_VERIFY=0 the same
#   settings run it as told;
# - a measured network cheaper at the application's own sizes than anywhere else (USBYTE_EMU_NET, a
#   table with a notch at each size the job issues): the line fitted on the warm-up's calls makes
#   merging look good, the merged blocks are slower; every candidate is dropped on every rank at
#   the same call and the job goes on in pass-through;
# - a rank that stalls in one iteration of the comparison: every rank reports the same verdict from
#   the same agreed numbers (the emulator checks every collective's signature on every rank);
# - in every run every rank's final parameters are bit-identical to the run without usbyte.
# Every rank's `verification` object must be identical: everything in it comes from agreed data.
source "$(dirname "$0")/runtime_lib.sh"
verify_setup info
ARGS=(--profile data/profiles/vgg16-v100-b64-barrier.json --fusion-threshold-mb 0 --time-scale 0.05
      --bytes-scale 0.002)

# train NAME PRELOAD(yes|no) ITERS [TRAINER ARGS...]: the trainer's output in $WORK/NAME.out, the
# reports in $WORK/NAME-%r.json.
train() {
    local name=$1 preload=$2 iters=$3
    shift 3
    local pre=""
    [ "$preload" = yes ] && pre=$USBYTE_PRELOAD
    LD_PRELOAD="$pre" USBYTE_REPORT="$WORK/$name-%r.json" "$BUILD/emu/emu-run" -n $N --timeout 120 -- \
        "$TRAINER" "${ARGS[@]}" --iters "$iters" "$@" >"$WORK/$name.out" 2>&1 ||
        { tail -30 "$WORK/$name.out"; fail "$name: exit $?"; }
}

# verdict NAME PYTHON: asserts on the reports of NAME (c: rank 0's communicator, v: its
# verification, s: its schedule), after checking that every rank's verification is the same.
verdict() {
    python3 - "$WORK" "$1" $N "$2" <<'PY' || fail "$1: report check failed"
import json, sys
work, name, n, code = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
reps = [json.load(open("%s/%s-%d.json" % (work, name, r)))["comms"][0] for r in range(n)]
c = reps[0]
v = c.get("verification")
s = c.get("schedule") or {}
try:
    if v is not None:
        for r in range(1, n):
            assert reps[r].get("verification") == v, "rank %d's verification differs from rank 0's:\n%s\n%s" % (
                r, json.dumps(reps[r].get("verification")), json.dumps(v))
    exec(code)
except AssertionError as e:
    print("FAIL: %s: %s; state %r (%s); verification %s" % (name, e, c.get("state"), c.get("state_reason"),
                                                            json.dumps(v)))
    sys.exit(1)
print("info: %s: kept %s at call %s: %s" % (name, v and v["kept"], v and v["at_call"], v and v["reason"]))
PY
}

# A plan that pays: 450 us per ring step at 0.1 GB/s, where best merges the 32 calls into few
# blocks.  Kept in every one of 10 runs, the results exact in each.  Long enough for the most
# windows one candidate may run (UB_VERIFY_MAX_WINDOWS, 3: a loaded machine's stalls can leave a
# window inconclusive, and the candidate is measured again).
ITERS=130
train keep-base no $ITERS
for i in $(seq 1 10); do
    USBYTE_EMU_ALPHA_US=450 USBYTE_EMU_GBPS=0.1 train keep-$i yes $ITERS
    same_results keep-$i keep-base
    verdict keep-$i '
assert v is not None and v["checks"] >= 1, "no verdict"
wfbp = [p["iteration"] for p in c["policies"] if p["policy"] == "wfbp"][0]
gain = wfbp / v["candidates"][0]["predicted_iteration"]
assert gain >= 1.1, "the premise: best predicted %r over wfbp, wanted >= 1.1" % gain
assert v["candidates"][0]["policy"] == "best", "first candidate %r" % v["candidates"][0]["policy"]
assert v["kept"] in ("best", "best (re-fitted)"), "kept %r" % v["kept"]  # (re-fitted: best planned again, kept over best)
assert c["state"] == "schedule", "state"
# The measured speedup is over the pass-through side measured beside the plan, not the warm-up.
assert s["measured_pass_through_from"] == "verification", "reference %r" % s["measured_pass_through_from"]
assert s["measured_pass_through"] == v["pass_through_iteration"], "reference %r" % s["measured_pass_through"]
'
done
echo "ok: a plan predicted >= 10% faster is kept in 10 of 10 runs"
"$BUILD/usbyte-report" "$WORK"/keep-1-[01].json -o "$WORK/keep-page" --quiet --summary >"$WORK/keep.summary" ||
    fail "usbyte-report --summary on a kept plan"
grep -q '^  verified at call [0-9]*: best: .*\(kept\|best stays\)$' "$WORK/keep.summary" ||
    fail "the summary does not say the plan was kept: $(cat "$WORK/keep.summary")"

# A job that ends inside the first window: no verdict, and the summary says why its times mix both
# sides.
USBYTE_EMU_ALPHA_US=450 USBYTE_EMU_GBPS=0.1 train short yes 24
"$BUILD/usbyte-report" "$WORK"/short-[01].json -o "$WORK/short-page" --quiet --summary >"$WORK/short.summary" ||
    fail "usbyte-report --summary on a short run"
grep -q '^  verification: no verdict: the job ended inside the first window' "$WORK/short.summary" ||
    fail "the summary of a run shorter than the window: $(cat "$WORK/short.summary")"

# A forced plan that is slower: syncea on 20 us per ring step at 0.05 GB/s.  Long enough for the
# second candidate's windows too (syncea's one, then up to 3: about 9 + 4 x 39 iterations).
ITERS=180
train slow-base no $ITERS
USBYTE_EMU_ALPHA_US=20 USBYTE_EMU_GBPS=0.05 USBYTE_POLICY=syncea USBYTE_MIN_GAIN_PCT=-100 train slow yes $ITERS
same_results slow slow-base
verdict slow '
cand = v["candidates"]
assert cand[0]["policy"] == "syncea", "first candidate %r" % cand[0]["policy"]
assert cand[0]["measured_iteration"] > v["pass_through_iteration"] or "syncea: " not in v["reason"], "premise"
assert v["kept"] != "syncea", "kept %r" % v["kept"]
assert "syncea:" in v["reason"] and "dropped" in v["reason"], "reason %r" % v["reason"]
assert v["checks"] == len(cand), "%d checks for %d candidates" % (v["checks"], len(cand))
'
# The same without verification: the forced plan runs as told, every iteration from the switch.
USBYTE_VERIFY=0 USBYTE_EMU_ALPHA_US=20 USBYTE_EMU_GBPS=0.05 USBYTE_POLICY=syncea USBYTE_MIN_GAIN_PCT=-100 \
    train slow-told yes $ITERS
same_results slow-told slow-base
verdict slow-told '
assert v is None, "verification with USBYTE_VERIFY=0"
assert s["measured_pass_through_from"] == "warm-up", "reference %r" % s["measured_pass_through_from"]
assert s["measured_pass_through"] == c["measured_iteration"], "reference %r" % s["measured_pass_through"]
assert c["state"] == "schedule" and s["iterations"] >= 70, "plan iterations %r" % s.get("iterations")
'
echo "ok: a slower forced plan is dropped on every rank at the same call (USBYTE_VERIFY=0: runs as told)"

# A network cheaper at the job's own sizes: its sizes from an observe run's profile, then a table
# of 1 ms at each of them (the job's 32 calls then take longer than its backward pass, so merging
# looks worth it under the fitted model) and 30 ms one byte either side (and everywhere else): a
# merged block costs more than a whole iteration of the application's order even where a
# sanitizer's host cost stretches that iteration (about 100 ms under ThreadSanitizer).
# Long enough for up to 3 windows of each of the 2 candidates.
ITERS=250
USBYTE_MODE=observe train sizes yes 12
python3 - "$WORK/sizes-0.json" "$WORK/notched.tsv" <<'PY' || fail "cannot write the notched table"
import json, sys
sizes = sorted({k["bytes"] for k in json.load(open(sys.argv[1]))["comms"][0]["profile"]["calls"]})
rows = {}
for b in sizes:
    rows.setdefault(b - 1, 30000.0)
    rows[b] = 1000.0
    rows.setdefault(b + 1, 30000.0)
with open(sys.argv[2], "w") as f:
    f.write("# notched: 1 ms at each size the job issues, 30 ms elsewhere\n")
    for b in sorted(rows):
        if b > 0:
            f.write("%d\t%g\n" % (b, rows[b]))
PY
train notched-base no $ITERS
# Checked once (USBYTE_VERIFY_EVERY=0): a run this long would start the next check of the
# candidates after 200 iterations in pass-through.
USBYTE_VERIFY_EVERY=0 USBYTE_EMU_NET=$WORK/notched.tsv train notched yes $ITERS
same_results notched notched-base
verdict notched '
cand = v["candidates"]
wfbp = [p["iteration"] for p in c["policies"] if p["policy"] == "wfbp"][0]
assert wfbp / cand[0]["predicted_iteration"] > 1.02, "the premise: best predicted %r over wfbp" % (
    wfbp / cand[0]["predicted_iteration"])
assert cand[0]["policy"] == "best", "first candidate %r" % cand[0]["policy"]
import re
first = re.match(r"best: .*?\): (kept|dropped)", v["reason"])
assert first and first.group(1) == "dropped", "best was not dropped: %s" % v["reason"]
# What follows the drop: pass-through, or a plan planned again on the model re-fitted with the
# blocks best was measured with, kept where it measured faster than pass-through beyond the noise.
if v["kept"] != "pass-through":
    k = [x for x in cand if x["policy"] == v["kept"]]
    assert k and k[0]["refit"] and k[0]["measured_iteration"] < v["pass_through_iteration"], "kept %r" % v["kept"]
judged = [x for x in cand if x["windows"] > 0]
assert v["checks"] == len(judged), "%d checks for %d candidates judged" % (v["checks"], len(judged))
'
# The page shows what was tried, measured and kept, and why (usbyte-report reads the object).
mkdir -p "$WORK/page"
"$BUILD/usbyte-report" "$WORK"/notched-[01].json -o "$WORK/page" --quiet || fail "usbyte-report on the notched run"
grep -q '<table id="verification-0">' "$WORK/page/usbyte-report.html" || fail "the page has no verification table"
kept=$(jq -r '.comms[0].verification.kept' "$WORK/notched-0.json")
grep -qF "kept: <b>$kept</b> at call" "$WORK/page/usbyte-report.html" || fail "the page does not say what was kept ($kept)"
grep -q 'best: .* dropped' "$WORK/page/usbyte-report.html" || fail "the page does not say why"
# The plan the schedule held last is the re-fitted candidate, with other blocks than the chosen
# plan: the report names it, the page draws the measured blocks against it, every number as written.
jq -e '.comms[0].schedule.plan.blocks | length > 0' "$WORK/notched-0.json" >/dev/null ||
    fail "the report does not name the plan the schedule held"
grep -q '<table class="sortable" id="schedule-plan-blocks-0">' "$WORK/page/usbyte-report.html" ||
    fail "the page does not show the plan the schedule held"
python3 tests/integration/tools_report_check.py html "$WORK/page/usbyte-report.html" "$WORK"/notched-[01].json ||
    fail "the notched run's page does not match its reports"
"$BUILD/usbyte-report" "$WORK"/notched-[01].json -o "$WORK/page" --quiet --summary >"$WORK/notched.summary" ||
    fail "usbyte-report --summary on the notched run"
grep -q '^  verified at call [0-9]*: .*dropped' "$WORK/notched.summary" ||
    fail "the summary does not say what verification decided: $(cat "$WORK/notched.summary")"
echo "ok: a network cheaper at the job's own sizes: best is dropped on every rank at the same call (then $kept)"

# A stall: rank 1's forwards of iterations 20 and 21 (inside the window's runs, iterations 10-41
# here: one of them is measured) take 150 ms more, which every rank's iterations show (they wait for
# it in the collectives; the device events that mark the iterations may split it between two).
# As long as the keep runs (their base run is this one's), so a second window fits should the
# stall leave the first inconclusive.
ITERS=130
USBYTE_EMU_ALPHA_US=450 USBYTE_EMU_GBPS=0.1 train stall yes $ITERS --stall 1,20,21,150
same_results stall keep-base
verdict stall '
slots = [x["iteration"] for x in v["slots"] if x["iteration"] is not None]
typical = sorted(slots)[len(slots) // 2]
assert max(slots) > 1.8 * typical, "the stall is not in a measured slot: %r" % slots
assert v["kept"] in ("best", "best (re-fitted)"), "kept %r after a stall" % v["kept"]
'
echo "ok: a rank that stalls during the comparison: every rank decides the same"
echo "runtime_verify: ok"
