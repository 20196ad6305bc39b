#!/usr/bin/env bash
# The model follows the network: verification keeps a plan, the model is fitted again with that
# plan's measured blocks (sizes the application never issues), and a plan planned again on it
# is verified next and kept only where it measures faster (docs/model.md, "The re-fit from a
# plan's blocks").  The Horovod-like trainer with fusion off on ResNet-50 (161 calls of at most
# 19 KB, 200 KB in all), 2 ranks, calibration off, on a made-up table (not a measured curve):
# 1 ms per allreduce up to 20 KB, steep above.  The calls alone show a flat cost, so `best` merges
# them into a few large blocks, which the link charges far more for; their measured times make the
# model see the slope, and `best` planned again cuts smaller blocks.  Checked, on every rank:
# - the staging buffer covers the whole iteration (the first lock finds a period of 9 calls, the
#   agreement of the real period of 161 wants more than that one reserved);
# - one re-fitted candidate (its `refit` true), planned again at the call of the first verdict,
#   decided at the same later call, and the same verification object on both ranks (agreed data);
#   the log's re-fit line is the same on both ranks, numbers included;
# - the results are bit-identical to the run without usbyte;
# - with calibration on, the second agreement finds calibration's tables grown to its 161 calls.
# (A re-planned plan becomes a candidate only when its blocks differ from the kept plan's.)
# Then the same after a drop: on a table far steeper above 20 KB (200 ms at 40 KB), `best`'s merged
# blocks make it slower than pass-through; it is dropped, and its measured blocks re-fit the model
# there, so that `best` planned again on it (smaller blocks) is verified next against pass-through
# and kept: on both ranks at the same call, the verification objects equal, results exact.
source "$(dirname "$0")/runtime_lib.sh"
TRAINER=$BUILD/trainers/horovod_like
need "$BUILD/libusbyte.so" "$TRAINER" "$BUILD/emu/emu-run"
export USBYTE_VERIFY=1 USBYTE_CALIBRATE=0 USBYTE_WARMUP=3 USBYTE_LOG=info USBYTE_MODE=schedule
unset USBYTE_POLICY USBYTE_MIN_GAIN_PCT USBYTE_VERIFY_EVERY
printf '# source: runtime_refit.sh, made up: flat over the calls'"'"' sizes, steep above them\n# ranks: 2\n# columns: bytes\ttime_us\n1024\t1000\n20480\t1000\n40960\t8000\n81920\t16000\n163840\t32000\n262144\t50000\n' \
    >"$WORK/steep.tsv"
export USBYTE_EMU_NET=$WORK/steep.tsv
ARGS=(--profile data/profiles/resnet50-v100-b64-barrier.json --fusion-threshold-mb 0 --time-scale 0.05
      --bytes-scale 0.002 --iters 150)
for name in base refit; do
    pre=""
    [ $name = refit ] && pre=$USBYTE_PRELOAD
    LD_PRELOAD="$pre" USBYTE_REPORT="$WORK/$name-%r.json" "$BUILD/emu/emu-run" -n 2 --timeout 240 -- "$TRAINER" \
        "${ARGS[@]}" >"$WORK/$name.out" 2>&1 || { tail -30 "$WORK/$name.out"; fail "$name: exit $?"; }
done
same_results refit base
lines=$(grep -o 'usbyte\[[01]\]: communicator 0: the model re-fitted with .*' "$WORK/refit.out" | sed 's/usbyte\[[01]\]//' | sort -u || true)
[ -n "$lines" ] && [ "$(grep -c 'communicator 0: the model re-fitted with' "$WORK/refit.out")" = 2 ] && [ "$(echo "$lines" | wc -l)" = 1 ] \
    || { grep 're-fitted\|verification at' "$WORK/refit.out" | sed 's/^/    | /'; fail "the re-fit line is not once on each rank, the same"; }
echo "info: $lines"
python3 - "$WORK" <<'PY' || fail "report check failed"
import json, sys
work = sys.argv[1]
reps = [json.load(open("%s/refit-%d.json" % (work, r)))["comms"][0] for r in range(2)]
c, v = reps[0], reps[0].get("verification")
assert reps[1].get("verification") == v, "the ranks' verification objects differ"
total = sum(k["bytes"] for k in c["profile"]["calls"])
assert c["calls_per_iteration"] == 161, c["calls_per_iteration"]
assert c["profile"]["staging_max"] == total, "staging %r, the iteration's calls %r bytes" % (c["profile"]["staging_max"], total)
refit = [k for k in v["candidates"] if k["refit"]]
assert len(refit) == 1 and refit[0]["policy"] == "best (re-fitted)", v["candidates"]
assert refit[0]["iterations"] >= 3, refit[0]
assert v["kept"] in ("best", "best (re-fitted)"), v["kept"]
print("info: candidates %s; kept %s" % ([(k["policy"], round(1e3 * k["predicted_iteration"], 3),
        round(1e3 * (k["measured_iteration"] or 0), 3)) for k in v["candidates"]], v["kept"]))
