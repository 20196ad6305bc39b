#!/usr/bin/env bash
# The lock contract's check (interpose/lock_contract.h): clang's thread-safety analysis over
# every interpose/*.c, or over the files given.  Fails on any warning it reports, naming the file
# and line.  Usage: thread_safety.sh [--src DIR] [FILE.c...]  (DIR: the tree, default this one)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
if [ "${1:-}" = --src ]; then src=$2; shift 2; fi
command -v "${CLANG:=clang}" > /dev/null || { echo "thread_safety: $CLANG not found (make deps installs clang)" >&2; exit 1; }
found=${USBYTE_NCCL_FOUND:-$(CUDA_HOME=${CUDA_HOME:-/usr/local/cuda} "$src/mk/find-nccl.sh")}
nccl=${found%% *}
[ "$nccl" != - ] || { echo "thread_safety: nccl.h not found: ${found#* * }" >&2; exit 1; }
cuda=${CUDA_HOME:-/usr/local/cuda}
cd "$src"
if (($# == 0)); then set -- interpose/*.c; fi
# -Wthread-safety-beta adds the order of the mutexes (acquired_after).  Every other warning is
# the gcc build's business.
printf '%s\n' "$@" | xargs -P 2 -I{} "$CLANG" -std=c11 -fsyntax-only -D_GNU_SOURCE -Iinclude -I"$nccl" -I"$cuda/include" \
    -Wno-everything -Wthread-safety -Wthread-safety-beta -Werror {} 2> "${TMPDIR:-/tmp}/thread_safety.$$" || true
if [ -s "${TMPDIR:-/tmp}/thread_safety.$$" ]; then
    cat "${TMPDIR:-/tmp}/thread_safety.$$" >&2
    rm -f "${TMPDIR:-/tmp}/thread_safety.$$"
    echo "thread_safety: the lock contract is broken (interpose/lock_contract.h)" >&2
    exit 1
fi
rm -f "${TMPDIR:-/tmp}/thread_safety.$$"
echo "thread_safety: $# files, no finding"
