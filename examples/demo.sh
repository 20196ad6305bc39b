#!/usr/bin/env bash
# make demo: a Horovod-shaped trainer with fusion off (HOROVOD_FUSION_THRESHOLD=0: one allreduce per
# gradient, as usbyte asks Horovod users to run) on 4 emulated ranks with VGG-16's profile, on three
# emulated links (tests/bench/links.py): `10gbe` and `100gb-ib`, usbyte-sim's presets at these 4
# ranks scaled like the trainer's times, and `stress`, 1 ms per ring step, which no network is (the
# latency a ring of 64+ ranks pays, put on 4 ranks).  On each: a run without usbyte, then one with
# it in schedule mode through usbyte-run, which leaves the rank reports and usbyte-report's page in
# DEMO_DIR/LINK/.  Prints the checksums (equal with and without usbyte, or the demo fails), both
# measured iteration times (the trainer's mean over its last 10 iterations, after the verification's
# verdict), the measured speedup next to the predicted one, what the verification kept, the
# report's summary, what best gains over DDP's default and tuned buckets (usbyte-sim on the
# profile unscaled, and the headline of docs/bench-sim.md), and the pages to open.  Times are the profile's x TIME_SCALE and sizes x BYTES_SCALE.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
SAN=${SAN:-}
RANKS=${RANKS:-4}
PROFILE=${PROFILE:-data/profiles/vgg16-v100-b64-barrier.json}
TIME_SCALE=${TIME_SCALE:-0.05}
BYTES_SCALE=${BYTES_SCALE:-0.002}
# Enough iterations for the verification's first window (39 iterations from the switch, alternating
# the plan with pass-through) to decide, and 10 more after its verdict for the trainer's mean.
ITERS=${ITERS:-70}
LINKS=${LINKS:-10gbe 100gb-ib stress}
DEMO_DIR=${DEMO_DIR:-$BUILD/demo}
export USBYTE_LOG=${USBYTE_LOG:-warn}
TRAINER=horovod_like

for f in "$BUILD/emu/emu-run" "$BUILD/trainers/$TRAINER" "$BUILD/libusbyte.so" "$BUILD/usbyte-run" \
    "$BUILD/usbyte-report" "$BUILD/usbyte-sim"; do
    [ -e "$f" ] || { echo "demo: $f is missing (make all)" >&2; exit 1; }
done
sanitizer=""
[[ "$SAN" == *address* ]] && sanitizer=$(gcc -print-file-name=libasan.so)
# name alpha_us gbps, one line per link
link_table=$(python3 tests/bench/links.py --sim "$BUILD/usbyte-sim" --time-scale "$TIME_SCALE" \
    --bytes-scale "$BYTES_SCALE" $LINKS)

args=(--profile "$PROFILE" --iters "$ITERS" --time-scale "$TIME_SCALE" --bytes-scale "$BYTES_SCALE" --fusion-threshold-mb 0)
echo "== Horovod-like trainer (fusion off), $RANKS emulated ranks, $(basename "$PROFILE"), times x$TIME_SCALE, bytes x$BYTES_SCALE"

last_iter() { grep -m1 -oE '^\[rank 0\] last-iterations [0-9.]+' "$1" | awk '{print $4}'; }

