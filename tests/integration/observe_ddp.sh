#!/usr/bin/env bash
# The DDP-like trainer on 4 emulated ranks with libusbyte.so in observe mode.  Every rank
# writes a report; all hold the same agreed profile and plan; the profile matches what the trainer
# issues (bucket count and bytes exactly, ready times within the tolerance of docs/trainers.md, every
# need 0: DDP consumes all gradients before the forward); the fitted alpha/beta are within 10% of the
# emulator's link model; the job is schedulable; the results are bit-identical without the library.
source "$(dirname "$0")/trainers/observe_lib.sh"
N=4
ARGS=(--profile "$PROFILES/resnet50-v100-b64-barrier.json" --iters 12 --time-scale 0.2 --bytes-scale 0.01)
run ddp "$WORK/base.out" $N no -- ddp_like "${ARGS[@]}"
USBYTE_REPORT="$WORK/report-%r.json" \
    run ddp "$WORK/lib.out" $N yes -- ddp_like "${ARGS[@]}" --print-truth "$WORK/truth-%r.json"
$CHECK checksums --world $N "$WORK/base.out" "$WORK/lib.out"
mapfile -t R < <(reports "$WORK" $N)
$CHECK reports "${READY_TOL[@]}" --truth "$WORK/truth-%r.json" --world $N --expect-schedulable yes \
    --emu-oplog "$WORK/lib.oplog-%r" --alpha-us "$USBYTE_EMU_ALPHA_US" --gbps "$USBYTE_EMU_GBPS" "${R[@]}"
