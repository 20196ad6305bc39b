#!/usr/bin/env bash
# fork after planning, with a stream destroyed just before: the child's streams run its work
# (the emulator once gave it the parent's recycled stream object, without a worker: a hang),
# with and without libusbyte.so preloaded; the parents finish and report as usual.
set -euo pipefail
cd "$(dirname "$0")/../../.."
BUILD=${BUILD:-build}
source tests/integration/preload-env.sh
PROG=$BUILD/tests/emu/integration/emu_fork_streams
for f in "$PROG" "$BUILD/emu/emu-run" "$BUILD/libusbyte.so"; do
    [ -e "$f" ] || { echo "missing $f: build it first (make)"; exit 1; }
done
if [[ "${SAN:-}" == *thread* ]]; then
    # ThreadSanitizer stops a thread started in the child of a multi-threaded process ("dup
    # thread with used id"): exactly what this test does.  test_emu_streams covers the rest.
    echo "info: skipped under ThreadSanitizer (threads started after a multi-threaded fork)"
    exit 0
fi
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
check() { # OUT: both children ran, both parents finished
    [ "$(grep -c 'forked child ok' "$1")" -eq 2 ] || { sed 's/^/    | /' "$1"; fail "$2: a child did not finish"; }
    [ "$(grep -c 'fork streams done' "$1")" -eq 2 ] || { sed 's/^/    | /' "$1"; fail "$2: a parent did not finish"; }
}
"$BUILD/emu/emu-run" -n 2 --timeout 120 -- "$PROG" >"$WORK/plain.out" 2>&1 \
    || { sed 's/^/    | /' "$WORK/plain.out"; fail "without usbyte"; }
check "$WORK/plain.out" "without usbyte"
LD_PRELOAD="$USBYTE_PRELOAD" USBYTE_MODE=observe USBYTE_WARMUP=2 USBYTE_REPORT="$WORK/r-%r.json" \
    FORK_AFTER="$WORK/r-%d.json" "$BUILD/emu/emu-run" -n 2 --timeout 120 -- "$PROG" >"$WORK/preload.out" 2>&1 \
    || { sed 's/^/    | /' "$WORK/preload.out"; fail "with usbyte"; }
check "$WORK/preload.out" "with usbyte"
python3 - "$WORK/r-0.json" "$WORK/r-1.json" <<'PY'
import json, sys
for p in sys.argv[1:]:
    c = json.load(open(p))["comms"][0]
    assert c["state"] == "planned", (p, c["state"], c.get("state_reason"))
PY
grep -h 'forked at iteration' "$WORK/preload.out" | sed 's/^/info: /'
echo "fork streams: ok"
