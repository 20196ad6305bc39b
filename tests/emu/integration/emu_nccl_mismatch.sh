#!/usr/bin/env bash
# The emulator's guard against ranks issuing different operations: emu-run must fail fast
# (every rank exits 3) with exactly one diagnostic naming the communicator, the operation index
# and every rank's signature.  USBYTE_EMU_CHECK=bytes compares only kind, bytes and root: a dtype
# difference of equal bytes then runs to the end (as on real NCCL), any other difference still stops.
set -uo pipefail
cd "$(dirname "$0")/../../.."
B=${BUILD:-build}
fail() { echo "FAIL: $*"; echo "$out"; exit 1; }

# expect_mismatch RANKS PATTERN ARGS...: run, require status 3 within 20 s, one diagnostic line
# matching PATTERN (fixed string), and no rank finishing.
expect_mismatch() {
    local n=$1 want=$2
    shift 2
    local start=$SECONDS
    out=$("$B/emu/emu-run" -n "$n" --timeout 60 -- "$B/tests/emu/integration/emu_faults" "$@" 2>&1)
    local rc=$? took=$((SECONDS - start))
    [ $rc -eq 3 ] || fail "emu_faults $*: exit status $rc, want 3"
    [ $took -le 20 ] || fail "emu_faults $*: took $took s to stop"
    [ "$(grep -c 'usbyte-emu: .*mismatch' <<<"$out")" -eq 1 ] || fail "emu_faults $*: want exactly one diagnostic"
    grep -qF -- "$want" <<<"$out" || fail "emu_faults $*: diagnostic lacks: $want"
    ! grep -q 'faults: finished' <<<"$out" || fail "emu_faults $*: a rank went past the mismatch"
}

expect_mismatch 2 "op #5: rank0 allreduce count=1024 float32 sum; rank1 allreduce count=2048 float32 sum" count 5
expect_mismatch 3 "op #2: rank0 allreduce count=1024 float32 sum; rank1 broadcast count=1024 float32 root=0; rank2 allreduce count=1024 float32 sum" kind 2
expect_mismatch 2 "rank0 send #0 count=1000 float32 to rank1; rank1 recv #0 count=999 float32 from rank0" p2p
expect_mismatch 2 "op #3: rank0 allreduce count=1024 float32 sum; rank1 allreduce count=1024 int32 sum" dtype 3
USBYTE_EMU_CHECK=bytes expect_mismatch 2 "op #1: rank0 allreduce count=1024 float32 sum; rank1 allreduce count=2048 float32 sum" count 1
USBYTE_EMU_CHECK=bytes expect_mismatch 3 "op #2: rank0 allreduce count=1024 float32 sum; rank1 broadcast count=1024 float32 root=0" kind 2
out=$(USBYTE_EMU_CHECK=bytes "$B/emu/emu-run" -n 2 --timeout 60 -- "$B/tests/emu/integration/emu_faults" dtype 3 2>&1) ||
    fail "dtype 3 under USBYTE_EMU_CHECK=bytes: exit status $?, want 0"
[ "$(grep -c 'faults: finished' <<<"$out")" -eq 2 ] || fail "dtype 3 under USBYTE_EMU_CHECK=bytes: not every rank finished"
out=$(USBYTE_EMU_CHECK=loose "$B/emu/emu-run" -n 2 --timeout 60 -- "$B/tests/emu/integration/emu_faults" dtype 3 2>&1)
[ $? -eq 3 ] || fail "USBYTE_EMU_CHECK=loose must fall back to strict"
grep -q "USBYTE_EMU_CHECK='loose' is not strict or bytes; using the default strict" <<<"$out" || fail "no warning for USBYTE_EMU_CHECK=loose"
grep -qE 'signature mismatch on comm [0-9a-f]{8} ' <<<"$(
    "$B/emu/emu-run" -n 2 -- "$B/tests/emu/integration/emu_faults" count 0 2>&1)" || { echo "FAIL: comm not named"; exit 1; }
echo ok
