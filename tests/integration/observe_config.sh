#!/usr/bin/env bash
# docs/design.md section 7: bad configuration values each give one warning per rank naming the
# variable and the value, fall back to their defaults, USBYTE_MODE to the safe observe (the job
# still runs, writes its reports, and computes bit-identical results); USBYTE_DUMP_CONFIG=1 prints
# every variable; USBYTE_MODE=off
# observes nothing; without USBYTE_MODE the job runs in schedule mode (the default) and says once
# per rank what it measured.
source "$(dirname "$0")/trainers/observe_lib.sh"
N=2
ARGS=(--profile "$PROFILES/resnet50-v100-b64-barrier.json" --iters 12 --time-scale 0.1 --bytes-scale 0.02)
run config "$WORK/base.out" $N no -- ddp_like "${ARGS[@]}"

declare -A BAD=([USBYTE_WARMUP]=three [USBYTE_MODE]=sideways [USBYTE_POLICY]=fastest [USBYTE_LOG]=chatty)
USBYTE_WARMUP=${BAD[USBYTE_WARMUP]} USBYTE_MODE=${BAD[USBYTE_MODE]} USBYTE_POLICY=${BAD[USBYTE_POLICY]} \
USBYTE_LOG=${BAD[USBYTE_LOG]} USBYTE_REPORT="$WORK/report-%r.json" \
    run config "$WORK/bad.out" $N yes -- ddp_like "${ARGS[@]}" --print-truth "$WORK/truth-%r.json"
$CHECK checksums --world $N "$WORK/base.out" "$WORK/bad.out"
status=0
for var in "${!BAD[@]}"; do
    # Rank lines only: the launcher itself runs with the preload too (its lines have no rank tag).
    n=$(grep -E '^\[rank [0-9]+\]' "$WORK/bad.out" | grep -F -- "$var" | grep -c -F -- "${BAD[$var]}" || true)
    if [ "$n" -ne $N ]; then
        echo "FAIL: $var=${BAD[$var]}: $n warning lines, expected one per rank ($N):"
        grep -F -- "$var" "$WORK/bad.out" | sed 's/^/    | /' || true
        status=1
    else
        echo "info: $var=${BAD[$var]}: $(grep -E '^\[rank 0\]' "$WORK/bad.out" | grep -F -- "$var" | grep -F -m1 -- "${BAD[$var]}")"
    fi
done
mapfile -t R < <(reports "$WORK" $N)
# The fallbacks: observe mode (the safe side: a mode nobody meant never runs a plan), the best
# policy, a numeric warm-up.
python3 - "${R[@]}" <<'PY' || status=1
import json, re, sys
def norm(s): return re.sub(r"[^a-z]", "", str(s).lower())
def get(cfg, name):
    for k, v in cfg.items():
        if norm(k) in (norm(name), norm("usbyte_" + name)):
            return v
bad = 0
for path in sys.argv[1:]:
    cfg = json.load(open(path)).get("config", {})
    mode, policy, warmup = get(cfg, "mode"), get(cfg, "policy"), get(cfg, "warmup")
    print("info: %s: config mode %r, policy %r, warmup %r, log %r" % (path.rsplit("/", 1)[1], mode, policy, warmup, get(cfg, "log")))
    if mode != "observe" or policy != "best" or not str(warmup).isdigit() or int(warmup) < 1:
        print("FAIL: %s: the bad values did not fall back to observe and the defaults: %r" % (path, cfg)); bad = 1
sys.exit(bad)
PY
$CHECK reports "${READY_TOL[@]}" --truth "$WORK/truth-%r.json" --world $N "${R[@]}" >"$WORK/check.out" || { cat "$WORK/check.out"; status=1; }

# USBYTE_DUMP_CONFIG=1 names every variable of docs/design.md section 7.
rm -f "$WORK"/report-*.json
USBYTE_DUMP_CONFIG=1 USBYTE_REPORT="$WORK/report-%r.json" \
    run config "$WORK/dump.out" $N yes -- ddp_like "${ARGS[@]}"
for var in USBYTE_MODE USBYTE_POLICY USBYTE_WARMUP USBYTE_REPORT USBYTE_LOG USBYTE_LOG_FILE USBYTE_NCCL_LIB; do
    grep -q -F -- "$var" "$WORK/dump.out" || { echo "FAIL: USBYTE_DUMP_CONFIG=1 does not print $var"; status=1; }
done

# USBYTE_MODE=off: nothing measured, nothing planned (no report, or one without a planned communicator).
rm -f "$WORK"/report-*.json
USBYTE_MODE=off USBYTE_REPORT="$WORK/report-%r.json" run config "$WORK/off.out" $N yes -- ddp_like "${ARGS[@]}"
$CHECK checksums --world $N "$WORK/base.out" "$WORK/off.out"
python3 - "$WORK" <<'PY' || status=1
import glob, json, sys
bad = 0
for path in glob.glob(sys.argv[1] + "/report-*.json"):
    states = [c.get("state") for c in json.load(open(path)).get("comms", [])]
    if any(s not in ("off", "pass-through", "disabled") for s in states):
        print("FAIL: USBYTE_MODE=off, but %s has communicators in states %s" % (path, states)); bad = 1
sys.exit(bad)
PY

# USBYTE_MODE unset: schedule mode, the same results, one summary line per rank saying what it
# measured (the profile checks below hold as in observe: the warm-up is the same; USBYTE_MIN_GAIN_PCT=0:
# the plan runs even where it is predicted to gain nothing).
rm -f "$WORK"/report-*.json
(unset USBYTE_MODE; USBYTE_MIN_GAIN_PCT=0 USBYTE_REPORT="$WORK/report-%r.json" \
    run config "$WORK/sched.out" $N yes -- ddp_like "${ARGS[@]}" --print-truth "$WORK/sched-truth-%r.json") || exit 1
$CHECK checksums --world $N "$WORK/base.out" "$WORK/sched.out"
n=$(grep -E '^\[rank [0-9]+\] usbyte' "$WORK/sched.out" | grep -c 'schedule mode ran' || true)
if [ "$n" -ne $N ]; then
    echo "FAIL: schedule mode: $n summary lines, expected one per rank:"
    grep -i schedule "$WORK/sched.out" | sed 's/^/    | /'
    status=1
fi
mapfile -t R < <(reports "$WORK" $N)
$CHECK reports "${READY_TOL[@]}" --truth "$WORK/sched-truth-%r.json" --world $N "${R[@]}" >"$WORK/check.out" || { cat "$WORK/check.out"; status=1; }
exit $status
