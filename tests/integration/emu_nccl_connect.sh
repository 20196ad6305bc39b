#!/usr/bin/env bash
# Connection set-up blocks the host (docs/emulator-nccl.md, "Connection set-up"): a rank's first
# collective of a new class on a communicator returns only once every peer has reached it, a
# later one of the same class does not wait for a late peer, USBYTE_EMU_CONNECT=off never waits,
# =size also waits at a new power-of-two size, USBYTE_EMU_CONNECT_US is spent on each set-up,
# and a peer that dies during the wait makes the call return ncclRemoteError (no hang).
# Rank 1 comes 0.4 s late to each call; "blocked" means more than half of that, "did not wait"
# less than half: the two differ by the whole delay, whatever the machine's load.
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${BUILD:-build}
fail() { echo "FAIL: $*"; echo "$out"; exit 1; }
blocked() { # OUT WHAT: the seconds rank 0's call WHAT blocked
    sed -n "s/^\[rank 0\] connect: $2 blocked \([0-9.]*\) s$/\1/p" <<<"$1"
}
check() { # NAME EXPECT(wait|nowait) SECONDS
    [ -n "$3" ] || fail "$1: no time printed"
    if [ "$2" = wait ]; then
        awk -v t="$3" 'BEGIN { exit !(t > 0.2) }' || fail "$1: blocked $3 s, want the late peer's 0.4 s (> 0.2)"
    else
        awk -v t="$3" 'BEGIN { exit !(t < 0.2) }' || fail "$1: blocked $3 s, want no wait for the late peer (< 0.2)"
    fi
    echo "info: $1: blocked $3 s"
}
for mode in algo size off; do
    out=$(USBYTE_EMU_CONNECT=$mode "$B/emu/emu-run" -n 2 --timeout 30 -- "$B/tests/integration/emu_connect" late 2>&1) ||
        fail "$mode: exit $?"
    grep -c 'connect: finished' <<<"$out" | grep -qx 2 || fail "$mode: not finished on both ranks"
    first=wait second=nowait grouped=nowait
    [ $mode = size ] && grouped=wait
    [ $mode = off ] && first=nowait
    check "$mode: first large" $first "$(blocked "$out" 'first large')"
    check "$mode: second large" $second "$(blocked "$out" 'second large')"
    check "$mode: grouped 2 KiB" $grouped "$(blocked "$out" 'grouped 2 KiB')"
done
# The cost of a set-up: 0.6 s on each of the three (off: none), the late peer's 0.4 s inside it.
out=$(USBYTE_EMU_CONNECT=size USBYTE_EMU_CONNECT_US=600000 "$B/emu/emu-run" -n 2 --timeout 30 -- \
      "$B/tests/integration/emu_connect" late 2>&1) || fail "cost: exit $?"
t=$(blocked "$out" 'grouped 2 KiB')
awk -v t="$t" 'BEGIN { exit !(t >= 0.6) }' || fail "cost: the grouped set-up blocked ${t:-?} s, want >= 0.6 s"
echo "info: cost 0.6 s: the grouped set-up blocked $t s"
out=$("$B/emu/emu-run" -n 2 --timeout 30 -- "$B/tests/integration/emu_connect" dead 2>&1)
rc=$?
grep -qE '^\[rank 0\] connect: remote error after [0-9.]+ s$' <<<"$out" || fail "dead peer: no ncclRemoteError (exit $rc)"
grep -q 'emu-run: timeout' <<<"$out" && fail "dead peer: the survivor hung"
echo ok
