#!/usr/bin/env bash
# NCCL's connection set-up at an algorithm's first use (docs/emulator-nccl.md, "Connections"): the
# first small and the first large allreduce's host call returns only after the other rank entered
# its own (CLOCK_REALTIME stamps of the two processes, causality rather than durations: a busy
# machine only delays both), and a later small one returns while the other rank has not called
# (it waits for rank 0's file first: a call that blocked would never return).
set -uo pipefail
cd "$(dirname "$0")/../../.."
B=${BUILD:-build}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
out=$(FLAGS=$work "$B/emu/emu-run" -n 2 --timeout 60 -- "$B/tests/emu/integration/emu_connect" 2>&1)
rc=$?
fail() { echo "FAIL: $*"; echo "$out" | tail -20; exit 1; }
[ $rc -eq 0 ] || fail "exit status $rc"
[ "$(grep -c 'connect: rank [01] ok' <<<"$out")" = 2 ] || fail "a rank did not finish"
stamp() { grep -o "connect: $1 rank $2 $3 [0-9.]*" <<<"$out" | awk '{print $6}'; }
for phase in small large; do
    ret=$(stamp $phase 0 return) enter=$(stamp $phase 1 enter)
    [ -n "$ret" ] && [ -n "$enter" ] || fail "$phase: no stamps"
    awk -v r="$ret" -v e="$enter" 'BEGIN { exit !(r >= e) }' ||
        fail "$phase: rank 0's first call returned at $ret, before rank 1 entered its own at $enter"
    echo "info: $phase: rank 0 returned $(awk -v r="$ret" -v e="$enter" 'BEGIN { printf "%.1f", (r - e) * 1e3 }') ms after rank 1 entered"
done
echo ok
