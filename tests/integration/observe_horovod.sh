#!/usr/bin/env bash
# Issue 4: the Horovod-like trainer on 2 emulated ranks.  With fusion (HOROVOD_FUSION_THRESHOLD-like
# 64 MB, 1 ms cycles) the fused buffer is copied in and out on the NCCL stream: the report must say
# the communicator is not schedulable and why.  With fusion off (threshold 0) each tensor is its own
# in-place allreduce: schedulable, profile matching the trainer's truth.  With fusion off and
# Horovod's real finalizer thread (host waits on each response as soon as it is issued, racing with
# the issue of the next ones) the profile must still match in calls, bytes, ready times and fit;
# its needs and merge flags depend on that race and are only reported.  All bit-identical to runs
# without the library.
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
        --print-truth "$WORK/$mode/truth.json"
    $CHECK checksums --world $N "$WORK/$mode/base.out" "$WORK/$mode/lib.out"
done
mapfile -t R < <(reports "$WORK/fused" $N)
echo "== fused"
$CHECK reports "${READY_TOL[@]}" --truth "$WORK/fused/truth.json" --world $N --expect-schedulable no \
    --reason 'stream.?ordered|memcpy|copy|fusion' "${R[@]}"
mapfile -t R < <(reports "$WORK/unfused" $N)
echo "== fusion off"
$CHECK reports "${READY_TOL[@]}" --truth "$WORK/unfused/truth.json" --world $N --expect-schedulable yes \
    --alpha-us "$USBYTE_EMU_ALPHA_US" --gbps "$USBYTE_EMU_GBPS" "${R[@]}"
mapfile -t R < <(reports "$WORK/finalizer" $N)
echo "== fusion off, host finalizer thread"
$CHECK reports "${READY_TOL[@]}" --truth "$WORK/finalizer/truth.json" --world $N --any-needs \
    --alpha-us "$USBYTE_EMU_ALPHA_US" --gbps "$USBYTE_EMU_GBPS" "${R[@]}"
