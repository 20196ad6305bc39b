#!/usr/bin/env bash
# USBYTE_EMU_INTERFERENCE slows a framework-shaped trainer's backward where communication overlaps
# it (docs/trainers.md), and a slowed layer delays every later one, as a slowed kernel does on a
# GPU.  The DDP-like trainer without usbyte, 2 emulated ranks, a profile of six 20 ms layers (one
# bucket each) on a link where each bucket's allreduce takes about 20 ms: from the second layer
# on, every layer runs beside the previous bucket's allreduce.  With F=0.5 each such layer is held
# about 10 ms more, so against F=0 the readiness of layer k (the truth's actual_ready, after the
# first layer's) comes later by about k x 10 ms: the delay grows along the backward.  It must grow
# from the second layer to the last by more than 3 standard errors (from the iterations' own
# spread).  Layers that slept to deadlines from the backward's start alone absorbed each layer's
# stretch into the next one's sleep: the delay stayed at about one layer's stretch.  Results are
# bit-identical (compute is slower, not different).
#
# And a run with interference completes: the Horovod-like trainer (one allreduce per tensor,
# ResNet-50's 161 calls) on a measured curve with F=0.2 for 60 iterations.  The device's
# communication clock once went back when an operation's end was earlier than a read made while
# it ran; a host function that read it before and after saw a huge overlap and slept for ever (the
# run hung at its second iteration every time).
source "$(dirname "$0")/../runtime_lib.sh"
TRAINER=$BUILD/trainers/ddp_like
need "$TRAINER" "$BUILD/emu/emu-run"
N=2
python3 - "$WORK/layers.json" <<'PY'
import json, sys
calls = [{"name": "layer%d.weight" % k, "bytes": 4 << 20, "ready": 0.02 * (k + 1), "need": 0, "dtype": "float32",
          "op": "sum"} for k in range(6)]
json.dump({"usbyte_profile": 1, "name": "six-20ms-layers", "source": "synthetic: six 20 ms layers",
           "backward_end": 0.12, "gap": 0.0, "forward": [0.02], "calls": calls}, open(sys.argv[1], "w"))
PY
ARGS=(--profile "$WORK/layers.json" --bucket-cap-mb 0.01 --first-bucket-mb 0.01 --time-scale 1 --bytes-scale 0.01
      --iters 14)

run() {
    local name=$1
    shift
    env "$@" LD_PRELOAD= USBYTE_EMU_ALPHA_US=10000 "$BUILD/emu/emu-run" -n $N --timeout 120 -- "$TRAINER" "${ARGS[@]}" \
        --print-truth "$WORK/$name.json" >"$WORK/$name.out" 2>&1 || { tail -30 "$WORK/$name.out"; fail "$name: exit $?"; }
}
run quiet USBYTE_EMU_INTERFERENCE=0
run stretched USBYTE_EMU_INTERFERENCE=0.5
a=$(grep -o 'checksum [0-9a-f]*' "$WORK/quiet.out" | sort)
b=$(grep -o 'checksum [0-9a-f]*' "$WORK/stretched.out" | sort)
[ -n "$a" ] && [ "$a" = "$b" ] || fail "interference changed the results: $a / $b"
python3 - "$WORK" <<'PY' || fail "interference does not slow the backward"
import json, math, statistics, sys
work = sys.argv[1]

def offsets(name):
    t = json.load(open("%s/%s.json" % (work, name)))
    return [it for i, it in enumerate(t["actual_ready"]) if it and i >= 2]

q, s = offsets("quiet"), offsets("stretched")
assert len(q) >= 8 and len(s) >= 8, "too few iterations: %d, %d" % (len(q), len(s))

def se(x):
    m = statistics.median(x)
    mad = statistics.median(abs(v - m) for v in x)
    sd = 1.4826 * mad if mad > 0 else statistics.stdev(x)
    return 1.2533 * sd / math.sqrt(len(x))

# Per iteration, how much later the last layer's readiness comes than the second's.
gq = [it[-1] - it[1] for it in q]
gs = [it[-1] - it[1] for it in s]
delay = [statistics.median(b[k] for b in s) - statistics.median(a[k] for a in q) for k in range(len(q[0]))]
growth = statistics.median(gs) - statistics.median(gq)
margin = 3 * math.hypot(se(gq), se(gs))
print("info: readiness delay with F=0.5 against F=0, per layer: %s ms; growth from the second layer to the last "
      "%+.2f ms (margin %.2f ms)" % (" ".join("%.1f" % (1e3 * d) for d in delay), 1e3 * growth, 1e3 * margin))
if growth <= margin:
    print("FAIL: the stretch of one layer does not delay the later ones: growth %+.2f ms, margin %.2f ms"
          % (1e3 * growth, 1e3 * margin))
    sys.exit(1)
PY

LD_PRELOAD= USBYTE_EMU_INTERFERENCE=0.2 USBYTE_EMU_NET=data/net/01-dgx-h100-nvlink-1node-8r.tsv \
    "$BUILD/emu/emu-run" -n $N --timeout 60 -- "$BUILD/trainers/horovod_like" \
    --profile data/profiles/resnet50-v100-b64-barrier.json --fusion-threshold-mb 0 --time-scale 0.05 \
    --bytes-scale 0.002 --iters 60 >"$WORK/horovod.out" 2>&1 ||
    { tail -20 "$WORK/horovod.out"; fail "the Horovod-like trainer with USBYTE_EMU_INTERFERENCE=0.2 did not complete"; }
grep -q 'last-iterations' "$WORK/horovod.out" || fail "the Horovod-like trainer printed no iteration times"
echo "trainers/interference: ok"
