#!/usr/bin/env bash
# A program built against CUDA 12 (the emulator's libcudart.so.12 stand-in: references
# cudaEventRecord@libcudart.so.12, as PyTorch's cu12 wheels make) meets usbyte's wrappers: with the
# library preloaded, the DDP-like trainer gives the same report as the same trainer built against
# CUDA 13 (observe: the same verdict, calls, bytes, upstream events and end events seen; schedule:
# scheduled, bit-identical results), and the real functions come from libcudart.so.12.
source "$(dirname "$0")/runtime_lib.sh"
E12=$BUILD/emu12
need "$BUILD/libusbyte.so" "$E12/emu-run" "$E12/trainers/ddp_like" "$BUILD/emu/emu-run" "$BUILD/trainers/ddp_like"
readelf -W --dyn-syms "$E12/trainers/ddp_like" >"$WORK/syms"
grep -q 'cudaEventRecord@libcudart.so.12' "$WORK/syms" || fail "the CUDA 12 trainer does not reference cudaEventRecord@libcudart.so.12"
export USBYTE_EMU_ALPHA_US=300 USBYTE_EMU_GBPS=1 USBYTE_WARMUP=2 USBYTE_LOG=debug
ARGS=(--profile data/profiles/resnet50-v100-b64-barrier.json --iters 12 --time-scale 0.05 --bytes-scale 0.002 \
      --bucket-cap-mb 1 --first-bucket-mb 0.25)
run() { # NAME EMU_DIR TRAINER_DIR PRELOAD MODE
    LD_PRELOAD="$4" USBYTE_MODE="$5" USBYTE_REPORT="$WORK/$1-%r.json" "$2/emu-run" -n 2 --timeout 60 -- "$3/ddp_like" \
        "${ARGS[@]}" >"$WORK/$1.out" 2>&1 || { sed 's/^/    | /' "$WORK/$1.out" | tail -30; fail "run $1 failed"; }
}
run base12 "$E12" "$E12/trainers" "" observe
run observe12 "$E12" "$E12/trainers" "$USBYTE_PRELOAD" observe
run observe13 "$BUILD/emu" "$BUILD/trainers" "$USBYTE_PRELOAD" observe
USBYTE_MIN_GAIN_PCT=0 run schedule12 "$E12" "$E12/trainers" "$USBYTE_PRELOAD" schedule
USBYTE_MIN_GAIN_PCT=0 run schedule13 "$BUILD/emu" "$BUILD/trainers" "$USBYTE_PRELOAD" schedule
# Staging: CUDA 13's batched copy where the runtime has it, one copy per segment where it has not
# (CUDA 12 before 12.8; 12.8's has another signature); both give the results without the library.
grep -q 'staging copies go one cudaMemcpyAsync per segment' "$WORK/schedule12.out" || fail "CUDA 12: not one copy per segment"
grep -q 'staging copies go as one cudaMemcpyBatchAsync each way' "$WORK/schedule13.out" || fail "CUDA 13: no batched copies"
[ "$(grep -o 'checksum [0-9a-f]\{16\}' "$WORK/schedule13.out" | sort)" = "$(grep -o 'checksum [0-9a-f]\{16\}' "$WORK/base12.out" | sort)" ] \
    || fail "schedule mode with batched staging copies changed the results"
sums() { grep -o 'checksum [0-9a-f]\{16\}' "$1" | sort; }
[ "$(sums "$WORK/base12.out")" = "$(sums "$WORK/observe12.out")" ] || fail "observe changed the CUDA 12 results"
[ "$(sums "$WORK/base12.out")" = "$(sums "$WORK/schedule12.out")" ] || fail "schedule mode changed the CUDA 12 results"
grep -q 'real CUDA runtime functions from .*libcudart.so.12 (version node libcudart.so.12)' "$WORK/observe12.out" \
    || fail "the real functions did not come from libcudart.so.12: $(grep -m1 'real CUDA runtime' "$WORK/observe12.out")"
python3 - "$WORK" <<'PY' || fail "the CUDA 12 and CUDA 13 reports differ"
import json, sys
w = sys.argv[1]
for r in (0, 1):
    a = json.load(open("%s/observe12-%d.json" % (w, r)))["comms"][0]
    b = json.load(open("%s/observe13-%d.json" % (w, r)))["comms"][0]
    s = json.load(open("%s/schedule12-%d.json" % (w, r)))["comms"][0]
    for k in ("state", "calls_per_iteration", "nccl_calls_per_iteration"):
        assert a[k] == b[k], (k, a[k], b[k])
    assert a["verdict"]["schedulable"] and a["verdict"] == b["verdict"], (a["verdict"], b["verdict"])
    assert [c["bytes"] for c in a["profile"]["calls"]] == [c["bytes"] for c in b["profile"]["calls"]]
    pa, pb = a["pattern"], b["pattern"]
    assert pa["ready"]["upstream_event_calls"] == pb["ready"]["upstream_event_calls"] > 0, (pa["ready"], pb["ready"])
    assert pa["consumers"]["end_events_on_nccl_stream"] and pb["consumers"]["end_events_on_nccl_stream"]
    assert s["state"] == "schedule" and s["schedule"]["iterations"] >= 2 and s["schedule"]["deviations"] == 0, s["state"]
print("info: CUDA 12 and 13 reports agree; CUDA 12 scheduled %d iterations" % s["schedule"]["iterations"])
PY
echo "runtime cuda12: ok"
