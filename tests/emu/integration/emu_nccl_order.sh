#!/usr/bin/env bash
# Operations of one communicator run in host issue order across streams, and a group spanning
# two streams holds both (see emu_order.c).
set -euo pipefail
cd "$(dirname "$0")/../../.."
B=${BUILD:-build}
for n in 2 3; do
    out=$("$B/emu/emu-run" -n $n --timeout 60 -- "$B/tests/emu/integration/emu_order")
    [ "$(grep -c "order: host issue order held across streams on $n ranks" <<<"$out")" -eq $n ] || { echo "$out"; exit 1; }
done
echo ok
