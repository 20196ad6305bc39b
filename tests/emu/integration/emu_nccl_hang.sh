#!/usr/bin/env bash
# A rank that skips a collective hangs the job; emu-run --timeout must exit 124 after printing,
# for every rank, what each stream's worker is waiting in.  A rank that dies becomes the
# survivor's asynchronous error (ncclRemoteError), whose abort returns.
set -uo pipefail
cd "$(dirname "$0")/../../.."
B=${BUILD:-build}
out=$("$B/emu/emu-run" -n 2 --timeout 5 -- "$B/tests/emu/integration/emu_faults" skip 1 2>&1)
rc=$?
fail() { echo "FAIL: $*"; echo "$out"; exit 1; }
[ $rc -eq 124 ] || fail "exit status $rc, want 124"
grep -q '^emu-run: timeout after 5 s$' <<<"$out" || fail "no timeout line"
# rank 0 is stuck in the 4th allreduce of the first communicator, rank 1 (which skipped one)
# in the first allreduce of the second communicator, each waiting for the other.
grep -qE '^\[rank 0\] .*stream .*ncclAllReduce #3 comm [0-9a-f]{8}: waiting for rank 1$' <<<"$out" || fail "rank 0's dump"
grep -qE '^\[rank 1\] .*stream .*ncclAllReduce #0 comm [0-9a-f]{8}: waiting for rank 0$' <<<"$out" || fail "rank 1's dump"
out=$("$B/emu/emu-run" -n 2 --timeout 30 -- "$B/tests/emu/integration/emu_faults" dead 2>&1)
rc=$?
grep -qE '^\[rank 0\] faults: remote error after [0-9.]+ s$' <<<"$out" || fail "dead peer: no ncclRemoteError on the survivor (exit $rc)"
grep -q 'usbyte-emu: rank 0: comm [0-9a-f]*: rank 1 (pid [0-9]*) is gone: ncclRemoteError' <<<"$out" || fail "dead peer: no line naming the dead rank"
grep -q 'emu-run: timeout' <<<"$out" && fail "dead peer: the survivor hung"
echo ok
