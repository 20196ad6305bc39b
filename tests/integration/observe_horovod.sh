#!/usr/bin/env bash
# Issue 4: the Horovod-like trainer on 2 emulated ranks.  With fusion (HOROVOD_FUSION_THRESHOLD-like
# 64 MB, 1 ms cycles) the fused buffer is copied in and out on the NCCL stream: the report must say
# the communicator is not schedulable and why.  With fusion off (threshold 0) each tensor is its own
# in-place allreduce: schedulable, profile matching the trainer's truth.  With fusion off and
# Horovod's real finalizer thread (host waits on each response as soon as it is issued, racing with
# the issue of the next ones) the profile must match exactly as with fusion off: the finalizer is
# not the thread that issues the calls, so its waits cannot hold back the next call and are no
# needs and no merge barriers (docs/runtime.md); they are only counted
# (pattern.consumers.host_waits_other_thread > 0, merge_barriers 0, every need 0).  All
# bit-identical to runs without the library.
source "$(dirname "$0")/trainers/observe_lib.sh"
N=2
ARGS=(--profile "$PROFILES/vgg16-v100-b64-barrier.json" --iters 12 --time-scale 0.05 --bytes-scale 0.002)
for mode in fused unfused finalizer; do
    extra=()
    [ $mode = unfused ] && extra=(--fusion-threshold-mb 0)
    [ $mode = finalizer ] && extra=(--fusion-threshold-mb 0 --host-finalizer)
    mkdir -p "$WORK/$mode"
    run horovod-$mode "$WORK/$mode/base.out" $N no -- horovod_like "${ARGS[@]}" "${extra[@]}"
    USBYTE_REPORT="$WORK/$mode/report-%r.json" \
        run horovod-$mode "$WORK/$mode/lib.out" $N yes -- horovod_like "${ARGS[@]}" "${extra[@]}" \
        --print-truth "$WORK/$mode/truth-%r.json"
    $CHECK checksums --world $N "$WORK/$mode/base.out" "$WORK/$mode/lib.out"
done
mapfile -t R < <(reports "$WORK/fused" $N)
echo "== fused"
$CHECK reports "${READY_TOL[@]}" --truth "$WORK/fused/truth-%r.json" --world $N --expect-schedulable no \
    --reason 'stream.?ordered|memcpy|copy|fusion' "${R[@]}"
mapfile -t R < <(reports "$WORK/unfused" $N)
echo "== fusion off"
$CHECK reports "${READY_TOL[@]}" --truth "$WORK/unfused/truth-%r.json" --world $N --expect-schedulable yes \
    --emu-oplog "$WORK/unfused/lib.oplog-%r" --alpha-us "$USBYTE_EMU_ALPHA_US" --gbps "$USBYTE_EMU_GBPS" "${R[@]}"
mapfile -t R < <(reports "$WORK/finalizer" $N)
echo "== fusion off, host finalizer thread"
$CHECK reports "${READY_TOL[@]}" --truth "$WORK/finalizer/truth-%r.json" --world $N --expect-schedulable yes \
    --emu-oplog "$WORK/finalizer/lib.oplog-%r" --alpha-us "$USBYTE_EMU_ALPHA_US" --gbps "$USBYTE_EMU_GBPS" "${R[@]}"
python3 - "${R[@]}" <<'PY'
import json, sys
bad = 0
for path in sys.argv[1:]:
    c = json.load(open(path))["comms"][0]
    cons = c["pattern"]["consumers"]
    needs = [x.get("need") for x in c["profile"]["calls"]]
    merge = [x.get("merge", True) for x in c["profile"]["calls"]]
    print("info: %s: consumers %s" % (path.rsplit("/", 1)[1], json.dumps(cons)))
    if cons.get("host_waits_other_thread", 0) < 1:
        print("FAIL: the finalizer's host waits were not seen as waits from another thread"); bad = 1
    if cons.get("merge_barriers") != 0 or not all(merge) or any(n != 0 for n in needs):
        print("FAIL: the finalizer's waits shaped the profile: needs %s, merge %s, merge_barriers %s"
              % (needs, merge, cons.get("merge_barriers"))); bad = 1
sys.exit(bad)
PY
