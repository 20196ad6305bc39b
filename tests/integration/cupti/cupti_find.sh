#!/usr/bin/env bash
# libcupti is found as the process has it (interpose/cupti_find.c), in layouts made of copies of
# the emulator's libraries in a temporary tree, none of them on the library search path but the
# CUDA runtime's and NCCL's directories (so the CUPTI under CUDA_HOME that ld.so.cache may know
# is what a name lookup would find): USBYTE_LOG=debug names the library used, and the report
# says CUPTI watched the warm-up.
#   wheel12: site-packages/nvidia/cuda_runtime/lib + nvidia/cuda_cupti/lib (PyTorch's CUDA 12 wheels)
#   wheel13: site-packages/nvidia/cu13/lib, both in one directory (CUDA 13 wheels)
#   toolkit: cuda/lib64 + cuda/extras/CUPTI/lib64 (toolkits, conda's older layout)
#   loaded:  the toolkit layout, with another copy already loaded in the process (LD_PRELOAD, as a
#            profiler loads its own): that one is used, not a second CUPTI
# Program: the DDP-shaped trainer, launched by a copy of emu-run in the runtime's directory (it
# puts its own directory first on the search path).
source "$(dirname "$0")/../runtime_lib.sh"
TRAINER=$BUILD/trainers/ddp_like
need "$BUILD/libusbyte.so" "$TRAINER" "$BUILD/emu/emu-run"
export USBYTE_EMU_ALPHA_US=50 USBYTE_EMU_GBPS=1 USBYTE_WARMUP=2 USBYTE_MODE=observe USBYTE_LOG=debug
ARGS=(--profile data/profiles/resnet50-v100-b64-barrier.json --iters 8 --time-scale 0.05 --bytes-scale 0.005)
N=2
EMU=$BUILD/emu
T=$WORK/tree

# layout NAME RUNTIME_DIR CUPTI_DIR: the runtime, NCCL (in a directory of its own, as the
# nvidia-nccl wheel has it) and CUPTI copied there.
layout() {
    local rt=$T/$1/$2 cu=$T/$1/$3
    mkdir -p "$rt" "$cu" "$T/$1/nccl"
    cp "$EMU/libcudart.so.13" "$EMU/emu-run" "$rt/"
    cp "$EMU/libnccl.so.2" "$EMU/libcuda.so.1" "$T/$1/nccl/"
    cp "$EMU/libcupti.so.13" "$cu/"
}

# check NAME RUNTIME_DIR EXPECTED_CUPTI HOW [PRELOAD...]
check() {
    local name=$1 rt=$T/$1/$2 want=$3 how=$4
    shift 4
    local preload="$USBYTE_PRELOAD${1:+ $*}"
    LD_LIBRARY_PATH="$rt:$T/$name/nccl" LD_PRELOAD="$preload" USBYTE_REPORT="$WORK/$name-%r.json" \
        "$rt/emu-run" -n $N --timeout 60 -- "$TRAINER" "${ARGS[@]}" >"$WORK/$name.out" 2>&1 \
        || { sed 's/^/    | /' "$WORK/$name.out" | tail -20; fail "$name: the run failed"; }
    local lines
    lines=$(grep -c "CUPTI: $want ($how" "$WORK/$name.out" || true)
    [ "$lines" -eq $N ] || {
        grep -E 'CUPTI|runtime functions' "$WORK/$name.out" | sed 's/^/    | /'
        fail "$name: not every rank used $want ($how ...)"
    }
    python3 - "$WORK/$name-0.json" "$WORK/$name-1.json" <<'PY' || fail "$name: CUPTI did not watch the warm-up"
import json, sys
for p in sys.argv[1:]:
    so = json.load(open(p))["comms"][0]["pattern"]["stream_ordered_work"]
    assert so["cupti"], (p, so)
PY
    echo "info: $name: $want"
}

layout wheel12 site-packages/nvidia/cuda_runtime/lib site-packages/nvidia/cuda_cupti/lib
check wheel12 site-packages/nvidia/cuda_runtime/lib \
    "$T/wheel12/site-packages/nvidia/cuda_runtime/lib/../../cuda_cupti/lib/libcupti.so.13" "next to the CUDA runtime"
layout wheel13 site-packages/nvidia/cu13/lib site-packages/nvidia/cu13/lib
check wheel13 site-packages/nvidia/cu13/lib "$T/wheel13/site-packages/nvidia/cu13/lib/libcupti.so.13" \
    "next to the CUDA runtime"
layout toolkit cuda/lib64 cuda/extras/CUPTI/lib64
check toolkit cuda/lib64 "$T/toolkit/cuda/lib64/../extras/CUPTI/lib64/libcupti.so.13" "next to the CUDA runtime"
layout loaded cuda/lib64 cuda/extras/CUPTI/lib64
mkdir -p "$T/profiler"
cp "$EMU/libcupti.so.13" "$T/profiler/"
check loaded cuda/lib64 "$T/profiler/libcupti.so.13" "already loaded" "$T/profiler/libcupti.so.13"
echo "cupti find: ok"
