#!/usr/bin/env bash
# One configuration for every rank, on 4 emulated ranks: USBYTE_MODE=off on one rank, or another
# USBYTE_WARMUP or USBYTE_MAX_DEVIATIONS on one rank, must not make the ranks issue different
# collectives (the job runs to the end with the same results as without usbyte; the other ranks'
# reports name the setting and the rank), nor may USBYTE_CUPTI=0 on one rank (every verdict names
# it); every documented USBYTE_WARMUP gives a positive measured iteration from at least one
# used warm-up iteration (or says why not in pass-through), and usbyte-report reads the reports.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
source tests/integration/preload-env.sh
TRAINER=$BUILD/trainers/horovod_like
for f in "$BUILD/libusbyte.so" "$TRAINER" "$BUILD/emu/emu-run" "$BUILD/usbyte-report"; do
    [ -e "$f" ] || { echo "missing $f: build it first (make)"; exit 1; }
done
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# The stress link of the demo: the device runs well behind the host, as on a slow network.
export USBYTE_EMU_ALPHA_US=200 USBYTE_EMU_GBPS=0.2
ARGS=(--profile data/profiles/vgg16-v100-b64-barrier.json --iters 16 --time-scale 0.05 --bytes-scale 0.002
      --fusion-threshold-mb 0)
# One rank gets another value: ODD_RANK and ODD_SET (VAR=VALUE), applied in the rank's own process.
cat >"$WORK/odd.sh" <<'EOF'
#!/bin/sh
if [ "$RANK" = "$ODD_RANK" ]; then export "$ODD_SET"; fi
exec "$@"
EOF
chmod +x "$WORK/odd.sh"
run() { # NAME PRELOAD [VAR=VALUE...]: the job on 4 ranks, its output in $WORK/NAME.out
    local name=$1 preload=$2
    shift 2
    env "$@" LD_PRELOAD="$preload" USBYTE_REPORT="$WORK/$name-%r.json" \
        "$BUILD/emu/emu-run" -n 4 --timeout 120 -- "$WORK/odd.sh" "$TRAINER" "${ARGS[@]}" >"$WORK/$name.out" 2>&1 \
        || { sed 's/^/    | /' "$WORK/$name.out" | tail -30; fail "$name: the job failed"; }
}
sums() { grep -o 'checksum [0-9a-f]\{16\}' "$1" | sort; }
run base ""
[ "$(sums "$WORK/base.out" | wc -l)" -eq 4 ] || fail "no checksums in the run without usbyte"
same() { [ "$(sums "$WORK/base.out")" = "$(sums "$WORK/$1.out")" ] || fail "$1: the results differ from the run without usbyte"; }

# 1. USBYTE_MODE=off on rank 2: it takes part in the configuration agreement and nothing else; the
# others stay in pass-through and say which rank had which mode.  Rank 2 stays silent, no report.
run off_one "$USBYTE_PRELOAD" USBYTE_MODE=schedule ODD_RANK=2 ODD_SET=USBYTE_MODE=off
same off_one
grep -q '^\[rank 2\].*usbyte' "$WORK/off_one.out" && fail "off_one: the off rank printed something"
[ -e "$WORK/off_one-2.json" ] && fail "off_one: the off rank wrote a report"
# 2. USBYTE_WARMUP=3 on rank 2 (5 elsewhere): every rank stays in pass-through, naming it.
run warmup_one "$USBYTE_PRELOAD" USBYTE_MODE=schedule ODD_RANK=2 ODD_SET=USBYTE_WARMUP=3
same warmup_one
python3 - "$WORK" <<'PY' || fail "the reports do not name the setting and the rank that differed"
import json, os, sys
work = sys.argv[1]
for name, ranks, want in (("off_one", (0, 1, 3), ("USBYTE_MODE", "off on rank 2")),
                          ("warmup_one", (0, 1, 2, 3), ("USBYTE_WARMUP", "3 on rank 2", "5 on rank"))):
    for k in ranks:
        c = json.load(open(os.path.join(work, "%s-%d.json" % (name, k))))["comms"][0]
        assert c["state"] == "pass-through", (name, k, c["state"])
        text = c["state_reason"] + " " + " ".join(c.get("verdict", {}).get("reasons", []))
        for w in want:
            assert w in text, (name, k, w, text)
print("info: rank 0 of warmup_one says: %s" % json.load(open(os.path.join(work, "warmup_one-0.json")))["comms"][0]["state_reason"])
PY
# 3. USBYTE_MAX_DEVIATIONS=0 on rank 2 (4 elsewhere), with sizes that change mid-run (deviations
# from the plan): rank 2 would start a new warm-up, and issue its agreement, at another call than
# the others.  Every rank stays in pass-through, naming it; runtime_sched checks every result.
SCHED=$BUILD/tests/integration/runtime_sched
[ -e "$SCHED" ] || fail "missing $SCHED: build it first (make)"
env USBYTE_EMU_ALPHA_US=300 USBYTE_EMU_GBPS=1 USBYTE_WARMUP=2 USBYTE_MIN_GAIN_PCT=0 USBYTE_MODE=schedule \
    ODD_RANK=2 ODD_SET=USBYTE_MAX_DEVIATIONS=0 LD_PRELOAD="$USBYTE_PRELOAD" USBYTE_REPORT="$WORK/maxdev-%r.json" \
    "$BUILD/emu/emu-run" -n 4 --timeout 120 -- "$WORK/odd.sh" "$SCHED" --iters 30 --size-change-at 10 \
    >"$WORK/maxdev.out" 2>&1 || { sed 's/^/    | /' "$WORK/maxdev.out" | tail -30; fail "maxdev: the job failed"; }
