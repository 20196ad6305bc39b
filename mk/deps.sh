#!/usr/bin/env bash
# Checks what the build needs and installs the missing Debian packages (as root).
set -euo pipefail
cuda=${CUDA_HOME:-/usr/local/cuda}
# chromium: the headless browser that tests usbyte-report's page (tests/integration/tools_report.sh)
# clang: the lock contract's analysis (tests/locks/thread_safety.sh)
pkgs=(libcmocka-dev uthash-dev libelf-dev libjansson-dev jq bc python3 chromium clang)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    echo "deps: installing ${missing[*]}"
    if [ "$(id -u)" != 0 ]; then
        echo "deps: missing packages ${missing[*]}; run 'sudo apt-get install ${missing[*]}'" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q "${missing[@]}" >/dev/null ||
        { apt-get update -q >/dev/null && apt-get install -y -q "${missing[@]}" >/dev/null; }
fi
for h in cuda_runtime_api.h cuda.h nccl.h cupti.h; do
    if [ ! -f "$cuda/include/$h" ]; then
        echo "deps: $cuda/include/$h not found: set CUDA_HOME to a CUDA 13 toolkit with NCCL and CUPTI headers" >&2
        exit 1
    fi
done
