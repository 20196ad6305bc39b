#!/usr/bin/env bash
# make demo: the DDP-like trainer on 4 emulated ranks with ResNet-50's profile, first without and
# then with libusbyte.so (observe mode); prints both checksums (they must be equal) and the report's
# summary: the measured iteration time, every policy's predicted iteration and the chosen plan's
# predicted speedup.  Times are the profile's times x TIME_SCALE and sizes x BYTES_SCALE, with the
# emulated link scaled so that communication weighs what it would on ~10 Gb/s Ethernet.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
SAN=${SAN:-}
RANKS=${RANKS:-4}
PROFILE=${PROFILE:-examples/profiles/resnet50-v100-b64-barrier.json}
TIME_SCALE=${TIME_SCALE:-0.5}
BYTES_SCALE=${BYTES_SCALE:-0.02}
ITERS=${ITERS:-20}
# 10 Gb/s Ethernet (1.25 GB/s, ~50 us per step) scaled like the job: bytes x 0.02 over time x 0.5.
export USBYTE_EMU_GBPS=${USBYTE_EMU_GBPS:-0.05}
export USBYTE_EMU_ALPHA_US=${USBYTE_EMU_ALPHA_US:-25}
export USBYTE_LOG=${USBYTE_LOG:-info}

for f in "$BUILD/emu/emu-run" "$BUILD/trainers/ddp_like" "$BUILD/libusbyte.so"; do
    [ -e "$f" ] || { echo "demo: $f is missing (make all)" >&2; exit 1; }
done
preload="$PWD/$BUILD/libusbyte.so"
[[ "$SAN" == *address* ]] && preload="$(gcc -print-file-name=libasan.so) $preload"

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
args=(--profile "$PROFILE" --iters "$ITERS" --time-scale "$TIME_SCALE" --bytes-scale "$BYTES_SCALE")
echo "== DDP-like trainer, $RANKS emulated ranks, $(basename "$PROFILE"), times x$TIME_SCALE, bytes x$BYTES_SCALE"
echo "   emulated link: alpha ${USBYTE_EMU_ALPHA_US} us per ring step, ${USBYTE_EMU_GBPS} GB/s"

run() {   # run LABEL OUTFILE PRELOAD
    local start end
    start=$(date +%s%N)
    if ! LD_PRELOAD="$3" "$BUILD/emu/emu-run" -n "$RANKS" --timeout 120 -- "$BUILD/trainers/ddp_like" "${args[@]}" \
        >"$2" 2>&1; then
        echo "demo: the run $1 failed:" >&2
        tail -40 "$2" >&2
        exit 1
    fi
    end=$(date +%s%N)
    printf '== %-20s %s, %s (%.1f s)\n' "$1:" "$(grep -m1 -o 'checksum [0-9a-f]*' "$2")" \
        "$(grep -m1 -o 'iteration [0-9.]* ms' "$2")" "$(((end - start) / 1000000))e-3"
}
run "without usbyte" "$out/base.out" ""
USBYTE_REPORT="$out/report-%r.json" run "with usbyte" "$out/lib.out" "$preload"

if ! python3 tests/integration/trainers/check_report.py checksums --world "$RANKS" "$out/base.out" "$out/lib.out" \
    >"$out/check.txt"; then
    grep -v '^info' "$out/check.txt"
    echo "demo: the checksums differ"
    exit 1
fi
echo "== checksums equal on every rank, with and without usbyte"
grep -E '^\[rank 0\] usbyte\[0\]: communicator' "$out/lib.out" || true
[ -f "$out/report-0.json" ] || { echo "demo: no report from rank 0"; ls "$out"; exit 1; }
echo "== report of rank 0 ($RANKS reports written)"
measured=$(grep -m1 -o 'iteration [0-9.]* ms' "$out/base.out" | awk '{print $2}')
python3 tests/integration/trainers/check_report.py summary --measured-ms "$measured" "$out/report-0.json"
