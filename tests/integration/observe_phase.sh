#!/usr/bin/env bash
# A lock that falls mid-iteration.  ResNet-50's per-layer calls repeat a 9-call block (a
# bottleneck's conv and norm tensors), so the detector first locks on 9 calls; the buffers refute
# it and detection restarts where that was agreed, in the middle of a backward pass.  The next
# lock, on the true 161 calls, then numbers its iterations from there: half of each profiled
# "iteration" is the next backward pass, and its profile says the calls are ready over a whole
# iteration (every plan would have been wfbp).  The agreed profile shows where the widest gap
# between ready times lies, every rank profiles again from that call, and the report describes
# a real iteration: its backward pass spans a fraction of the iteration and the plan merges.
# Every rank must move at the same call, whether it read the agreement early or at the switch.
# Observe and schedule mode; results bit-identical without the library.
# The widest gap between ready times needs ready times that are the compute stream's own: on one
# hardware queue (CUDA_DEVICE_MAX_CONNECTIONS=1) each record also waits behind the collectives
# submitted before it, the gap moves and no phase is found, as on a GPU.  So this test runs with
# the default queues, whatever the suite runs under.
source "$(dirname "$0")/trainers/observe_lib.sh"
export CUDA_DEVICE_MAX_CONNECTIONS=8
N=2
# Latency-bound (0.8 ms per call, 161 calls), so that merging pays even when sanitizers slow the
# backward pass to 60 ms.
export USBYTE_WARMUP=3 USBYTE_EMU_ALPHA_US=400 USBYTE_EMU_GBPS=10
ARGS=(--profile "$PROFILES/resnet50-v100-b64.json" --iters 16 --time-scale 0.05 --bytes-scale 0.002)
run phase "$WORK/base.out" $N no -- per_layer "${ARGS[@]}"
for mode in observe schedule; do
    mkdir -p "$WORK/$mode"
    USBYTE_MODE=$mode USBYTE_REPORT="$WORK/$mode/report-%r.json" \
        run phase-$mode "$WORK/$mode/lib.out" $N yes -- per_layer "${ARGS[@]}"
    $CHECK checksums --world $N "$WORK/base.out" "$WORK/$mode/lib.out"
    # Every rank moves, at the same call: a rank that read the agreement early (a poll, which
    # depends on timing) once skipped the move, and the next agreement met an application call.
    moved=$(grep -c "did not begin where an iteration does" "$WORK/$mode/lib.out" || true)
    [ "$moved" -eq $N ] ||
        { sed 's/^/    | /' "$WORK/$mode/lib.out" | grep usbyte | tail -20; echo "FAIL: $mode: $moved of $N ranks moved the iteration's start"; exit 1; }
    python3 - "$mode" "$WORK/$mode"/report-*.json <<'PY'
import json, sys
mode, paths = sys.argv[1], sys.argv[2:]
for p in paths:
    c = json.load(open(p))["comms"][0]
    prof, plan = c["profile"], c["plan"]
    span, it = prof["backward_end"], c["measured_iteration"]
    blocks = len(plan["blocks"])
    print("info: %s %s: %s, backward %.3f ms of a %.3f ms iteration, %d blocks for %d calls"
          % (mode, p.rsplit("/", 1)[1], c["state"], 1e3 * span, 1e3 * it, blocks, len(prof["calls"])))
    assert len(prof["calls"]) == 161, "%d calls" % len(prof["calls"])
    # Ready over the whole iteration is the mis-phased profile (0.99 of it); a real backward is a
    # fraction (0.1 here, 0.4 under ThreadSanitizer).
    assert span < 0.75 * it, "backward spans %.3f of the iteration: still mis-phased" % (span / it)
    assert blocks < 161 // 4, "%d blocks: the plan hardly merges" % blocks
    if mode == "schedule":
        assert c["state"] == "schedule", c["state"]
PY
done
echo "phase: ok"
