#!/usr/bin/env bash
# Communicators usbyte must recognise for what they are (runtime_comms.c, exact results checked by
# the program): a nonblocking one is never profiled, whether it is nonblocking by its config, by
# inheritance (ncclCommSplit with a NULL config of a nonblocking parent, as NCCL 2.28 does) or by
# NCCL_COMM_BLOCKING=0; NCCL_COMM_BLOCKING=1 makes it blocking again, and then it is observed.
source "$(dirname "$0")/runtime_lib.sh"
PROG=$BUILD/tests/integration/runtime_comms
need "$BUILD/libusbyte.so" "$PROG" "$BUILD/emu/emu-run"
export USBYTE_EMU_ALPHA_US=200 USBYTE_EMU_GBPS=1 USBYTE_WARMUP=2 USBYTE_LOG=debug USBYTE_MIN_GAIN_PCT=-100
unset USBYTE_MODE NCCL_COMM_BLOCKING
N=2

run() { # NAME ENV... -- ARGS...: every rank must check every result
    local name=$1
    shift
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    env "${envs[@]}" LD_PRELOAD="$USBYTE_PRELOAD" USBYTE_REPORT="$WORK/$name-%r.json" \
        "$BUILD/emu/emu-run" -n $N --timeout 60 -- "$PROG" "$@" >"$WORK/$name.out" 2>&1 \
        || { sed 's/^/    | /' "$WORK/$name.out" | tail -20; fail "$name: the run failed"; }
    [ "$(grep -c 'runtime_comms ok' "$WORK/$name.out")" -eq $N ] || fail "$name: not every rank checked its results"
}

# states NAME: the communicators' states in rank 0's report ("none" without any, or without a report)
states() {
    python3 -c '
import json, os, sys
comms = json.load(open(sys.argv[1]))["comms"] if os.path.exists(sys.argv[1]) else []
print(" ".join(c["state"] for c in comms) or "none")' "$WORK/$1-0.json"
}

run split-of-nonblocking -- --mode split-of-nonblocking
[ "$(states split-of-nonblocking)" = none ] || fail "split of a nonblocking parent: profiled ($(states split-of-nonblocking))"
[ "$(grep -c 'nonblocking communicator' "$WORK/split-of-nonblocking.out")" -ge $((2 * N)) ] \
    || fail "split of a nonblocking parent: the log does not say both are nonblocking"

run env-nonblocking NCCL_COMM_BLOCKING=0 -- --mode world
[ "$(states env-nonblocking)" = none ] || fail "NCCL_COMM_BLOCKING=0: profiled ($(states env-nonblocking))"

run env-blocking NCCL_COMM_BLOCKING=1 -- --mode world
[ "$(states env-blocking)" != none ] || fail "NCCL_COMM_BLOCKING=1: the communicator was not observed"
echo "runtime comms: ok"
