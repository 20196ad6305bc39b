#!/usr/bin/env bash
# usbyte-run as the outermost command of the emulator's launcher (as of torchrun): the ranks
# inherit LD_PRELOAD and the USBYTE_* variables from its options, each writes its report into
# --report DIR under this run's own names, the job's results equal a run without usbyte, and at
# the end the summary is printed and DIR/usbyte-report.html written.  Also: the exit status is the
# command's; the user's LD_PRELOAD entries are kept (a sanitizer runtime first); --mode off writes
# no report and says so; a USBYTE_REPORT of the user's is honoured; every value it sets is checked
# (a bad one, a missing --, a command that does not exist: one line, the command not run); a
# libusbyte.so the loader cannot load is named with what it misses, before anything runs.
source "$(dirname "$0")/trainers/observe_lib.sh"
RUN=$BUILD/usbyte-run
[ -x "$RUN" ] || { echo "missing $RUN (make)"; exit 1; }
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ARGS=(--profile "$PROFILES/resnet50-v100-b64-barrier.json" --iters 12 --time-scale 0.2 --bytes-scale 0.01)
LIBPATH=$(readlink -f "$LIB")
# Under ASan its runtime must be preloaded first: usbyte-run has to keep it there.
pre=""
[ -n "$SAN" ] && [[ "$SAN" == *address* ]] && pre=$(gcc -print-file-name=libasan.so)
# urun ARGS...: usbyte-run with the sanitizer runtime (if any) already in LD_PRELOAD.
urun() { LD_PRELOAD="$pre${LD_PRELOAD:+${pre:+ }$LD_PRELOAD}" "$RUN" "$@"; }

run ddp "$WORK/base.out" 4 no -- ddp_like "${ARGS[@]}"
rc=0
urun --report "$WORK/r" --policy mgwfbp --log info -- \
    "$EMU_RUN" -n 4 --timeout 60 -- "$TRAINERS/ddp_like" "${ARGS[@]}" > "$WORK/lib.out" 2> "$WORK/lib.err" || rc=$?
[ $rc -eq 0 ] || { fail "usbyte-run: exit $rc"; sed 's/^/    | /' "$WORK/lib.err" | tail -30; }
$CHECK checksums --world 4 "$WORK/base.out" "$WORK/lib.out" || fail "results differ with usbyte-run"
grep -q "^usbyte-run: LD_PRELOAD=${pre:+$pre }$LIBPATH;" "$WORK/lib.err" ||
    fail "LD_PRELOAD not as expected: $(grep '^usbyte-run:' "$WORK/lib.err" | head -1)"
