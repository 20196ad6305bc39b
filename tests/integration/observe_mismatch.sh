#!/usr/bin/env bash
# Issue 4: rank 1 of the DDP-like trainer issues its buffer broadcast with the legacy ncclBcast
# instead of ncclBroadcast (the same operation to NCCL and the emulator, so the job is correct, but
# another entry point in usbyte's call signature): the agreement must see the ranks' signatures
# disagree and leave every rank in pass-through, and the results stay bit-identical.
source "$(dirname "$0")/trainers/observe_lib.sh"
N=2
ARGS=(--profile "$PROFILES/resnet50-v100-b64-barrier.json" --iters 12 --time-scale 0.1 --bytes-scale 0.02
      --mismatch-rank 1)
run mismatch "$WORK/base.out" $N no -- ddp_like "${ARGS[@]}"
USBYTE_REPORT="$WORK/report-%r.json" \
    run mismatch "$WORK/lib.out" $N yes -- ddp_like "${ARGS[@]}" --print-truth "$WORK/truth.json"
$CHECK checksums --world $N "$WORK/base.out" "$WORK/lib.out"
mapfile -t R < <(reports "$WORK" $N)
$CHECK reports "${READY_TOL[@]}" --truth "$WORK/truth.json" --world $N --expect-state pass-through \
    --reason 'signature|disagree|mismatch|differ' "${R[@]}"
