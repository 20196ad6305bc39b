#!/usr/bin/env bash
# The time model within 10% + 2 ms (median of 5, event-measured on the stream, less what the
# emulator's op log says it added: a late peer, data movement slower than the model), with and
# without payload, and ncclGroupSimulateEnd's estimate (see emu_timing.c).  alpha = 2 ms and
# 0.1 GB/s make the modelled times (4 to 120 ms) dominate real data movement, except under
# ThreadSanitizer, which slows the 8 MiB reduction past its 84 ms.
set -euo pipefail
cd "$(dirname "$0")/../../.."
B=${BUILD:-build}
export USBYTE_EMU_ALPHA_US=2000 USBYTE_EMU_GBPS=0.1
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export USBYTE_EMU_OPLOG="$WORK/oplog-%r.txt"
out=$("$B/emu/emu-run" -n 2 --timeout 60 -- "$B/tests/emu/integration/emu_timing")
echo "$out" | grep 'rank 0'
[ "$(grep -c 'timing: done' <<<"$out")" -eq 2 ] || { echo "$out"; exit 1; }
rm -f "$WORK"/oplog-*.txt
out=$(USBYTE_EMU_PAYLOAD=0 "$B/emu/emu-run" -n 3 --timeout 60 -- "$B/tests/emu/integration/emu_timing" nopayload)
echo "$out" | grep 'rank 0'
[ "$(grep -c 'timing: done' <<<"$out")" -eq 3 ] || { echo "$out"; exit 1; }
echo ok
