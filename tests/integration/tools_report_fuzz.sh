#!/usr/bin/env bash
# usbyte-report's fuzzing (tests/fuzz/fuzz_report.py) on a corpus of real reports: two DDP-like
# jobs of 4 ranks with different profiles (observe), the fused Horovod-like job of 2 ranks, and the
# unfused one of 4 in schedule mode (its recording).  200 cases of one fixed seed: mutated and
# mixed reports must give exit 0 or 1 with a valid page and trace, or exit 2 with one line; never
# a crash, a sanitizer's report (under make test SAN=...) or a timeout.
source "$(dirname "$0")/tools_report_lib.sh"

mkdir -p "$WORK/c1" "$WORK/c2" "$WORK/c3" "$WORK/c4"
USBYTE_REPORT="$WORK/c1/report-%r.json" run ddp-resnet "$WORK/c1.out" 4 yes -- ddp_like \
    --profile "$PROFILES/resnet50-v100-b64-barrier.json" --iters 12 --time-scale 0.2 --bytes-scale 0.01
USBYTE_REPORT="$WORK/c2/report-%r.json" run ddp-vgg "$WORK/c2.out" 4 yes -- ddp_like \
    --profile "$PROFILES/vgg16-v100-b64-barrier.json" --iters 12 --time-scale 0.05 --bytes-scale 0.002
USBYTE_REPORT="$WORK/c3/report-%r.json" run horovod "$WORK/c3.out" 2 yes -- horovod_like \
    --profile "$PROFILES/vgg16-v100-b64-barrier.json" --iters 12 --time-scale 0.05 --bytes-scale 0.002
USBYTE_MODE=schedule USBYTE_EMU_ALPHA_US=1000 USBYTE_EMU_GBPS=10 USBYTE_REPORT="$WORK/c4/report-%r.json" \
    run horovod-schedule "$WORK/c4.out" 4 yes -- horovod_like --profile "$PROFILES/vgg16-v100-b64-barrier.json" \
    --iters 24 --time-scale 0.05 --bytes-scale 0.002 --fusion-threshold-mb 0
python3 "$ROOT/tests/fuzz/fuzz_report.py" --report "$REPORT" --seed 1 --runs 200 \
    --corpus "$WORK/c1" --corpus "$WORK/c2" --corpus "$WORK/c3" --corpus "$WORK/c4" || fail "fuzz_report"

[ $failures -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "tools_report_fuzz: all checks passed"
