#!/usr/bin/env bash
# usbyte-run as the outermost command of the emulator's launcher (as of torchrun): the ranks
# inherit LD_PRELOAD and the USBYTE_* variables from its options, each writes its report into
# --report DIR under this run's own names, the job's results equal a run without usbyte, and at
# the end the summary is printed and DIR/usbyte-report.html written.  Also: the exit status is the
# command's; the user's LD_PRELOAD entries are kept (a sanitizer runtime first); --mode off writes
# no report and says so; a USBYTE_REPORT of the user's is honoured; bad options exit 2.
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

# The user's LD_PRELOAD entries stay, after ours; ours is not added twice.
out=$(LD_PRELOAD="/lib/nonexistent-a.so:$LIBPATH" urun --report "$WORK/x" -- sh -c 'printf %s "$LD_PRELOAD"' 2> /dev/null)
[ "$out" = "${pre:+$pre }$LIBPATH /lib/nonexistent-a.so" ] || fail "LD_PRELOAD became '$out'"
# A USBYTE_REPORT of the user's is kept when --report is not given.
USBYTE_REPORT="$WORK/own/rep-%r.json" urun -- "$EMU_RUN" -n 2 --timeout 60 -- "$TRAINERS/ddp_like" "${ARGS[@]}" \
    > /dev/null 2> "$WORK/own.err" || fail "own USBYTE_REPORT: exit $?"
[ -f "$WORK/own/rep-0.json" ] && [ -f "$WORK/own/rep-1.json" ] && [ -s "$WORK/own/usbyte-report.html" ] ||
    fail "own USBYTE_REPORT: $(ls "$WORK/own" 2>&1)"

rc=0
"$RUN" --frobnicate -- true 2> "$WORK/bad.err" || rc=$?
[ $rc -eq 2 ] && grep -q -- "--frobnicate: unknown option" "$WORK/bad.err" || fail "bad option: exit $rc, $(cat "$WORK/bad.err")"
rc=0
"$RUN" --mode 2> /dev/null || rc=$?
[ $rc -eq 2 ] || fail "--mode without a value: exit $rc"

[ $failures -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "tools_run: all checks passed"
