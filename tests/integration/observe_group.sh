#!/usr/bin/env bash
# First law (DESIGN.md section 2): rank 1 of the DDP-like trainer wraps each of its NCCL calls in
# ncclGroupStart/ncclGroupEnd (a group of one collective: the same operation, launched at
# ncclGroupEnd); the other ranks do not.  The job is correct without the library (the emulator
# checks every operation); with it preloaded it must still complete with bit-identical results:
# nothing usbyte issues (the agreement collective above all) may depend on the rank-local group
# structure.  The reports may say anything about scheduling, but every rank must write one and
# every rank must be in the same state.
source "$(dirname "$0")/trainers/observe_lib.sh"
N=2
ARGS=(--profile "$PROFILES/resnet50-v100-b64-barrier.json" --iters 12 --time-scale 0.1 --bytes-scale 0.02
      --group-rank 1)
run group "$WORK/base.out" $N no -- ddp_like "${ARGS[@]}"
USBYTE_REPORT="$WORK/report-%r.json" \
    run group "$WORK/lib.out" $N yes -- ddp_like "${ARGS[@]}"
$CHECK checksums --world $N "$WORK/base.out" "$WORK/lib.out"
mapfile -t R < <(reports "$WORK" $N)
python3 - "${R[@]}" <<'PY'
import json, sys
states = {p: [c.get("state") for c in json.load(open(p)).get("comms", [])] for p in sys.argv[1:]}
print("info: states %s" % states)
if len({json.dumps(s) for s in states.values()}) != 1:
    print("FAIL: the ranks ended in different states"); sys.exit(1)
PY