mkdir -p "$DEMO_DIR"
pages=()
summary=()
while read -r link alpha gbps; do
    dir=$DEMO_DIR/$link
    rm -rf "$dir"
    mkdir -p "$dir"
    case $link in
    stress) what="stress test, no network is this slow: $alpha us per ring step, $gbps GB/s" ;;
    *) what="usbyte-sim's preset at $RANKS ranks, scaled: $alpha us per ring step, $gbps GB/s" ;;
    esac
    echo
    echo "== link $link ($what)"
    export USBYTE_EMU_ALPHA_US=$alpha USBYTE_EMU_GBPS=$gbps
    if ! LD_PRELOAD="$sanitizer" "$BUILD/emu/emu-run" -n "$RANKS" --timeout 300 -- "$BUILD/trainers/$TRAINER" \
        "${args[@]}" > "$dir/without-usbyte.out" 2>&1; then
        echo "demo: the run without usbyte failed:" >&2
        tail -40 "$dir/without-usbyte.out" >&2
        exit 1
    fi
    if ! LD_PRELOAD="$sanitizer" "$BUILD/usbyte-run" --mode schedule --report "$dir" -- \
        "$BUILD/emu/emu-run" -n "$RANKS" --timeout 300 -- "$BUILD/trainers/$TRAINER" "${args[@]}" \
        > "$dir/with-usbyte.out" 2>&1; then
        echo "demo: the run with usbyte failed:" >&2
        tail -40 "$dir/with-usbyte.out" >&2
        exit 1
    fi
    if ! python3 tests/integration/trainers/check_report.py checksums --world "$RANKS" "$dir/without-usbyte.out" \
        "$dir/with-usbyte.out" > "$dir/checksums.txt"; then
        grep -v '^info' "$dir/checksums.txt"
        echo "demo: the checksums differ ($dir)"
        exit 1
    fi
    report=$(ls "$dir"/usbyte-report-*-0.json 2> /dev/null | head -1)
    [ -n "$report" ] && [ -f "$dir/usbyte-report.html" ] || { echo "demo: no report or page in $dir"; ls "$dir"; exit 1; }
    base=$(last_iter "$dir/without-usbyte.out")
    with=$(last_iter "$dir/with-usbyte.out")
    read -r predicted state plan_policy blocks calls kept < <(jq -r '.comms[0]
        | ((.policies[] | select(.policy == "wfbp") | .iteration) / .plan.iteration) as $p
        | "\($p * 1000 | round / 1000) \(.state) \(.plan.policy) \(.plan.blocks | length) \(.calls_per_iteration) \(.verification.kept // "-")"' "$report")
    measured=$(awk -v a="$base" -v b="$with" 'BEGIN { printf "%.2f", a / b }')
    predicted=$(awk -v p="$predicted" 'BEGIN { printf "%.2f", p }')
    echo "   checksums equal on every rank, with and without usbyte"
    echo "   without usbyte $base ms per iteration, with usbyte $with ms: ${measured}x measured, ${predicted}x predicted"
    echo "   ($plan_policy plan: $blocks blocks for $calls allreduces; communicator state: $state)"
    sed -n '/^usbyte: [0-9]* of [0-9]* rank reports/,$p' "$dir/with-usbyte.out" | grep -v '^usbyte-run:' | sed 's/^/   /'
    pages+=("$dir/usbyte-report.html")
    summary+=("$(printf '%-9s %10s %10s %9sx %9sx  %-12s %s' "$link" "$base" "$with" "$measured" "$predicted" "$state" "$kept")")
done <<< "$link_table"

echo
echo "== summary (ms per iteration; the stress link is a stress test, not a network)"
printf '%-9s %10s %10s %10s %10s  %-12s %s\n' link without with measured predicted state "kept (verification)"
printf '%s\n' "${summary[@]}"
echo
# What a DDP user would compare with: DDP's default buckets and DDP at its best bucket_cap_mb, on
# the profile unscaled (the trainer's bytes x$BYTES_SCALE leave no cap of 1 MiB or more to tune),
# under the presets at these ranks; then the headline over every benchmark profile.
echo "== against DDP, default and tuned (usbyte-sim, $(basename "$PROFILE") unscaled, $RANKS ranks, the model's prediction)"
for net in $LINKS; do
    [ "$net" = stress ] && continue
    "$BUILD/usbyte-sim" "$PROFILE" --net "$net" --ranks "$RANKS" --json | jq -r -s --arg net "$net" '
        (map({key: .policy, value: .}) | from_entries) as $p
        | def pct($a): ($p[$a].iteration / $p.best.iteration - 1) * 1000 | round / 10;
          ($p["ddp-tuned"].params | capture("bucket_cap_mb=(?<c>[0-9.]+) first_bucket_mb=(?<f>[0-9.]+)")) as $t
        | "   \($net): best \($p.best.iteration * 1e6 | round / 1000) ms; DDP default buckets \($p.ddp.iteration * 1e6 | round / 1000) ms (best +\(pct("ddp"))%); DDP at bucket_cap_mb=\($t.c) (first bucket \($t.f) MiB) \($p["ddp-tuned"].iteration * 1e6 | round / 1000) ms (best +\(pct("ddp-tuned"))%)"'
done
if [ -f docs/bench-sim.md ]; then
    echo "   over every benchmark profile (docs/bench-sim.md's headline, made by make bench-sim):"
    sed -n 's/^- formula: /on the presets at 8-128 ranks: /p; s/^- curve: /on the measured curves of data\/net: /p' docs/bench-sim.md |
        while read -r line; do fold -s -w 96 <<< "$line" | sed 's/^/     /; 1s/^     /   - /'; done
fi
echo
echo "== the reports and the pages are in $DEMO_DIR; open:"
for p in "${pages[@]}"; do echo "   file://$(cd "$(dirname "$p")" && pwd)/$(basename "$p")"; done
