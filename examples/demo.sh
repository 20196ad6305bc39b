#!/usr/bin/env bash
# make demo: a Horovod-shaped trainer with fusion off (HOROVOD_FUSION_THRESHOLD=0: one allreduce per
# gradient, as usbyte asks Horovod users to run) on 4 emulated ranks, VGG-16's profile, over an
# emulated latency-bound link (1 ms per ring step, as on 64+ ranks), first without and then with
# libusbyte.so in its default schedule mode.  Prints both checksums (they must be equal), both
# measured iteration times (the trainer's mean over its last 10 iterations), the measured speedup next to the predicted one, and the report's
# summary.  Times are the profile's x TIME_SCALE and sizes x BYTES_SCALE.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
SAN=${SAN:-}
RANKS=${RANKS:-4}
PROFILE=${PROFILE:-data/profiles/vgg16-v100-b64-barrier.json}
TIME_SCALE=${TIME_SCALE:-0.05}
BYTES_SCALE=${BYTES_SCALE:-0.002}
ITERS=${ITERS:-30}
export USBYTE_EMU_ALPHA_US=${USBYTE_EMU_ALPHA_US:-1000}
export USBYTE_EMU_GBPS=${USBYTE_EMU_GBPS:-10}
export USBYTE_LOG=${USBYTE_LOG:-info}
TRAINER=horovod_like

for f in "$BUILD/emu/emu-run" "$BUILD/trainers/$TRAINER" "$BUILD/libusbyte.so"; do
    [ -e "$f" ] || { echo "demo: $f is missing (make all)" >&2; exit 1; }
done
preload="$PWD/$BUILD/libusbyte.so"
[[ "$SAN" == *address* ]] && preload="$(gcc -print-file-name=libasan.so) $preload"

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
args=(--profile "$PROFILE" --iters "$ITERS" --time-scale "$TIME_SCALE" --bytes-scale "$BYTES_SCALE" --fusion-threshold-mb 0)
echo "== Horovod-like trainer (fusion off), $RANKS emulated ranks, $(basename "$PROFILE"), times x$TIME_SCALE, bytes x$BYTES_SCALE"
echo "   emulated link: alpha ${USBYTE_EMU_ALPHA_US} us per ring step, ${USBYTE_EMU_GBPS} GB/s (latency-bound)"

run() {   # run LABEL OUTFILE PRELOAD
    local start end
    start=$(date +%s%N)
    if ! LD_PRELOAD="$3" "$BUILD/emu/emu-run" -n "$RANKS" --timeout 120 -- "$BUILD/trainers/$TRAINER" "${args[@]}" \
        >"$2" 2>&1; then
        echo "demo: the run $1 failed:" >&2
        tail -40 "$2" >&2
        exit 1
    fi
    end=$(date +%s%N)
    printf '== %-20s %s, %s (%.1f s for %s iterations)\n' "$1:" "$(grep -m1 -o 'checksum [0-9a-f]*' "$2")" \
        "$(grep -m1 -oE '^\[rank 0\] last-iterations [0-9.]+ ms' "$2" | sed 's/.*last-iterations/last iterations/')" "$(((end - start) / 1000000))e-3" "$ITERS"
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
echo "   (each the trainer's mean over its last 10 of $ITERS iterations, after usbyte's warm-up and switch)"
grep -E '^\[rank 0\] usbyte\[0\]: communicator' "$out/lib.out" || true
[ -f "$out/report-0.json" ] || { echo "demo: no report from rank 0"; ls "$out"; exit 1; }
echo "== report of rank 0 ($RANKS reports written)"
measured=$(grep -m1 -oE '^\[rank 0\] last-iterations [0-9.]+ ms' "$out/base.out" | awk '{print $4}')
python3 tests/integration/trainers/check_report.py summary --measured-ms "$measured" "$out/report-0.json"
