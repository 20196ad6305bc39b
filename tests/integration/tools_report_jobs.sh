#!/usr/bin/env bash
# usbyte-report on the reports of several jobs, as they end up on disk: two DDP-like jobs of 4
# ranks with different profiles (reports default to the working directory, so a stale rank file
# sits beside a newer run's).  Checked: every rank of a job names the same identity, two jobs
# never do; a mix of the two jobs' files, in either order, and a directory holding both, are
# refused with exit 2 and one line naming every file (never a crash, never one rank's plan drawn
# with another's profile); a run directory gives the same page as its files; one job's reports
# gathered in two directories (one per node) give one page; two run directories give the
# comparison page, whose numbers are each run's and which lists the settings that changed; the
# policy list comes from the planner.  With chromium: the comparison page loads cleanly.
source "$(dirname "$0")/tools_report_lib.sh"

mkdir -p "$WORK/a" "$WORK/b"
USBYTE_REPORT="$WORK/a/report-%r.json" run job-a "$WORK/a.out" 4 yes -- ddp_like \
    --profile "$PROFILES/resnet50-v100-b64-barrier.json" --iters 12 --time-scale 0.2 --bytes-scale 0.01
USBYTE_REPORT="$WORK/b/report-%r.json" USBYTE_POLICY=mgwfbp run job-b "$WORK/b.out" 4 yes -- ddp_like \
    --profile "$PROFILES/vgg16-v100-b64-barrier.json" --iters 12 --time-scale 0.05 --bytes-scale 0.002
mapfile -t A < <(reports "$WORK/a" 4)
mapfile -t B < <(reports "$WORK/b" 4)

# Identities: one per job, the same on every rank.
ida=$(jq -r '.job.id' "${A[@]}" | sort -u)
idb=$(jq -r '.job.id' "${B[@]}" | sort -u)
[ "$(wc -l <<< "$ida")" -eq 1 ] && [[ "$ida" =~ ^[0-9a-f]{16}$ ]] || fail "job a's ranks name identities '$ida'"
[ "$(wc -l <<< "$idb")" -eq 1 ] && [ "$ida" != "$idb" ] || fail "job b's identity '$idb' (job a: '$ida')"
[ "$(jq -r '.comms[0].id' "${A[@]}" | sort -u)" = "$ida" ] || fail "job a's communicator identity is not the job's"

# refused ARGS...: exit 2, one line naming every report of both jobs.
refused() {
    local rc=0
    "$REPORT" --quiet "$@" -o "$WORK/mixed" > /dev/null 2> "$WORK/err" || rc=$?
    [ $rc -eq 2 ] || { fail "mix $*: exit $rc, want 2: $(cat "$WORK/err")"; return; }
    [ "$(wc -l < "$WORK/err")" -eq 1 ] || { fail "mix: not one line: $(cat "$WORK/err")"; return; }
    grep -q "^usbyte-report: these reports are of 2 different jobs: job $ida" "$WORK/err" ||
        grep -q "^usbyte-report: these reports are of 2 different jobs: job $idb" "$WORK/err" ||
        fail "mix: '$(cat "$WORK/err")'"
    for f in "${files[@]}"; do
        grep -qF "$f" "$WORK/err" || fail "mix: $f not named: $(cat "$WORK/err")"
    done
    [ ! -e "$WORK/mixed/usbyte-report.html" ] || fail "mix: a page was written"
}
files=("${A[0]}" "${A[1]}" "${B[2]}" "${B[3]}")
refused "${files[@]}"
files=("${B[0]}" "${B[1]}" "${A[2]}" "${A[3]}")
refused "${files[@]}"
# A stale rank file beside a newer run's.
mkdir -p "$WORK/stale"
cp "${A[@]}" "$WORK/stale/"
cp "${B[3]}" "$WORK/stale/report-7.json"
files=("$WORK/stale/report-7.json" "$WORK/stale/report-0.json")
refused "$WORK/stale"

