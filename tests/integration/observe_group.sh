#!/usr/bin/env bash
# First law (docs/design.md section 2): differences between ranks that NCCL accepts must not change
# what usbyte issues.  Rank 1 of the DDP-like trainer wraps each of its NCCL calls in
# ncclGroupStart/ncclGroupEnd (a group of one collective, launched at ncclGroupEnd); rank 0 issues
# its buffer broadcast with the legacy ncclBcast (ncclBroadcast(buf, buf, ...) to NCCL).  The job
# is correct without the library (the emulator checks every operation strictly); with it preloaded
# it must complete with bit-identical results, the agreement collectives issued at the same
# operation index on both ranks (inside rank 1's group), and both ranks must agree: the same
# profile and plan, matching the trainer's truth, as in observe_ddp.sh.
source "$(dirname "$0")/trainers/observe_lib.sh"
N=2
ARGS=(--profile "$PROFILES/resnet50-v100-b64-barrier.json" --iters 12 --time-scale 0.1 --bytes-scale 0.02
      --group-rank 1 --bcast-rank 0)
run group "$WORK/base.out" $N no -- ddp_like "${ARGS[@]}"
USBYTE_REPORT="$WORK/report-%r.json" \
    run group "$WORK/lib.out" $N yes -- ddp_like "${ARGS[@]}" --print-truth "$WORK/truth-%r.json"
$CHECK checksums --world $N "$WORK/base.out" "$WORK/lib.out"
mapfile -t R < <(reports "$WORK" $N)
$CHECK reports "${READY_TOL[@]}" --truth "$WORK/truth-%r.json" --world $N --expect-state planned \
    --expect-schedulable yes --emu-oplog "$WORK/lib.oplog-%r" --alpha-us "$USBYTE_EMU_ALPHA_US" --gbps "$USBYTE_EMU_GBPS" "${R[@]}"
