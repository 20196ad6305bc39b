#!/usr/bin/env bash
# Schedule mode on one hardware queue (CUDA_DEVICE_MAX_CONNECTIONS=1, as Megatron-style jobs
# run): every stream of a process shares one queue, so a device-side wait on work not yet
# submitted would hang the emulator as it hangs a GPU.  Runs the schedule-mode tests (per-call
# and merged plans, pending events, trainers, aborts, communicators) under it.
source "$(dirname "$0")/runtime_lib.sh"
export BUILD SAN CUDA_DEVICE_MAX_CONNECTIONS=1
failed=()
for t in runtime_sched runtime_pending schedule_trainers runtime_abort runtime_comms; do
    start=$SECONDS
    if tests/integration/$t.sh >"$WORK/$t.out" 2>&1; then
        echo "one queue: $t ok ($((SECONDS - start)) s)"
    else
        echo "one queue: $t FAILED ($((SECONDS - start)) s)"
        sed 's/^/    | /' "$WORK/$t.out" | tail -40
        failed+=("$t")
    fi
done
[ ${#failed[@]} -eq 0 ] || fail "under CUDA_DEVICE_MAX_CONNECTIONS=1: ${failed[*]}"
echo "runtime_one_queue ok"
