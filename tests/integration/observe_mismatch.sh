#!/usr/bin/env bash
# Observe mode with ranks that issue different call sequences.  Rank 1 of the DDP-like trainer allreduces its
# first bucket as int32 where the other ranks use float32 (--mismatch-rank: same count, same bytes),
# in every iteration.  That is a wrong program: real NCCL runs it without noticing (it checks nothing
# across ranks) and rank 1 adds float bits as integers; the emulator runs it the same way under
# USBYTE_EMU_CHECK=bytes (kind, bytes and root must match, as real NCCL needs not to hang).
# usbyte's portable signature holds the dtype, so the agreement must see the ranks disagree and
# leave every rank in pass-through with the reason "signature mismatch", issuing exactly what the
# program issues: each rank's checksum equals its checksum without the library.  Both runs compute
# the same wrong program, so rank 1's checksum differs from the others' in both; what is compared
# is rank by rank.
source "$(dirname "$0")/trainers/observe_lib.sh"
N=2
export USBYTE_EMU_CHECK=bytes
ARGS=(--profile "$PROFILES/resnet50-v100-b64-barrier.json" --iters 12 --time-scale 0.1 --bytes-scale 0.02
      --mismatch-rank 1)
run mismatch "$WORK/base.out" $N no -- ddp_like "${ARGS[@]}"
USBYTE_REPORT="$WORK/report-%r.json" \
    run mismatch "$WORK/lib.out" $N yes -- ddp_like "${ARGS[@]}" --print-truth "$WORK/truth-%r.json"
$CHECK checksums --per-rank --world $N "$WORK/base.out" "$WORK/lib.out"
mapfile -t R < <(reports "$WORK" $N)
$CHECK reports "${READY_TOL[@]}" --truth "$WORK/truth-%r.json" --world $N --expect-state pass-through \
    --reason 'signature mismatch' "${R[@]}"
