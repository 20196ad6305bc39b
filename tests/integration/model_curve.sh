#!/usr/bin/env bash
# The cost curve in the runtime, on an emulated network that follows a measured curve
# (USBYTE_EMU_NET, data/net/): the DDP-shaped trainer on 2 ranks, a latency floor the line cannot
# follow.  Every rank's agreed profile carries the same fitted curve (net.segments: the fit runs
# on agreed numbers only); the simulator, reading the report, evaluates the report's plan to the
# report's own iteration (one cost function in the runtime, the report and the simulator); then
# schedule mode runs the plan made from the curve, with checksums bit-identical to the run
# without the library.
source "$(dirname "$0")/trainers/observe_lib.sh"
SIM=$BUILD/usbyte-sim
[ -x "$SIM" ] || { echo "missing $SIM (make $SIM)"; exit 1; }
export USBYTE_EMU_NET=$ROOT/data/net/11-aws-g4dn-tcp-socket-2node-2r.tsv USBYTE_WARMUP=5 USBYTE_MIN_GAIN_PCT=0
N=2
ARGS=(--profile "$PROFILES/resnet50-v100-b64-barrier.json" --iters 14 --time-scale 0.2 --bytes-scale 0.02
      --bucket-cap-mb 0.05 --first-bucket-mb 0.01)

USBYTE_MODE=observe USBYTE_REPORT="$WORK/obs-%r.json" run observe "$WORK/obs.out" $N yes -- ddp_like "${ARGS[@]}"
python3 - "$WORK" $N <<'PY' || exit 1
import json, sys
work, n = sys.argv[1], int(sys.argv[2])
nets = []
for rank in range(n):
    c = json.load(open("%s/obs-%d.json" % (work, rank)))["comms"][0]
    if c["state"] != "planned" or not c.get("profile"):
        sys.exit("FAIL: rank %d: state %r (%s): no agreed profile" % (rank, c["state"], c.get("state_reason")))
    net = c["profile"]["net"]
    if not net.get("segments"):
        sys.exit("FAIL: rank %d: the fitted model is one line (alpha %g, beta %g, fit %r) on a network with a "
                 "latency floor" % (rank, net["alpha"], net["beta"], c["fit"]))
    nets.append(net)
if any(x != nets[0] for x in nets):
    sys.exit("FAIL: the ranks fitted different models: %r" % nets)
print("info: every rank fitted the same curve of %d segments" % len(nets[0]["segments"]))
PY
jq '.comms[0].plan' "$WORK/obs-0.json" > "$WORK/plan.json"
"$SIM" "$WORK/obs-0.json" --eval "$WORK/plan.json" --json > "$WORK/eval.json"
jq -e --slurpfile rep "$WORK/obs-0.json" '($rep[0].comms[0].plan.iteration) as $want
    | ((.iteration - $want) | fabs) <= 1e-9 * $want' "$WORK/eval.json" > /dev/null || {
    echo "FAIL: the simulator evaluates the report's plan to $(jq .iteration "$WORK/eval.json") s, the report says $(jq .comms[0].plan.iteration "$WORK/obs-0.json") s"
    exit 1
}

# Schedule mode with the plan made from the curve: results exact.
run base "$WORK/base.out" $N no -- ddp_like "${ARGS[@]}"
USBYTE_MODE=schedule USBYTE_REPORT="$WORK/sch-%r.json" run schedule "$WORK/sch.out" $N yes -- ddp_like "${ARGS[@]}"
$CHECK checksums --world $N "$WORK/base.out" "$WORK/sch.out"
python3 - "$WORK" $N <<'PY' || exit 1
import json, sys
work, n = sys.argv[1], int(sys.argv[2])
for rank in range(n):
    c = json.load(open("%s/sch-%d.json" % (work, rank)))["comms"][0]
    if not c["profile"]["net"].get("segments"):
        sys.exit("FAIL: rank %d: schedule mode planned with one line" % rank)
    s = c.get("schedule") or {}
    print("info: rank %d: state %s, %d calls in %d blocks, schedule iterations %s, predicted %.2f ms, measured %s ms"
          % (rank, c["state"], c["calls_per_iteration"], len(c["plan"]["blocks"]), s.get("iterations"),
             1e3 * c["plan"]["iteration"], "%.2f" % (1e3 * s["measured_iteration"]) if s.get("measured_iteration") else "-"))
PY
echo "model_curve: ok"
