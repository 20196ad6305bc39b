#!/usr/bin/env bash
# A peer dies during the warm-up, after the agreement was issued, and after the plan started; the
# survivor keeps issuing without host syncs, then aborts the communicator (from its training
# thread, or from a watchdog thread when the training thread is stuck in a call, like PyTorch's):
# ncclCommAbort returns within 1 s with the library as without it, and the training thread's
# stuck call returns within 1 s of the abort (usbyte's wait for the agreement at the switch to
# the plan is released by the abort; its bounded waits for timing events last USBYTE_HANG_S).
source "$(dirname "$0")/runtime_lib.sh"
PROG=$BUILD/tests/integration/runtime_abort
need "$BUILD/libusbyte.so" "$PROG" "$BUILD/emu/emu-run"
# USBYTE_MIN_GAIN_PCT=0: the plan runs whatever it is predicted to gain (the "planned" cases need it).
export USBYTE_EMU_ALPHA_US=200 USBYTE_EMU_GBPS=1 USBYTE_WARMUP=2 USBYTE_HANG_S=2 USBYTE_LOG=debug USBYTE_MIN_GAIN_PCT=0
unset USBYTE_MODE
# TSan reports a race and goes on; the programs leave with _exit, so make the first report fatal.
[[ "${SAN:-}" == *thread* ]] && export TSAN_OPTIONS="halt_on_error=1 ${TSAN_OPTIONS:-}"
# With 6 calls per iteration and USBYTE_WARMUP=2 the period locks in iteration 2, the warm-up is
# iterations 3-4, the agreement goes out at the first call of iteration 5 and the plan runs from
# iteration 6.
case_() { # NAME PRELOAD ARGS...
    local name=$1 pre=$2
    shift 2
    local start=$(date +%s%N) rc=0
    LD_PRELOAD="$pre" USBYTE_REPORT="$WORK/$name-%r.json" "$BUILD/emu/emu-run" -n 2 --timeout 60 -- "$PROG" "$@" \
        >"$WORK/$name.out" 2>&1 || rc=$?
    local ms=$((($(date +%s%N) - start) / 1000000))
    local line
    line=$(grep -o 'ncclCommAbort returned in .*' "$WORK/$name.out" || true)
    if [ -z "$line" ] || [ $rc -ne 0 ] || grep -q 'emu-run: timeout' "$WORK/$name.out"; then
        { grep -E 'ERROR|SUMMARY|^\[rank [0-9]\] +#[0-9]+ |freed by|allocated by' "$WORK/$name.out" || true; } | head -40 | sed 's/^/    | /'
        sed 's/^/    | /' "$WORK/$name.out" | grep -v 'redzone\|addressable\|Shadow\|Poisoned\|Container\|cookie\|ASan internal\|Freed heap\|Global init\|after return\|use after scope' | tail -20
        fail "$name: the survivor did not return from ncclCommAbort (exit $rc, $ms ms)"
    fi
    grep -q 'emu-run: rank 0' "$WORK/$name.out" && { sed 's/^/    | /' "$WORK/$name.out" | tail -20; fail "$name: the survivor failed"; }
    echo "info: $name: $line (whole run $ms ms)"
}
for lib in none usbyte; do
    pre=""
    [ $lib = usbyte ] && pre=$USBYTE_PRELOAD
    case_ $lib-warmup "$pre" --die-at 3 --after 2
    case_ $lib-warmup-thread "$pre" --die-at 3 --after 6 --abort-thread
    case_ $lib-agreement "$pre" --die-at 5 --after 3 --abort-thread
    case_ $lib-planned "$pre" --die-at 9 --after 3
    case_ $lib-planned-thread "$pre" --die-at 9 --after 3 --abort-thread
    # A single-threaded survivor that aborts when a call returns an error (no watchdog): usbyte's
    # waits on the host end with NCCL's asynchronous error and the call returns it.
    case_ $lib-warmup-errors "$pre" --die-at 3 --after 6 --check-errors
    case_ $lib-agreement-errors "$pre" --die-at 5 --after 3 --check-errors
    case_ $lib-planned-errors "$pre" --die-at 9 --after 3 --check-errors
    # The survivor goes on until a call fails: NCCL 2.28 refuses every operation on a
    # communicator whose peer is gone (its asynchronous error), so with the plan running a block
    # issue fails, and the call that triggered it must return the error (not abort the process).
    case_ $lib-planned-until-error "$pre" --die-at 9 --after 100000 --check-errors
    case_ $lib-planned-thread-until-error "$pre" --die-at 9 --after 100000 --abort-thread
    # Two communicators with deferred calls pending, aborted as PyTorch does with NCCL 2.22 and
    # later: ncclGroupStart, ncclCommAbort of each, ncclGroupEnd.
    case_ $lib-group-abort "$pre" --die-at 9 --after 3 --abort-thread --two-comms
