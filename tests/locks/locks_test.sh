#!/usr/bin/env bash
# The lock contract's checks, tried on planted faults: they pass on the tree, and fail, naming
# the fault, on a copy of interpose/ where
#   - a function calls a UB_REQUIRES one without the lock (clang),
#   - a function takes the lock and returns without releasing it (clang),
#   - a real NCCL call is made with the lock held (clang: UB_NCCL excludes it),
#   - a function that takes the lock is called with it held (clang: UB_EXCLUDES),
#   - the capture table is read without its own mutex (clang: GUARDED_BY),
#   - the global lock is taken inside the capture table's mutex (clang: the order),
#   - a UB_REQUIRES function releases the lock meanwhile, undeclared (releasing.py).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$here/thread_safety.sh" > /dev/null || { echo "FAIL: the analysis fails on the tree"; exit 1; }
"$here/releasing.py" > /dev/null || { echo "FAIL: releasing.py fails on the tree"; exit 1; }
echo "ok: the tree passes"

for d in include mk order partition profiler; do ln -s "$root/$d" "$tmp/$d"; done
fresh() { rm -rf "$tmp/interpose"; cp -r "$root/interpose" "$tmp/interpose"; }
# expect_fail WHAT PATTERN CHECK FILE...: CHECK (on the copy) fails and says PATTERN.
expect_fail() {
    local what=$1 pattern=$2
    shift 2
    if "$@" > "$tmp/out" 2>&1; then
        echo "FAIL: the check passed with $what"; cat "$tmp/out"; exit 1
    fi
    grep -q -- "$pattern" "$tmp/out" || { echo "FAIL: $what not named (want /$pattern/):"; cat "$tmp/out"; exit 1; }
    echo "ok: $what fails: $(grep -- "$pattern" "$tmp/out" | head -1 | cut -c1-160)"
}
clang_check() { "$here/thread_safety.sh" --src "$tmp" "$@"; }

fresh
printf '\nvoid ub_planted(ncclComm_t h) { (void)ub_comm_get(h); }\n' >> "$tmp/interpose/tables.c"
expect_fail "a call of ub_comm_get without the lock" \
    "interpose/tables.c:[0-9]*:[0-9]*: error: calling function 'ub_comm_get' requires holding mutex 'ub_state_mutex'" \
    clang_check interpose/tables.c

fresh
printf '\nvoid ub_planted(ncclComm_t h) { ub_state_lock(); if (!ub_comm_get(h)) return; ub_state_unlock(); }\n' \
    >> "$tmp/interpose/lifecycle.c"
expect_fail "a return without the unlock" \
    "interpose/lifecycle.c:[0-9]*:[0-9]*: error: mutex 'ub_state_mutex' is not held on every path through here" \
    clang_check interpose/lifecycle.c

fresh
printf '\nvoid ub_planted(ncclComm_t h) { ub_state_lock(); (void)ub_comm_async_error(h); ub_state_unlock(); }\n' \
    >> "$tmp/interpose/lifecycle.c"
expect_fail "an NCCL query with the lock held" \
    "interpose/lifecycle.c:[0-9]*:[0-9]*: error: cannot call function 'ub_comm_async_error' while mutex 'ub_state_mutex' is held" \
    clang_check interpose/lifecycle.c
fresh
printf '\nvoid ub_planted(ncclComm_t h) { ub_state_lock(); UB_NCCL(ub_nccl.CommCount(h, &(int){0})); ub_state_unlock(); }\n' \
    >> "$tmp/interpose/tables.c"
expect_fail "a real NCCL call with the lock held" \
    "interpose/tables.c:[0-9]*:[0-9]*: error: cannot call function 'ub_nccl_unlocked' while mutex 'ub_state_mutex' is held" \
    clang_check interpose/tables.c

fresh
printf '\nvoid ub_planted(cudaStream_t s) UB_REQUIRES(ub_state_mutex);\nvoid ub_planted(cudaStream_t s) { ub_redirect_stream_work(s); }\n' \
    >> "$tmp/interpose/defer.c"
expect_fail "a call that takes the lock made with it held (a self-deadlock)" \
    "interpose/defer.c:[0-9]*:[0-9]*: error: cannot call function 'ub_redirect_stream_work' while mutex 'ub_state_mutex' is held" \
    clang_check interpose/defer.c

fresh
printf '\nint ub_planted(void) { return n_streams; }\n' >> "$tmp/interpose/capture.c"
expect_fail "the capture table read without its mutex" \
    "interpose/capture.c:[0-9]*:[0-9]*: error: reading variable 'n_streams' requires holding mutex 'capture_mutex'" \
    clang_check interpose/capture.c

fresh
sed -i 's/^#include "lock_contract.h"/&\n#include "tables.h"/' "$tmp/interpose/capture.c"
printf '\nvoid ub_planted(void) { ub_mutex_lock(&capture_mutex); ub_state_lock(); ub_state_unlock(); ub_mutex_unlock(&capture_mutex); }\n' \
    >> "$tmp/interpose/capture.c"
expect_fail "the global lock taken inside the capture mutex" \
    "interpose/capture.c:[0-9]*:[0-9]*: error: mutex 'ub_state_mutex' must be acquired before 'capture_mutex'" \
    clang_check interpose/capture.c

fresh
printf '\nvoid ub_planted(void) UB_REQUIRES(ub_state_mutex);\nvoid ub_planted(void) UB_REQUIRES(ub_state_mutex)\n{\n    ub_redirect_wait_comm(NULL);\n}\n' \
    >> "$tmp/interpose/redirect.c"
expect_fail "an undeclared release through a callee" \
    "interpose/redirect.c:[0-9]*: ub_planted releases the global lock meanwhile" \
    "$here/releasing.py" --src "$tmp"
fresh
sed -i 's/^\(void ub_sched_begin(.*)\) UB_REQUIRES(ub_state_mutex);/\1 UB_REQUIRES_UNLOCKS(ub_state_mutex);/' \
    "$tmp/interpose/defer.h"
grep -q '^void ub_sched_begin(.*UB_REQUIRES_UNLOCKS' "$tmp/interpose/defer.h" || { echo "FAIL: the fault was not planted"; exit 1; }
expect_fail "a release declared that never happens" \
    "interpose/defer.c:[0-9]*: ub_sched_begin never releases the global lock" \
    "$here/releasing.py" --src "$tmp"
echo "locks_test: ok"
