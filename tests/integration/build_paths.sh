#!/usr/bin/env bash
# Where the build takes its headers and libraries from.  nccl.h (mk/find-nccl.sh, used by the
# Makefile): NCCL_HOME first, then CUDA_HOME, then the nvidia-nccl wheel of python3, then
# /usr/include; the Makefile compiles with the chosen include folder, says once which it used, and
# stops with one line naming every place it looked at when none has nccl.h.  DEPS_PREFIX=DIR adds
# DIR/include and DIR/lib (jansson, libelf, uthash installed without root).  Fake trees stand in
# for the real ones.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
unset MAKEFLAGS MFLAGS MAKELEVEL USBYTE_NCCL_FOUND NCCL_HOME

# tree DIR [LIBSUB]: DIR/include/nccl.h (and DIR/LIBSUB/libnccl.so.2).
tree() {
    mkdir -p "$1/include" && echo "/* fake */" > "$1/include/nccl.h"
    [ -z "${2:-}" ] || { mkdir -p "$1/$2" && : > "$1/$2/libnccl.so.2"; }
}
tree "$WORK/nccl" lib
tree "$WORK/cuda" lib64
mkdir -p "$WORK/bare/include"                       # a CUDA_HOME without nccl.h
tree "$WORK/site/nvidia/nccl" lib                   # the wheel's layout under site-packages
mkdir -p "$WORK/nosite"
# Where this machine's python3 finds no wheel unless PYTHONPATH names the fake one (and
# /usr/include has no nccl.h): otherwise the last two cases cannot be told apart here.
if PYTHONPATH=$WORK/nosite python3 -c 'import importlib.util as u; exit(0 if u.find_spec("nvidia.nccl") else 1)' 2>/dev/null ||
    [ -f /usr/include/nccl.h ]; then
    echo "info: this machine has a system-wide NCCL (a wheel or /usr/include/nccl.h): the 'none found' case is not checked"
    nowhere=no
else
    nowhere=yes
fi

# expect WANT ENV...: mk/find-nccl.sh under ENV prints WANT.
expect() {
    local want=$1
    shift
    local got
    got=$(env "$@" mk/find-nccl.sh)
    [ "$got" = "$want" ] || fail "$*: got '$got', expected '$want'"
}
expect "$WORK/nccl/include $WORK/nccl/lib NCCL_HOME" NCCL_HOME="$WORK/nccl" CUDA_HOME="$WORK/cuda"
expect "$WORK/cuda/include $WORK/cuda/lib64 CUDA_HOME" NCCL_HOME= CUDA_HOME="$WORK/cuda"
expect "$WORK/site/nvidia/nccl/include $WORK/site/nvidia/nccl/lib the nvidia-nccl wheel of python3" \
    NCCL_HOME= CUDA_HOME="$WORK/bare" PYTHONPATH="$WORK/site"
# NCCL_HOME without the header falls through, and says so if nothing else has it.
expect "$WORK/cuda/include $WORK/cuda/lib64 CUDA_HOME" NCCL_HOME="$WORK/bare" CUDA_HOME="$WORK/cuda"
if [ $nowhere = yes ]; then
    got=$(env NCCL_HOME="$WORK/bare" CUDA_HOME="$WORK/bare" PYTHONPATH="$WORK/nosite" mk/find-nccl.sh)
    case "$got" in
    "- - NCCL_HOME=$WORK/bare has no include/nccl.h; CUDA_HOME=$WORK/bare has no include/nccl.h; python3 has no nvidia-nccl wheel"*"/usr/include has no nccl.h") ;;
    *) fail "nothing found: '$got'" ;;
    esac
fi

# The Makefile compiles with the chosen folder, first on the include path, and says so once.
M=(make --no-print-directory -C "$ROOT" BUILD="$WORK/build")
"${M[@]}" -n NCCL_HOME="$WORK/nccl" "$WORK/build/obj/partition/plan.o" > "$WORK/n.out" 2>&1 || fail "make -n: $(tail -2 "$WORK/n.out")"
[ "$(grep -c '^nccl: ' "$WORK/n.out")" -eq 1 ] || fail "not one 'nccl:' line: $(grep '^nccl' "$WORK/n.out")"
grep -q "^nccl: nccl.h from NCCL_HOME ($WORK/nccl/include), libnccl.so.2 in $WORK/nccl/lib" "$WORK/n.out" ||
    fail "make did not say where nccl.h came from: $(head -2 "$WORK/n.out")"
grep -q -- "-Iinclude -I$WORK/nccl/include -I" "$WORK/n.out" || fail "NCCL_HOME's include is not first: $(grep -m1 ' -c ' "$WORK/n.out")"
if [ $nowhere = yes ]; then
    "${M[@]}" NCCL_HOME= CUDA_HOME="$WORK/bare" PYTHONPATH="$WORK/nosite" "$WORK/build/obj/partition/plan.o" > "$WORK/none.out" 2>&1 &&
        fail "make built without any nccl.h"
    grep -q "^nccl.h not found: NCCL_HOME is not set; CUDA_HOME=$WORK/bare has no include/nccl.h; .*set NCCL_HOME" "$WORK/none.out" ||
        fail "no clear error without nccl.h: $(cat "$WORK/none.out")"
fi

# DEPS_PREFIX: its include folder for the compiler, its lib folder for the linker.
"${M[@]}" -n DEPS_PREFIX="$WORK/deps" "$WORK/build/obj/partition/plan.o" "$WORK/build/usbyte-sim" > "$WORK/deps.out" 2>&1 ||
    fail "make -n DEPS_PREFIX: $(tail -2 "$WORK/deps.out")"
grep -q -- " -I$WORK/deps/include .*-c partition/plan.c" "$WORK/deps.out" || fail "DEPS_PREFIX: no -I$WORK/deps/include: $(grep -m1 ' -c ' "$WORK/deps.out")"
grep -q -- "-L$WORK/deps/lib -Wl,-rpath-link,$WORK/deps/lib .*-o $WORK/build/usbyte-sim" "$WORK/deps.out" ||
    fail "DEPS_PREFIX: no -L$WORK/deps/lib: $(grep -m1 'usbyte-sim ' "$WORK/deps.out")"

[ $failures -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "build_paths: all checks passed"