mapfile -t R < <(ls "$WORK"/r/usbyte-report-*-[0-9].json 2> /dev/null)
[ ${#R[@]} -eq 4 ] || fail "want 4 reports in $WORK/r, found: $(ls "$WORK/r")"
for f in "${R[@]}"; do
    jq -e '.config.USBYTE_POLICY == "mgwfbp" and .config.sources.USBYTE_POLICY == "env" and .config.USBYTE_LOG == "info"
           and .comms[0].plan.policy == "mgwfbp"' "$f" > /dev/null || fail "$f: the options did not reach the rank"
done
grep -q "^usbyte: 4 of 4 rank reports, all agree" "$WORK/lib.err" || fail "no summary: $(tail -5 "$WORK/lib.err")"
grep -q "^communicator 0 (4 ranks, " "$WORK/lib.err" || fail "summary without the communicator"
[ -s "$WORK/r/usbyte-report.html" ] && [ -s "$WORK/r/usbyte-trace.json" ] || fail "no page in $WORK/r"
# The ranks' log lines went to the job's stderr, the summary is the reports' (its numbers).
want=$(jq -r '.comms[0].measured_iteration * 1000 | . * 1000 | round / 1000 | tostring' "${R[0]}")
grep -q "measured iteration $(printf '%.3f' "$want") ms" "$WORK/lib.err" || fail "summary's iteration is not $want ms"

# A second run into the same directory: its own files, the earlier job's left alone.
urun --report "$WORK/r" -- "$EMU_RUN" -n 2 --timeout 60 -- "$TRAINERS/ddp_like" "${ARGS[@]}" \
    > /dev/null 2> "$WORK/second.err" || fail "second run: exit $?"
grep -q "^usbyte: 2 of 2 rank reports" "$WORK/second.err" || fail "second run mixed with the first: $(grep usbyte: "$WORK/second.err")"

# The command's exit status, and no report when there was no NCCL call.
rc=0
urun --report "$WORK/x" -- sh -c 'exit 7' 2> "$WORK/exit.err" || rc=$?
[ $rc -eq 7 ] || fail "exit status $rc, want the command's 7"
grep -q "no usbyte report" "$WORK/exit.err" || fail "does not say that no report was written"
rc=0
urun --mode off --report "$WORK/off" -- "$EMU_RUN" -n 2 --timeout 60 -- "$TRAINERS/ddp_like" "${ARGS[@]}" \
    > /dev/null 2> "$WORK/off.err" || rc=$?
[ $rc -eq 0 ] || fail "--mode off: exit $rc"
grep -q "no usbyte report .*USBYTE_MODE=off" "$WORK/off.err" || fail "--mode off: $(tail -2 "$WORK/off.err")"
# Without --mode the message names the runtime's default.
(unset USBYTE_MODE; urun --report "$WORK/x" -- true 2> "$WORK/default.err") || true
grep -q "USBYTE_MODE=schedule)" "$WORK/default.err" || fail "the default mode is misstated: $(cat "$WORK/default.err")"

# The closing line says the real cause: a command that failed or was killed (its status kept).
rc=0
urun --report "$WORK/x" -- sh -c 'kill -9 $$' 2> "$WORK/killed.err" || rc=$?
[ $rc -eq 137 ] || fail "killed command: exit status $rc, want 137"
grep -q "no usbyte report .*: the command was killed by signal 9" "$WORK/killed.err" ||
    fail "killed command: $(tail -1 "$WORK/killed.err")"
grep -q "the command failed (exit status 7)" "$WORK/exit.err" || fail "failed command: $(tail -1 "$WORK/exit.err")"
grep -q "no NCCL call" "$WORK/exit.err" && fail "a failed command blamed on no NCCL call: $(tail -1 "$WORK/exit.err")"

# Report directories with a space, a % or a glob character: the reports and the page are found.
for d in "dir with space" "pct%rdir" "star*[x]"; do
    rc=0
    urun --report "$WORK/$d" -- "$EMU_RUN" -n 2 --timeout 60 -- "$TRAINERS/ddp_like" "${ARGS[@]}" \
        > /dev/null 2> "$WORK/odd.err" || rc=$?
    [ $rc -eq 0 ] || fail "--report '$d': exit $rc"
    n=$(find "$WORK/$d" -maxdepth 1 -name 'usbyte-report-*.json' | wc -l)
    [ "$n" -eq 2 ] || fail "--report '$d': $n reports there, want 2: $(ls "$WORK" | tr '\n' ' ')"
    [ -s "$WORK/$d/usbyte-report.html" ] || fail "--report '$d': no page: $(tail -2 "$WORK/odd.err")"
    grep -q "^usbyte: 2 of 2 rank reports" "$WORK/odd.err" || fail "--report '$d': no summary: $(tail -2 "$WORK/odd.err")"
done

# The user's LD_PRELOAD entries stay, after ours; ours is not added twice.
out=$(LD_PRELOAD="/lib/nonexistent-a.so:$LIBPATH" urun --report "$WORK/x" -- sh -c 'printf %s "$LD_PRELOAD"' 2> /dev/null)
[ "$out" = "${pre:+$pre }$LIBPATH /lib/nonexistent-a.so" ] || fail "LD_PRELOAD became '$out'"
# A USBYTE_REPORT of the user's is kept when --report is not given.
USBYTE_REPORT="$WORK/own/rep-%r.json" urun -- "$EMU_RUN" -n 2 --timeout 60 -- "$TRAINERS/ddp_like" "${ARGS[@]}" \
    > /dev/null 2> "$WORK/own.err" || fail "own USBYTE_REPORT: exit $?"
[ -f "$WORK/own/rep-0.json" ] && [ -f "$WORK/own/rep-1.json" ] && [ -s "$WORK/own/usbyte-report.html" ] ||
    fail "own USBYTE_REPORT: $(ls "$WORK/own" 2>&1)"

# Bad input: one line saying what is wrong, the command not run.
# bad STATUS 'REGEX' ARGS...: usbyte-run ARGS exits STATUS with one line matching REGEX.  (Not
# under a sanitizer's runtime: nothing is preloaded on these paths, and bash itself would report
# its own allocations at exit.)
bad() {
    local want=$1 re=$2 rc=0
    shift 2
    rm -f "$WORK/ran"
    "$RUN" "$@" > /dev/null 2> "$WORK/bad.err" || rc=$?
    [ $rc -eq "$want" ] || fail "usbyte-run $*: exit $rc, want $want: $(cat "$WORK/bad.err")"
    [ "$(wc -l < "$WORK/bad.err")" -eq 1 ] || fail "usbyte-run $*: not one line: $(cat "$WORK/bad.err")"
    grep -Eq -- "$re" "$WORK/bad.err" || fail "usbyte-run $*: '$(cat "$WORK/bad.err")' does not match '$re'"
    [ ! -e "$WORK/ran" ] || fail "usbyte-run $*: the command ran"
}
MARK=(-- touch "$WORK/ran")
bad 2 '^usbyte-run: --frobnicate: unknown option' --frobnicate "${MARK[@]}"
bad 2 '^usbyte-run: --mode: needs a value' --mode
bad 2 '^usbyte-run: --mode bogus: must be one of schedule, observe, off$' --mode bogus "${MARK[@]}"
bad 2 '^usbyte-run: --policy bogus: must be one of wfbp, .*best' --policy bogus "${MARK[@]}"
bad 2 '^usbyte-run: --log loud: must be one of error, warn, info, debug$' --log loud "${MARK[@]}"
bad 2 '^usbyte-run: --completion soon: must be one of stream, call$' --completion soon "${MARK[@]}"
bad 2 "^usbyte-run: touch: the command must follow -- \(usbyte-run \[OPTIONS\] -- touch \.\.\.\)$" touch "$WORK/ran"
bad 127 '^usbyte-run: /nonexistent/train.py: no such file$' -- /nonexistent/train.py
bad 127 '^usbyte-run: no-such-command-here: command not found$' -- no-such-command-here
bad 126 '^usbyte-run: /etc/passwd: not an executable program \(no execute permission\)$' -- /etc/passwd
bad 126 '^usbyte-run: /etc: not an executable program \(a directory\)$' -- /etc
# A report directory that cannot be written is refused before the job (a read-only file system
# here: permissions alone do not stop root).
bad 2 '^usbyte-run: /proc: the report directory is not writable; the command was not run$' --report /proc "${MARK[@]}"
if [ "$(id -u)" != 0 ]; then
    mkdir -p "$WORK/ro" && chmod 555 "$WORK/ro"
    bad 2 "^usbyte-run: $WORK/ro: the report directory is not writable" --report "$WORK/ro" "${MARK[@]}"
fi
# Every policy the planner lists is accepted.
for p in $("$BUILD/usbyte-report" --list-policies); do
    urun --policy "$p" --report "$WORK/x" -- true 2> /dev/null || fail "--policy $p refused"
done
# --help states the runtime's real default.
"$RUN" --help | grep -q 'USBYTE_MODE: schedule (default' || fail "--help: $("$RUN" --help | grep mode)"
grep -q '"schedule", "off | observe' "$ROOT/include/usbyte/config.h" || fail "the runtime's default mode is not schedule"

# A library the loader cannot load (a missing dependency, as libjansson.so.4 on a node without
# jansson): one line naming what is missing, the command not run.
mkdir -p "$WORK/broken"
printf 'int missing_dep(void) { return 1; }\n' > "$WORK/dep.c"
printf 'int missing_dep(void);\nint usbyte_stand_in(void) { return missing_dep(); }\n' > "$WORK/lib.c"
cc -shared -fPIC -Wl,-soname,libusbyte-test-dep.so.4 -o "$WORK/broken/libusbyte-test-dep.so.4" "$WORK/dep.c"
cc -shared -fPIC -o "$WORK/broken/libusbyte.so" "$WORK/lib.c" "$WORK/broken/libusbyte-test-dep.so.4"
rm "$WORK/broken/libusbyte-test-dep.so.4"
cp "$RUN" "$WORK/broken/usbyte-run"
RUN_SAVED=$RUN
RUN=$WORK/broken/usbyte-run
bad 2 "^usbyte-run: $WORK/broken/libusbyte.so cannot be loaded: libusbyte-test-dep.so.4 not found \(install it on every node" \
    --report "$WORK/x" "${MARK[@]}"
# A truncated library: the loader's probe dies (a bus error) without a word; exit 2, the command
# not run.
mkdir -p "$WORK/trunc"
head -c 65536 "$LIBPATH" > "$WORK/trunc/libusbyte.so"
cp "$RUN_SAVED" "$WORK/trunc/usbyte-run"
RUN=$WORK/trunc/usbyte-run
bad 2 "^usbyte-run: $WORK/trunc/libusbyte.so cannot be loaded: .*(exited with status|error).* \(rebuild or reinstall it\); the command was not run$" \
    --report "$WORK/x" "${MARK[@]}"
grep -q "install it on every node" "$WORK/bad.err" && fail "a damaged library: the advice is for a missing dependency: $(cat "$WORK/bad.err")"
RUN=$RUN_SAVED

[ $failures -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "tools_run: all checks passed"