PY
# The same job with calibration on (its default): the second agreement (161 calls, after the first
# lock's 9) must find calibration's tables grown to its calls, and its probes now fit the staging
# buffer.  The job completes with a plan, its results exact.  Calibration runs only where the
# first plan's blocks leave the calls' sizes, which a loaded host's tilted warm-up samples can
# avoid (see the drop below), and agrees nothing where some rank's probe was not timed by the
# next iteration: such a run is checked as a plan that runs, and the job runs again, at most
# three times in all.
calibrated=""
for attempt in 1 2 3; do
    USBYTE_CALIBRATE=1 LD_PRELOAD="$USBYTE_PRELOAD" USBYTE_REPORT="$WORK/calib-%r.json" "$BUILD/emu/emu-run" -n 2 \
        --timeout 240 -- "$TRAINER" "${ARGS[@]}" >"$WORK/calib.out" 2>&1 || { tail -30 "$WORK/calib.out"; fail "calib: exit $?"; }
    same_results calib base
    jq -e '.comms[0] | .state == "schedule" and .calls_per_iteration == 161' "$WORK/calib-0.json" >/dev/null \
        || fail "calib: $(jq -c '.comms[0] | [.state, .state_reason, .calls_per_iteration]' "$WORK/calib-0.json")"
    jq -e '.comms[0].calibration.agreed // false' "$WORK/calib-0.json" >/dev/null && { calibrated=yes; break; }
    echo "info: calib, run $attempt: nothing calibrated ($(jq -c '.comms[0] | if .calibration then "probes not agreed"
        else "no block needed a probe: largest \([.plan.blocks[] | [.segments[][2]] | add] | max) bytes" end' \
        "$WORK/calib-0.json")); again"
done
[ -n "$calibrated" ] || fail "calib: in 3 runs nothing was calibrated: its tables were not exercised"
# After a drop.  Whether `best`'s first plan reaches the cliff depends on the warm-up's samples:
# three iterations on a loaded host can tilt the calls' flat cost into a slope, and `best` then
# cuts blocks that all stay in the flat region (22 blocks of at most 20 KB, measured 31 ms against
# pass-through's 182 ms under ASan).  Such a plan pays and must be kept; the run then shows nothing
# of a drop, so it is checked as a keep and the job runs again, at most three times in all.
printf '# source: runtime_refit.sh, made up: flat over the calls'"'"' sizes, far steeper above them\n# ranks: 2\n# columns: bytes\ttime_us\n1024\t1000\n20480\t1000\n40960\t200000\n262144\t1500000\n' \
    >"$WORK/cliff.tsv"
FLAT_BYTES=20480 # the table's last row of the flat region
DROP_ARGS=("${ARGS[@]:0:${#ARGS[@]}-1}" 120)
USBYTE_EMU_NET=$WORK/cliff.tsv "$BUILD/emu/emu-run" -n 2 --timeout 240 -- "$TRAINER" "${DROP_ARGS[@]}" \
    >"$WORK/cliff-base.out" 2>&1 || { tail -30 "$WORK/cliff-base.out"; fail "cliff-base: exit $?"; }
crossed=""
for attempt in 1 2 3; do
    USBYTE_EMU_NET=$WORK/cliff.tsv LD_PRELOAD="$USBYTE_PRELOAD" USBYTE_REPORT="$WORK/cliff-%r.json" "$BUILD/emu/emu-run" \
        -n 2 --timeout 240 -- "$TRAINER" "${DROP_ARGS[@]}" >"$WORK/cliff.out" 2>&1 \
        || { tail -30 "$WORK/cliff.out"; fail "cliff: exit $?"; }
    same_results cliff cliff-base
    largest=$(jq '[.comms[0].plan.blocks[] | [.segments[][2]] | add] | max' "$WORK/cliff-0.json")
    [ "$largest" -gt "$FLAT_BYTES" ] && { crossed=yes; break; }
    jq -e '.comms[0].verification | .candidates[0].policy == "best" and .candidates[0].measured_iteration < .pass_through_iteration
           and (.kept | startswith("best"))' "$WORK/cliff-0.json" >/dev/null \
        || fail "cliff: best's first plan stays in the flat region (largest block $largest bytes) and was not kept: $(jq -c '.comms[0].verification | [.kept, .reason]' "$WORK/cliff-0.json")"
    echo "info: cliff, run $attempt: best's first plan stays in the flat region (largest block $largest bytes) and was kept; again"
done
[ -n "$crossed" ] || fail "cliff: in 3 runs best's first plan never reached the cliff: the drop was not exercised"
lines=$(grep -o 'usbyte\[[01]\]: communicator 0: the model re-fitted with .*' "$WORK/cliff.out" | sed 's/usbyte\[[01]\]//' | sort -u || true)
[ "$(grep -c 'communicator 0: the model re-fitted with .* (measured slower than pass-through)' "$WORK/cliff.out")" = 2 ] &&
    [ "$(echo "$lines" | wc -l)" = 1 ] \
    || { grep 're-fitted\|verification at' "$WORK/cliff.out" | sed 's/^/    | /'; fail "cliff: the re-fit line after the drop is not once on each rank, the same"; }
echo "info: $lines"
python3 - "$WORK" <<'PY' || fail "report check after a drop failed"
import json, sys
work = sys.argv[1]
reps = [json.load(open("%s/cliff-%d.json" % (work, r)))["comms"][0] for r in range(2)]
v = reps[0].get("verification")
assert v and reps[1].get("verification") == v, "the ranks' verification objects differ"
c = v["candidates"]
print("info: cliff: candidates %s; pass-through %.3f ms; kept %s" % ([(k["policy"], round(1e3 * k["predicted_iteration"], 3),
      round(1e3 * (k["measured_iteration"] or 0), 3)) for k in c], 1e3 * v["pass_through_iteration"], v["kept"]))
first = c[0]
assert first["policy"] == "best" and not first["refit"], c
assert first["measured_iteration"] > v["pass_through_iteration"], "best was not slower than pass-through: %s" % c
refit = [k for k in c if k["refit"]]
assert len(refit) == 1 and refit[0]["policy"] == "best (re-fitted)", c
assert v["kept"] == "best (re-fitted)", "kept %s: %s" % (v["kept"], v["reason"])
assert refit[0]["measured_iteration"] < v["pass_through_iteration"], c
assert reps[0]["state"] == "schedule", reps[0]["state"]
PY
echo "runtime refit: ok"
