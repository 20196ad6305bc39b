#!/usr/bin/env bash
# The layer check's own test: it passes on the built objects and fails on a copy of them with a
# planted upward call (logging calling the life cycle), with a planted circle (order/), and on a
# copy of the sources where a second file sets a communicator's state, raises the reentrancy
# guard by hand or writes the verification's state.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BUILD=${BUILD:-build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
check() { "$here/layers.py" --obj "$tmp/obj" "$@"; }

copy_objs() {
    rm -rf "$tmp/obj"
    for d in interpose order partition profiler tools; do
        mkdir -p "$tmp/obj/$d"
        cp "$BUILD/obj/$d/"*.o "$tmp/obj/$d/"
    done
}
# plant OBJ SYMBOL: OBJ also calls SYMBOL, as if its source did.
plant() {
    printf 'void %s(void);\nvoid ub_planted_call(void) { %s(); }\n' "$2" "$2" > "$tmp/planted.c"
    cc -c -o "$tmp/planted.o" "$tmp/planted.c"
    ld -r -o "$tmp/merged.o" "$tmp/obj/$1" "$tmp/planted.o"
    mv "$tmp/merged.o" "$tmp/obj/$1"
}
expect_fail() {  # expect_fail WHAT PATTERN
    if check > "$tmp/out" 2>&1; then
        echo "FAIL: the check passed with $1"; cat "$tmp/out"; exit 1
    fi
    grep -q -- "$2" "$tmp/out" || { echo "FAIL: $1 not named (want /$2/):"; cat "$tmp/out"; exit 1; }
    echo "ok: $1 fails: $(grep -- "$2" "$tmp/out" | head -1 | cut -c1-160)"
}

copy_objs
check || { echo "FAIL: the check fails on the built objects"; exit 1; }
echo "ok: the built objects pass"

plant interpose/log.o ub_coll_before
expect_fail "log.c calling the life cycle" 'interpose/log.c (.*) uses interpose/lifecycle.c (.*), a higher tier: ub_coll_before'

copy_objs
plant order/alloc.o ub_policy_name
expect_fail "order/alloc.c calling the policy registry" 'circle of .*order/alloc.c -> order/policy.c (ub_policy_name)'
copy_objs
root=$(cd "$here/../.." && pwd)
mkdir -p "$tmp/src"
for d in order partition profiler tools; do ln -s "$root/$d" "$tmp/src/$d"; done
cp -r "$root/interpose" "$tmp/src/interpose"
printf 'static void planted(ub_comm *c) { c->state = UB_COMM_PASS_THROUGH; }\n' >> "$tmp/src/interpose/defer.c"
check() { "$here/layers.py" --obj "$tmp/obj" --src "$tmp/src"; }
expect_fail "defer.c setting a communicator's state" 'interpose/defer.c:[0-9]*: sets c->state'
cp "$root/interpose/defer.c" "$tmp/src/interpose/defer.c"
printf 'static void planted(void) { ub_inside++; }\n' >> "$tmp/src/interpose/exec.c"
expect_fail "exec.c raising the guard by hand" 'interpose/exec.c:[0-9]*: raises the reentrancy guard by hand'
cp "$root/interpose/exec.c" "$tmp/src/interpose/exec.c"
printf 'static void planted(ub_comm *c) { c->verify.kept = 0; }\n' >> "$tmp/src/interpose/defer.c"
expect_fail "defer.c writing the verification's state" "interpose/defer.c:[0-9]*: writes the verification's state"
cp "$root/interpose/defer.c" "$tmp/src/interpose/defer.c"
sed -i 's/^#include "log.h"$/&\n#include "lifecycle.h"/' "$tmp/src/interpose/log.c"
expect_fail "log.c including the life cycle's header" \
    'circle of [0-9]* files in the includes .*interpose/log.c:[0-9]* includes interpose/lifecycle.c'
echo "layers_test: ok"