# A run directory: the same page as its files (the trace and page written there are skipped).
"$REPORT" --quiet "${A[@]}" -o "$WORK/a" || fail "job a's files: exit $?"
"$REPORT" --quiet "$WORK/a" -o "$WORK/out-dir" || fail "job a's directory: exit $?"
check "run directory" "$WORK/out-dir" "${A[@]}"
cmp -s <(sed 's/a\/report/X/g' "$WORK/a/usbyte-report.html") <(sed 's/a\/report/X/g' "$WORK/out-dir/usbyte-report.html") ||
    fail "the directory's page differs from the files' page"
# One job's reports gathered from two nodes' directories: one page.
mkdir -p "$WORK/node1" "$WORK/node2"
cp "${A[0]}" "${A[1]}" "$WORK/node1/"
cp "${A[2]}" "${A[3]}" "$WORK/node2/"
"$REPORT" --quiet --summary "$WORK/node1" "$WORK/node2" -o "$WORK/out-nodes" > "$WORK/nodes" || fail "two nodes: exit $?"
grep -q "^usbyte: 4 of 4 rank reports, all agree" "$WORK/nodes" || fail "two nodes: $(head -2 "$WORK/nodes")"
[ -s "$WORK/out-nodes/usbyte-report.html" ] && [ ! -e "$WORK/out-nodes/usbyte-compare.html" ] ||
    fail "two nodes of one job: not one page"
# No report in a directory.
mkdir -p "$WORK/empty"
rc=0
"$REPORT" "$WORK/empty" 2> "$WORK/err" > /dev/null || rc=$?
[ $rc -eq 2 ] && grep -q "^usbyte-report: $WORK/empty: no usbyte report in this directory$" "$WORK/err" ||
    fail "empty directory: exit $rc, $(cat "$WORK/err")"

# Two runs compared.
rc=0
"$REPORT" "$WORK/a" "$WORK/b" -o "$WORK/cmp" > "$WORK/cmp.out" || rc=$?
[ $rc -eq 0 ] || fail "compare: exit $rc: $(cat "$WORK/cmp.out")"
grep -q "wrote $WORK/cmp/usbyte-compare.html" "$WORK/cmp.out" || fail "compare: $(cat "$WORK/cmp.out")"
$CHK compare "$WORK/cmp/usbyte-compare.html" "${A[@]}" -- "${B[@]}" || fail "compare: page"
grep -q 'id="chg-USBYTE_POLICY"' "$WORK/cmp/usbyte-compare.html" || fail "compare: the policy's change is not listed"
# The checker notices a wrong number.
sed 's/data-run="b" data-v="[^"]*"/data-run="b" data-v="0.5"/' "$WORK/cmp/usbyte-compare.html" > "$WORK/cmp-wrong.html"
$CHK compare "$WORK/cmp-wrong.html" "${A[@]}" -- "${B[@]}" > /dev/null && fail "the compare checker accepts wrong numbers"

# The policies usbyte-run checks --policy against: the planner's.
mapfile -t POLICIES < <("$REPORT" --list-policies)
[ "${#POLICIES[@]}" -eq "$("$SIM" "${A[0]}" --policy all --json | wc -l)" ] ||
    fail "--list-policies gives ${#POLICIES[@]} names, usbyte-sim --policy all $("$SIM" "${A[0]}" --policy all --json | wc -l)"
for p in "${POLICIES[@]}"; do
    "$SIM" "${A[0]}" --policy "$p" > /dev/null 2>&1 || fail "--list-policies: usbyte-sim refuses $p"
done

if have_browser; then
    in_browser compare "$WORK/cmp/usbyte-compare.html" compare e8f5e9:0 --
else
    echo "info: chromium not installed (make deps installs it): browser checks skipped"
fi

[ $failures -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "tools_report_jobs: all checks passed"
