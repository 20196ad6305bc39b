#!/usr/bin/env bash
# Observe mode: the Horovod-like trainer on 2 emulated ranks.  With fusion (HOROVOD_FUSION_THRESHOLD-like
# 64 MB, 1 ms cycles) the fused buffer is copied in and out on the NCCL stream: the report must say
# the communicator is not schedulable and why.  With fusion off (threshold 0) each tensor is its own
# in-place allreduce: schedulable, profile matching the trainer's truth.  With fusion off and
# Horovod's real finalizer thread (host waits on each response as soon as it is issued, racing with
# the issue of the next ones) the profile must match exactly as with fusion off: the finalizer is
# not the thread that issues the calls, so its waits cannot hold back the next call and are no
# needs and no merge barriers (docs/runtime.md); they are only counted
# (pattern.consumers.host_waits_other_thread > 0, merge_barriers 0, every need 0).  With fusion off
# and averaging as Horovod does without ncclAvg (--postscale: a scale kernel on the NCCL stream
# after each allreduce) the communicator is not schedulable, and the reason's fix is what removes
# those kernels (ncclAvg, op=hvd.Sum), not the fusion threshold again; the fix reaches
# usbyte-report's summary and page whole.  All bit-identical to runs without the library.
source "$(dirname "$0")/trainers/observe_lib.sh"
N=2
ARGS=(--profile "$PROFILES/vgg16-v100-b64-barrier.json" --iters 12 --time-scale 0.05 --bytes-scale 0.002)
for mode in fused unfused finalizer postscale; do
    extra=()
    [ $mode = unfused ] && extra=(--fusion-threshold-mb 0)
    [ $mode = finalizer ] && extra=(--fusion-threshold-mb 0 --host-finalizer)
    [ $mode = postscale ] && extra=(--fusion-threshold-mb 0 --postscale)
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
mapfile -t R < <(reports "$WORK/postscale" $N)
echo "== fusion off, averaging with a scale kernel"
$CHECK reports "${READY_TOL[@]}" --truth "$WORK/postscale/truth-%r.json" --world $N --expect-schedulable no \
    --reason 'stream-ordered compute' "${R[@]}"
python3 - "${R[@]}" <<'PY'
import json, sys
for path in sys.argv[1:]:
    reasons = json.load(open(path))["comms"][0]["verdict"]["reasons"]
    assert len(reasons) == 1 and reasons[0].startswith("stream-ordered compute"), reasons
    why = reasons[0]
    assert "set HOROVOD_FUSION_THRESHOLD=0" not in why and "op=hvd.Sum" in why and "ncclAvg" in why, why
PY
FIX="keep kernels off the NCCL stream between allreduces. Horovod: HOROVOD_FUSION_THRESHOLD=0 does not remove these \
kernels; average with ncclAvg (Horovod 0.26 or later built against NCCL 2.10 or later) and leave \
gradient_predivide_factor at 1.0, or pass op=hvd.Sum and divide by hvd.size() yourself (scale the loss before backward)"
"$ROOT/$BUILD/usbyte-report" --summary --quiet -o "$WORK/postscale/page" "${R[@]}" >"$WORK/postscale/summary" 2>&1 \
    || { cat "$WORK/postscale/summary"; echo "FAIL: usbyte-report failed"; exit 1; }
grep -qxF "  fix: $FIX" "$WORK/postscale/summary" \
    || { cat "$WORK/postscale/summary"; echo "FAIL: the summary lacks the whole fix"; exit 1; }
grep -qF "Fix: $FIX</div>" "$WORK/postscale/page/usbyte-report.html" || { echo "FAIL: the page lacks the whole fix"; exit 1; }
grep -q 'set HOROVOD_FUSION_THRESHOLD=0' "$WORK/postscale/summary" && { echo "FAIL: the summary says to turn fusion off"; exit 1; }
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