[ "$(grep -c 'runtime_sched ok' "$WORK/maxdev.out")" -eq 4 ] || fail "maxdev: not every rank checked every result"
for k in 0 1 2 3; do
    jq -e '.comms[0] | .state == "pass-through" and (.state_reason | contains("USBYTE_MAX_DEVIATIONS differs between the ranks: 0 on rank 2"))' \
        "$WORK/maxdev-$k.json" >/dev/null || fail "maxdev: rank $k's report: $(jq -c '.comms[0] | [.state, .state_reason]' "$WORK/maxdev-$k.json")"
done
# usbyte-report names the setting among the ranks' disagreements (exit 1), and the page the rank.
rc=0
"$BUILD/usbyte-report" --summary -o "$WORK/maxdev-page" "$WORK"/maxdev-*.json >"$WORK/maxdev.summary" 2>&1 || rc=$?
[ "$rc" -eq 1 ] && grep -q 'USBYTE_MAX_DEVIATIONS differs between the ranks: 4 on ranks 0, 1, 3; 0 on rank 2' "$WORK/maxdev.summary" ||
    { cat "$WORK/maxdev.summary"; fail "maxdev: usbyte-report (exit $rc) does not name the setting that differs"; }
grep -q "settings differ from rank 0.*USBYTE_MAX_DEVIATIONS=0" "$WORK/maxdev-page/usbyte-report.html" ||
    fail "maxdev: the page's ranks table does not name rank 2's setting"
# No warm-up was profiled: neither the summary nor the page claims a number of allreduces.
grep -q '^communicator 0 (4 ranks, no iteration profiled): ' "$WORK/maxdev.summary" ||
    fail "maxdev: the summary claims a count: $(grep '^communicator' "$WORK/maxdev.summary")"
grep -q '0 allreduces per iteration' "$WORK/maxdev-page/usbyte-report.html" && fail "maxdev: the page claims 0 allreduces per iteration"

# 4. Every rank off: the same results, nothing printed, no report.
run off_all "$USBYTE_PRELOAD" USBYTE_MODE=off
same off_all
grep -q 'usbyte\[' "$WORK/off_all.out" && fail "off_all: USBYTE_MODE=off printed something"
ls "$WORK"/off_all-* >/dev/null 2>&1 && fail "off_all: USBYTE_MODE=off wrote a report"

# 5. USBYTE_CUPTI=0 on rank 2: the NCCL stream cannot be watched there, so no rank schedules, and
# every rank's verdict names the rank.
run cupti_one "$USBYTE_PRELOAD" USBYTE_MODE=schedule ODD_RANK=2 ODD_SET=USBYTE_CUPTI=0
same cupti_one
for k in 0 1 2 3; do
    jq -e '.comms[0] | .verdict.schedulable == false and (.verdict.reasons | any(startswith("CUPTI was not available on rank 2, the highest such rank")))' \
        "$WORK/cupti_one-$k.json" >/dev/null || fail "cupti_one: rank $k's report: $(jq -c '.comms[0] | [.state, .verdict]' "$WORK/cupti_one-$k.json")"
done

# 6. Short warm-ups (the device behind the host): each iteration counted has its end measured, so
# the measured iteration is positive, or the agreement says why it has none; the plan runs with
# the right results; usbyte-report reads the library's own reports.
for w in 1 2 3; do
    run "warmup$w" "$USBYTE_PRELOAD" USBYTE_MODE=schedule USBYTE_WARMUP=$w
    same "warmup$w"
    python3 - "$WORK" "$w" <<'PY' || fail "USBYTE_WARMUP=$w: a measured iteration that is not positive"
import json, os, sys
work, w = sys.argv[1], int(sys.argv[2])
for k in range(4):
    c = json.load(open(os.path.join(work, "warmup%d-%d.json" % (w, k))))["comms"][0]
    used = c.get("warmup_iterations_used", [])
    if c["state"] == "pass-through" and not used:
        assert c["state_reason"], c
        continue
    assert used and all(0 <= i < w for i in used), (k, used)
    assert c["measured_iteration"] > 0, (k, c["measured_iteration"], used)
    if k == 0:
        print("info: USBYTE_WARMUP=%d: used %s, measured %.1f ms" % (w, used, 1e3 * c["measured_iteration"]))
PY
    rc=0
    "$BUILD/usbyte-report" --summary -o "$WORK/page$w" "$WORK"/warmup$w-*.json >"$WORK/summary$w" 2>&1 || rc=$?
    [ "$rc" -le 1 ] || { cat "$WORK/summary$w"; fail "USBYTE_WARMUP=$w: usbyte-report refused the reports (exit $rc)"; }
    grep -q 'nan' "$WORK/summary$w" && { cat "$WORK/summary$w"; fail "USBYTE_WARMUP=$w: nan in the summary"; }
done
echo "ok"
