#!/usr/bin/env bash
# emu-run with plain programs: rank environment, LD_LIBRARY_PATH/LD_PRELOAD, prefixed output,
# fail-fast with the failing status, signals, timeout, argument errors, shm cleanup.
set -uo pipefail
cd "$(dirname "$0")/../../.."
B=${BUILD:-build}
run=$B/emu/emu-run
emu_dir=$(cd "$B/emu" && pwd -P)
fail() { echo "FAIL: $*"; printf '%s\n' "${out:-}"; exit 1; }

# environment, as torchrun sets it, plus the emulator's own (a sanitized emu-run would object to
# a preload coming before its runtime; the preload is only there to be passed on)
out=$(ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 LD_PRELOAD=libm.so.6 "$run" -n 3 -- sh -c \
    'echo "r=$RANK w=$WORLD_SIZE l=$LOCAL_RANK lw=$LOCAL_WORLD_SIZE launched=$USBYTE_EMU_LAUNCHED job=$USBYTE_EMU_JOB pre=$LD_PRELOAD lib=${LD_LIBRARY_PATH%%:*}"') || fail "env run failed"
for r in 0 1 2; do
    grep -q "^\[rank $r\] r=$r w=3 l=$r lw=3 launched=1 job=[0-9]*-[0-9]* pre=libm.so.6 lib=$emu_dir$" <<<"$out" || fail "rank $r environment"
done
[ "$(sed 's/.*job=\([^ ]*\).*/\1/' <<<"$out" | sort -u | wc -l)" -eq 1 ] || fail "USBYTE_EMU_JOB differs between ranks"

# stdout and stderr forwarded separately, line by line, a last line without newline included
out=$("$run" -n 2 -- sh -c 'echo out; echo err >&2; printf tail' 2>/dev/null) || fail "output run failed"
[ "$(grep -c '^\[rank [01]\] out$' <<<"$out")" -eq 2 ] && [ "$(grep -c '^\[rank [01]\] tail$' <<<"$out")" -eq 2 ] || fail "stdout"
! grep -q err <<<"$out" || fail "stderr went to stdout"
out=$("$run" -n 2 -- sh -c 'echo err >&2' 2>&1 >/dev/null)
[ "$(grep -c '^\[rank [01]\] err$' <<<"$out")" -eq 2 ] || fail "stderr"

# a failing rank stops the others at once and gives its status
start=$SECONDS
out=$("$run" -n 3 -- sh -c 'if [ "$RANK" = 1 ]; then exit 7; fi; exec sleep 60' 2>&1); rc=$?
[ $rc -eq 7 ] || fail "status $rc, want 7"
[ $((SECONDS - start)) -lt 10 ] || fail "the other ranks were not stopped"
grep -q '^emu-run: rank 1 exited with status 7$' <<<"$out" || fail "no failure line"
out=$("$run" -n 2 -- sh -c 'if [ "$RANK" = 0 ]; then kill -SEGV $$; fi; exec sleep 60' 2>&1); rc=$?
[ $rc -eq 139 ] || fail "status $rc, want 128+SIGSEGV"

# timeout: 124 and the timeout line
out=$("$run" -n 2 --timeout 1 -- sleep 60 2>&1); rc=$?
[ $rc -eq 124 ] || fail "timeout status $rc"
grep -q '^emu-run: timeout after 1 s$' <<<"$out" || fail "timeout line"

# SIGTERM to emu-run stops every rank and exits 128+15 (synchronised on the ranks' first line)
log=$(mktemp)
"$run" -n 2 -- sh -c 'echo "pid $$"; exec sleep 60' >"$log" 2>&1 &
launcher=$!
for _ in $(seq 1 500); do [ "$(grep -c '^\[rank .\] pid' "$log")" -eq 2 ] && break; sleep 0.01; done
[ "$(grep -c '^\[rank .\] pid' "$log")" -eq 2 ] || { out=$(cat "$log"); rm -f "$log"; fail "ranks did not start"; }
kill -TERM $launcher
wait $launcher; rc=$?
out=$(cat "$log"); rm -f "$log"
[ $rc -eq 143 ] || fail "SIGTERM: status $rc, want 143"
for pid in $(sed -n 's/^\[rank .\] pid //p' <<<"$out"); do
    ! kill -0 "$pid" 2>/dev/null || fail "rank process $pid survived"
done

# argument errors
for args in "-n 0 -- true" "-n x -- true" "-n 2" "--timeout -1 -n 2 -- true" "-n 2 true"; do
    # shellcheck disable=SC2086
    "$run" $args >/dev/null 2>&1; rc=$?
    [ $rc -eq 2 ] || fail "emu-run $args: status $rc, want 2"
done
out=$("$run" -n 1 -- /nonexistent/program 2>&1); rc=$?
[ $rc -eq 127 ] || fail "missing program: status $rc"

# the job's shared-memory leftovers are removed when the job ends
out=$("$run" -n 2 -- sh -c ': > "/dev/shm/usbyte-emu-$USBYTE_EMU_JOB-test$RANK"; echo "$USBYTE_EMU_JOB"; exit 1' 2>/dev/null)
job=$(head -1 <<<"$out" | sed 's/^\[rank .\] //')
[ -n "$job" ] || fail "no job printed"
! ls /dev/shm/usbyte-emu-"$job"-* >/dev/null 2>&1 || fail "segments of job $job left in /dev/shm"
echo ok
