#!/usr/bin/env bash
# Multi-rank correctness of the emulated NCCL through emu-run: every dtype x op of allreduce
# (grouped, in place, multi-chunk), broadcast/reduce/allgather/reducescatter, send/recv rings,
# two communicators, split, unique ids, pnccl aliases and argument errors, on 1 to 4 ranks.
set -euo pipefail
cd "$(dirname "$0")/../../.."
B=${BUILD:-build}
run=$B/emu/emu-run
for n in 3 4 1; do
    out=$("$run" -n $n --timeout 60 -- "$B/tests/emu/integration/emu_allreduce")
    [ "$(grep -c "allreduce: 61 dtype/op combinations correct on $n ranks" <<<"$out")" -eq $n ] || { echo "$out"; exit 1; }
done
for n in 2 3; do
    out=$("$run" -n $n --timeout 60 -- "$B/tests/emu/integration/emu_collectives")
    [ "$(grep -c "collectives: all checks passed on $n ranks" <<<"$out")" -eq $n ] || { echo "$out"; exit 1; }
done
echo "ok"
