#!/usr/bin/env bash
# Observe mode: the per-layer trainer (the next forward waits on each layer's end event separately) on
# 2 emulated ranks with VGG-16's layer-wise profile: the report's needs must form the trainer's
# groups (distinct needs, one per forward segment, non-increasing in arrival order), with the rest
# of the profile matching the truth and results bit-identical without the library.  Distinct needs
# are per-call completion's (USBYTE_COMPLETION=call: every call has its own end event); under the
# default stream completion a wait on the input-side layer waits for every call (a barrier).
source "$(dirname "$0")/trainers/observe_lib.sh"
N=2
ARGS=(--profile "$PROFILES/vgg16-v100-b64.json" --iters 12 --time-scale 0.05 --bytes-scale 0.002)
run per-layer "$WORK/base.out" $N no -- per_layer "${ARGS[@]}"
USBYTE_COMPLETION=call USBYTE_REPORT="$WORK/report-%r.json" \
    run per-layer "$WORK/lib.out" $N yes -- per_layer "${ARGS[@]}" --print-truth "$WORK/truth-%r.json"
$CHECK checksums --world $N "$WORK/base.out" "$WORK/lib.out"
mapfile -t R < <(reports "$WORK" $N)
$CHECK reports "${READY_TOL[@]}" --truth "$WORK/truth-%r.json" --world $N --expect-schedulable yes --distinct-needs \
    --emu-oplog "$WORK/lib.oplog-%r" --alpha-us "$USBYTE_EMU_ALPHA_US" --gbps "$USBYTE_EMU_GBPS" "${R[@]}"
