#!/usr/bin/env bash
# One process, two emulated devices, two threads (runtime_devices.c): each thread issues the calls
# of its own rank of a communicator made by ncclCommInitAll, with the other device current.  In
# schedule mode every private stream, event and buffer usbyte makes for a communicator must be on
# that communicator's device (the emulator refuses an event recorded on a stream of another device)
# and no call may leave the thread's current device changed; the program checks the results and
# the device after every call, this script that both communicators ran their plan.
# Its subject is device scope, so it runs with the default hardware queues: on one queue per
# device (CUDA_DEVICE_MAX_CONNECTIONS=1) this program hangs with or without usbyte (the emulator
# names device 0's NCCL stream waiting on its compute stream's event behind an allreduce that
# waits for the other device), which is the program's pattern, not usbyte's.
source "$(dirname "$0")/runtime_lib.sh"
export CUDA_DEVICE_MAX_CONNECTIONS=8
PROG=$BUILD/tests/integration/runtime_devices
need "$BUILD/libusbyte.so" "$PROG" "$BUILD/emu/emu-run"
export USBYTE_EMU_ALPHA_US=200 USBYTE_EMU_GBPS=1 USBYTE_WARMUP=2 USBYTE_LOG=info USBYTE_MIN_GAIN_PCT=-100
unset USBYTE_MODE
LD_PRELOAD="$USBYTE_PRELOAD" USBYTE_REPORT="$WORK/devices-%r.json" \
    "$BUILD/emu/emu-run" -n 1 --timeout 90 -- "$PROG" >"$WORK/devices.out" 2>&1 \
    || { sed 's/^/    | /' "$WORK/devices.out" | tail -20; fail "the run failed"; }
grep -q 'runtime_devices ok' "$WORK/devices.out" || fail "the program did not check every result"
python3 - "$WORK/devices-0.json" <<'PY' || fail "report check failed"
import json, sys
comms = json.load(open(sys.argv[1]))["comms"]
assert [c["state"] for c in comms] == ["schedule", "schedule"], [(c["state"], c.get("state_reason")) for c in comms]
assert all(c["schedule"]["iterations"] >= 8 for c in comms), [c["schedule"]["iterations"] for c in comms]
PY
# One thread drives both ranks (nccl-tests -g 2): each call is one group holding both ranks'
# allreduces.  usbyte cannot issue one rank's blocks alone (the emulator, as NCCL may, blocks the
# launch of a collective until the other ranks of this process have launched theirs: only this
# thread would, later), so both communicators stay in pass-through, saying why; the job runs as
# without the library.
LD_PRELOAD="$USBYTE_PRELOAD" USBYTE_REPORT="$WORK/one-%r.json" \
    "$BUILD/emu/emu-run" -n 1 --timeout 60 -- "$PROG" --one-thread >"$WORK/one.out" 2>&1 \
    || { sed 's/^/    | /' "$WORK/one.out" | tail -20; fail "one thread for both ranks: the run failed"; }
grep -q 'runtime_devices ok' "$WORK/one.out" || fail "one thread for both ranks: the program did not check every result"
python3 - "$WORK/one-0.json" <<'PY' || { grep usbyte "$WORK/one.out" | tail -5 | sed 's/^/    | /'; fail "one thread for both ranks: report check failed"; }
import json, sys
comms = json.load(open(sys.argv[1]))["comms"]
assert [c["state"] for c in comms] == ["pass-through", "pass-through"], [(c["state"], c.get("state_reason")) for c in comms]
for c in comms:
    assert "one thread issues the calls of" in c.get("state_reason", ""), c.get("state_reason")
PY
echo "runtime devices: ok"
