#!/usr/bin/env bash
# Communicators usbyte must recognise for what they are (runtime_comms.c, exact results checked by
# the program): a nonblocking one is never profiled, whether it is nonblocking by its config, by
# inheritance (ncclCommSplit with a NULL config of a nonblocking parent, as NCCL 2.28 does) or by
# NCCL_COMM_BLOCKING=0, in the environment or in NCCL's configuration file (NCCL_CONF_FILE, else
# ~/.nccl.conf, then /etc/nccl.conf; the environment wins); NCCL_COMM_BLOCKING=1 makes it blocking
# again, and then it is observed.  A nonblocking one is in the report, disabled, with its reason.
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
# reasons NAME: the communicators' state reasons in rank 0's report, one a line
reasons() {
    python3 -c '
import json, sys
for c in json.load(open(sys.argv[1]))["comms"]: print(c.get("state_reason", ""))' "$WORK/$1-0.json"
}

run split-of-nonblocking -- --mode split-of-nonblocking
[ "$(states split-of-nonblocking)" = "disabled disabled" ] \
    || fail "split of a nonblocking parent: not reported as two disabled communicators ($(states split-of-nonblocking))"
[ "$(reasons split-of-nonblocking | tr '\n' '|')" = "nonblocking communicator (its config: blocking = 0)|nonblocking communicator (inherited from the communicator it was split from)|" ] \
    || fail "split of a nonblocking parent: reasons $(reasons split-of-nonblocking | tr '\n' '|')"
[ "$(grep -c 'nonblocking communicator' "$WORK/split-of-nonblocking.out")" -ge $((2 * N)) ] \
    || fail "split of a nonblocking parent: the log does not say both are nonblocking"

run env-nonblocking NCCL_COMM_BLOCKING=0 -- --mode world
[ "$(states env-nonblocking)" = disabled ] || fail "NCCL_COMM_BLOCKING=0: profiled ($(states env-nonblocking))"
reasons env-nonblocking | grep -q '^nonblocking communicator (NCCL_COMM_BLOCKING=0, from the environment or NCCL.s configuration file)$' \
    || fail "NCCL_COMM_BLOCKING=0: reason $(reasons env-nonblocking)"

run env-blocking NCCL_COMM_BLOCKING=1 -- --mode world
[ "$(states env-blocking)" != none ] && [ "$(states env-blocking)" != disabled ] \
    || fail "NCCL_COMM_BLOCKING=1: the communicator was not observed"

# NCCL's configuration file: a comment, another setting, then NCCL_COMM_BLOCKING=0.
printf '# usbyte test\nNCCL_DEBUG_SUBSYS=INIT\nNCCL_COMM_BLOCKING=0\n' >"$WORK/nccl.conf"
run conf-nonblocking NCCL_CONF_FILE="$WORK/nccl.conf" -- --mode world
[ "$(states conf-nonblocking)" = disabled ] || fail "NCCL_COMM_BLOCKING=0 in NCCL_CONF_FILE: profiled ($(states conf-nonblocking))"
reasons conf-nonblocking | grep -q "NCCL_COMM_BLOCKING=0, from" \
    || fail "NCCL_COMM_BLOCKING=0 in NCCL_CONF_FILE: reason $(reasons conf-nonblocking)"
# The environment wins over the file, as in NCCL.
run conf-env-blocking NCCL_CONF_FILE="$WORK/nccl.conf" NCCL_COMM_BLOCKING=1 -- --mode world
[ "$(states conf-env-blocking)" != disabled ] || fail "NCCL_COMM_BLOCKING=1 over the file: not observed"
# Two communicators whose calls share one stream: usbyte would defer both onto their private
# streams and follow only one of them for the stream's events; both stay in pass-through, saying
# why (every rank, through the agreement).
run shared-stream -- --mode shared-stream
[ "$(states shared-stream)" = "pass-through pass-through" ] || fail "shared stream: states $(states shared-stream)"
[ "$(reasons shared-stream | grep -c 'the calls of communicators 0 and 1 share one stream')" -eq 2 ] \
    || fail "shared stream: reasons $(reasons shared-stream | tr '\n' '|')"

# No communicator reaches usbyte (NCCL linked statically, as Horovod does by default): one line at
# exit per process, and the report says so.
run cuda-only -- --mode cuda-only
[ "$(grep -c 'warning: no NCCL communicator was created through libnccl.so.2 in this process; NCCL linked statically? run usbyte-doctor on the binary' "$WORK/cuda-only.out")" -eq $N ] \
    || { sed 's/^/    | /' "$WORK/cuda-only.out" | tail; fail "no communicator: not one line per process"; }
python3 - "$WORK/cuda-only-0.json" <<'PY' || fail "no communicator: report check failed"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["comms"] == [], r["comms"]
assert r["note"].startswith("no NCCL communicator was created through libnccl.so.2"), r.get("note")
PY
echo "runtime comms: ok"