done
# Both ranks alive, each one's watchdog aborts as its training thread begins an iteration of the
# plan, while that thread is inside ncclAllReduce issuing the plan's blocks (one per call with
# syncea, one merged block otherwise): the abort must not free or clear what the issue is using
# (under SAN=thread, TSan stops the run at the first data race).  With usbyte only: without it the
# training thread would be inside the real ncclAllReduce during the abort, which NCCL forbids.
# The switch is at iteration 6 unless a busy device delays the agreement by whole iterations
# (docs/runtime.md: it is issued again when some rank has no measured iteration yet); an abort
# that came before the switch tested nothing, so that case is run again 3 iterations later.
for at in 7 9; do
    case_ usbyte-mid-issue-$at "$USBYTE_PRELOAD" --die-at 1000000 --after 0 --abort-at $at
    running=""
    for try in $at $((at + 3)) $((at + 6)); do
        USBYTE_POLICY=syncea USBYTE_MIN_GAIN_PCT=-100 case_ usbyte-mid-issue-syncea-$at "$USBYTE_PRELOAD" \
            --die-at 1000000 --after 0 --abort-at $try
        if grep -q 'rank 0\] usbyte\[0\]: communicator 0: schedule mode from this call on' \
            "$WORK/usbyte-mid-issue-syncea-$at.out"; then
            running=yes
            break
        fi
        echo "info: mid-issue-syncea-$at: the abort at iteration $try came before the switch"
    done
    [ -n "$running" ] || fail "mid-issue-syncea-$at: the plan was not running when the watchdog aborted"
done
grep -q 'rank 0\] usbyte\[0\]: communicator 0: schedule mode from this call on' "$WORK/usbyte-planned.out" \
    || fail "the plan was not running on the survivor when the peer died"
# The agreement is issued without waiting for the warm-up's timing events; the call at the switch
# to the plan waits for it, behind the dead peer: NCCL's asynchronous error ends that wait and
# the call returns the error without reaching NCCL, or NCCL refused the agreement itself (the
# peer was found gone by then); either way the single-threaded survivor's call returns 6 and it
# aborts.
for name in usbyte-warmup-errors usbyte-agreement-errors; do
    grep -q 'rank 0: ncclAllReduce(.*) returned 6: aborting' "$WORK/$name.out" \
        || { grep 'usbyte\|rank 0:' "$WORK/$name.out" | tail -8 | sed 's/^/    | /';
             fail "$name: the survivor's call did not return the peer's error"; }
done
grep -Eq 'rank 0\] usbyte\[0\]: error: communicator 0: (call [0-9]* is not issued: NCCL reports an asynchronous error \(ncclRemoteError|NCCL refused the agreement.s collectives \(ncclRemoteError\))' \
    "$WORK/usbyte-agreement-errors.out" \
    || { grep 'usbyte\|rank 0:' "$WORK/usbyte-agreement-errors.out" | tail -8 | sed 's/^/    | /';
         fail "usbyte-agreement-errors: usbyte did not hand the peer's error to the call"; }
# With the plan running, the block issue's refusal: one line naming the communicator and the
# error, and the call that triggered the issue returns it.
for name in usbyte-planned-until-error usbyte-planned-thread-until-error; do
    grep -q 'rank 0\] usbyte\[0\]: error: communicator 0: schedule mode stopped: ncclAllReduce.* of block [0-9]* returned ncclRemoteError; this rank issues nothing more on it' \
        "$WORK/$name.out" && grep -q 'rank 0: ncclAllReduce(.*) returned 6' "$WORK/$name.out" \
        || { grep 'usbyte\|rank 0:' "$WORK/$name.out" | grep -v 'raw it' | tail -8 | sed 's/^/    | /';
             fail "$name: the block issue's error did not reach the call that triggered it"; }
done
# A peer's death at the very call where verification issues its own collective (injected by the
# emulator at the first allreduce of the measurements' 33 doubles, on every rank, since a real
# death cannot be timed to one call): no abort() of the process; one line names the collective and
# the error, the communicator passes through from then on, the call that triggered the issue
# returns the error to the application (which aborts the communicator), and the reports say so
# at once (the program leaves with _exit, before any report at exit).
USBYTE_VERIFY=1 USBYTE_EMU_FAIL_COUNT=33 case_ usbyte-verification-error "$USBYTE_PRELOAD" \
    --die-at 1000000 --after 0 --check-errors
for r in 0 1; do
    grep -q "rank $r\] usbyte\[$r\]: error: communicator 0: schedule mode stopped: ncclAllReduce of the verification's measurements failed (ncclRemoteError); this rank issues nothing more on it" \
        "$WORK/usbyte-verification-error.out" && grep -q "\[rank $r\] rank 0: ncclAllReduce(.*) returned 6" "$WORK/usbyte-verification-error.out" \
        || { grep 'usbyte\|rank [01]:' "$WORK/usbyte-verification-error.out" | tail -8 | sed 's/^/    | /';
             fail "usbyte-verification-error: rank $r: the verification's refused collective did not reach the call"; }
    jq -e '.comms[0] | .state == "pass-through" and (.state_reason | contains("verification'"'"'s measurements failed (ncclRemoteError)"))' \
        "$WORK/usbyte-verification-error-$r.json" >/dev/null \
        || fail "usbyte-verification-error: rank $r's report: $(jq -c '.comms[0] | [.state, .state_reason]' "$WORK/usbyte-verification-error-$r.json")"
done
echo "runtime abort: ok"
