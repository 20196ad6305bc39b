#!/usr/bin/env bash
# The emulated libnccl.so.2 has the real export shape: soname libnccl.so.2, every ncclXxx a
# WEAK function at the same address as its GLOBAL pncclXxx, no symbol versions; it imports no
# public CUDA runtime/driver function.
set -uo pipefail
cd "$(dirname "$0")/../../.."
B=${BUILD:-build}
lib=$B/emu/libnccl.so.2
fail() { echo "FAIL: $*"; exit 1; }
readelf -d "$lib" | grep -q 'SONAME.*\[libnccl.so.2\]' || fail "soname"
[ "$(readlink "$B/emu/libnccl.so")" = libnccl.so.2 ] || fail "libnccl.so symlink"
syms=$(readelf --dyn-syms -W "$lib" | awk '$4 == "FUNC" && $7 != "UND" {print $2, $5, $8}')
grep -q '@' <<<"$syms" && fail "versioned symbols: $(grep '@' <<<"$syms")"
n=0
for f in GetVersion GetUniqueId CommInitRank CommInitRankConfig CommInitAll CommSplit CommDestroy CommFinalize \
         CommAbort CommCount CommUserRank CommCuDevice CommGetAsyncError GetErrorString GetLastError AllReduce \
         Broadcast Bcast Reduce AllGather ReduceScatter Send Recv GroupStart GroupEnd GroupSimulateEnd MemAlloc MemFree RedOpCreatePreMulSum RedOpDestroy; do
    weak=$(awk -v s="nccl$f" '$3 == s && $2 == "WEAK" {print $1}' <<<"$syms")
    strong=$(awk -v s="pnccl$f" '$3 == s && $2 == "GLOBAL" {print $1}' <<<"$syms")
    [ -n "$weak" ] || fail "nccl$f is not a WEAK export"
    [ -n "$strong" ] || fail "pnccl$f is not a GLOBAL export"
    [ "$weak" = "$strong" ] || fail "nccl$f ($weak) and pnccl$f ($strong) differ"
    n=$((n + 1))
done
# nothing else leaks out of the library
others=$(awk '$3 !~ /^p?nccl/ {print $3}' <<<"$syms" | grep -v '^_' || true)
[ -z "$others" ] || fail "unexpected exports: $others"
# like real NCCL (static runtime), it never calls the public CUDA API an interposer could see
cuda=$(readelf --dyn-syms -W "$lib" | awk '$7 == "UND" {print $8}' | grep -E '^cu(da)?[A-Z]' || true)
[ -z "$cuda" ] || fail "imports public CUDA functions: $cuda"
echo "ok: $n weak/strong pairs"
