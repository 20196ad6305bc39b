#!/usr/bin/env bash
# Schedule mode with the framework-shaped trainers on 4 emulated ranks and a latency-bound link,
# where the chosen plan differs from wfbp: every rank's checksum is bit-identical to the run
# without the library (the emulator reduces in a fixed order, so merging and splitting change no
# bit), every report says "schedule" with iterations run and no deviation, and the plan differs
# from one block per call.  DDP with small buckets, Horovod with fusion off (the optimizer's
# stream waits, and the host finalizer thread), the per-layer trainer under both completion
# semantics; Horovod with fusion on stays in pass-through, saying why.
source "$(dirname "$0")/trainers/observe_lib.sh"
# USBYTE_MIN_GAIN_PCT=0: the plan runs whatever the fitted link of a busy machine predicts it to gain.
export USBYTE_MODE=schedule USBYTE_WARMUP=2 USBYTE_EMU_ALPHA_US=300 USBYTE_EMU_GBPS=1 USBYTE_MIN_GAIN_PCT=0
unset USBYTE_COMPLETION
N=4
RESNET=(--profile "$PROFILES/resnet50-v100-b64-barrier.json" --iters 12 --time-scale 0.05 --bytes-scale 0.002)
VGG=(--profile "$PROFILES/vgg16-v100-b64.json" --iters 12 --time-scale 0.05 --bytes-scale 0.002)
# Horovod's per-tensor calls: ResNet-50 scaled down has runs of equal-sized tensors that the
# portable call sequence cannot tell apart (a shorter period would be found), VGG-16's are distinct.
HVD=(--profile "$PROFILES/vgg16-v100-b64-barrier.json" --iters 12 --time-scale 0.05 --bytes-scale 0.002)

# merging COMMAND...: runs a case that must exercise merged (staged) blocks.  With one hardware
# queue (CUDA_DEVICE_MAX_CONNECTIONS=1) the warm-up's profile is back-pressured: a stream wait at
# the head of the one queue holds the producers behind it, as on a GPU, and the planner rightly
# finds nothing to gain by merging; syncea (one block per dtype and op) then merges regardless.
merging() {
    if [ "${CUDA_DEVICE_MAX_CONNECTIONS:-8}" = 1 ]; then
        USBYTE_POLICY=syncea USBYTE_MIN_GAIN_PCT=-100 "$@"
    else
        "$@"
    fi
}

# check NAME STATE [merges]: every rank's report; STATE schedule or pass-through.
check() {
    python3 - "$WORK" "$1" $N "$2" "${3:-}" <<'PY' || exit 1
import json, sys
work, name, n, state, merges = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
plans = []
for rank in range(n):
    c = json.load(open("%s/%s-%d.json" % (work, name, rank)))["comms"][0]
    s = c.get("schedule") or {}
    def fail(msg):
        print("FAIL: %s rank %d: %s (state %r: %s; verdict %s)" % (name, rank, msg, c["state"], c.get("state_reason"),
              (c.get("verdict") or {}).get("reasons")))
        sys.exit(1)
    if c["state"] != state:
        fail("state %r, expected %r" % (c["state"], state))
    if state == "schedule":
        if s.get("iterations", 0) < 4 or s.get("deviations") != 0:
            fail("schedule %r" % {k: v for k, v in s.items() if k != "blocks"})
        blocks = c["plan"]["blocks"]
        if merges and not len(blocks) < c["calls_per_iteration"]:
            fail("the plan merges nothing (%d blocks for %d calls): the test needs a link where it does"
                 % (len(blocks), c["calls_per_iteration"]))
        print("info: %s rank %d: %d calls in %d blocks, measured %.2f ms (pass-through %.2f), speedup %.2fx, predicted %.2fx"
              % (name, rank, c["calls_per_iteration"], len(blocks), 1e3 * s["measured_iteration"],
                 1e3 * s["measured_pass_through"], s["measured_speedup"], s["predicted_speedup"]))
        plans.append(c["plan"]["blocks"])
    else:
        why = " ".join((c.get("verdict") or {}).get("reasons", []))
        if "HOROVOD_FUSION_THRESHOLD=0" not in why:
            fail("pass-through without the fusion hint: %s" % why)
if plans and any(p != plans[0] for p in plans):
    print("FAIL: %s: the ranks run different plans" % name)
    sys.exit(1)
PY
}

# pair NAME TRAINER ARGS...: the run without and with the library, equal checksums.
pair() {
    local name=$1 trainer=$2
    shift 2
    run "$name" "$WORK/$name-base.out" $N no -- "$trainer" "$@"
    USBYTE_REPORT="$WORK/$name-%r.json" run "$name" "$WORK/$name-lib.out" $N yes -- "$trainer" "$@"
    $CHECK checksums --world $N "$WORK/$name-base.out" "$WORK/$name-lib.out"
}

merging pair ddp ddp_like "${RESNET[@]}" --bucket-cap-mb 1 --first-bucket-mb 0.25
check ddp schedule merges
merging pair horovod horovod_like "${HVD[@]}" --fusion-threshold-mb 0
check horovod schedule merges
merging pair horovod-finalizer horovod_like "${HVD[@]}" --fusion-threshold-mb 0 --host-finalizer
check horovod-finalizer schedule merges
pair per-layer-stream per_layer "${VGG[@]}"
check per-layer-stream schedule
USBYTE_COMPLETION=call pair per-layer-call per_layer "${VGG[@]}"
check per-layer-call schedule
python3 - "$WORK" <<'PY' || exit 1
import json, sys
c = json.load(open(sys.argv[1] + "/per-layer-call-0.json"))["comms"][0]
s = json.load(open(sys.argv[1] + "/per-layer-stream-0.json"))["comms"][0]
assert c["schedule"]["completion"] == "call" and s["schedule"]["completion"] == "stream"
# stream completion makes the per-layer consumer a barrier; call completion keeps its segments
assert s["profile"]["forward"] and len(s["profile"]["forward"]) == 1, s["profile"]["forward"]
assert len(c["profile"]["forward"]) > 1, c["profile"]["forward"]
print("info: per-layer: %d forward segments with call completion, 1 with stream completion" % len(c["profile"]["forward"]))
PY
pair horovod-fused horovod_like "${HVD[@]}" --fusion-threshold-mb 64
check horovod-fused pass-through
echo "schedule trainers: ok"
