#!/usr/bin/env bash
# usbyte-sim's command line (docs/model.md): good runs of every option, the --plan-out / --eval
# round trip, and each class of bad input with its one-line message and exit status 2.
set -euo pipefail
BUILD=${BUILD:-build}
SIM=$BUILD/usbyte-sim
[ -x "$SIM" ] || { echo "missing $SIM (make $SIM)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# A small barrier profile whose numbers are known: alpha 1, beta 0, ready 0, 0.1, 0.2
# -> wfbp 3 s, one merged block 1.2 s (see tests/unit/partition/test_policies_basic.c).
cat > "$tmp/small.json" <<'EOF'
{"usbyte_profile": 1, "name": "small", "net": {"alpha": 1.0, "beta": 0.0},
 "backward_end": 0.2, "forward": [0.0],
 "calls": [{"bytes": 12, "ready": 0.0}, {"bytes": 12, "ready": 0.1}, {"bytes": 12, "ready": 0.2}]}
EOF
sed 's/"net": {"alpha": 1.0, "beta": 0.0},//' "$tmp/small.json" > "$tmp/nonet.json"

# expect_bad DESCRIPTION REGEX COMMAND...: exit status 2 and exactly one line on stderr matching REGEX.
expect_bad() {
    local what=$1 want=$2
    shift 2
    local rc=0
    "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
    if [ "$rc" -ne 2 ]; then fail "$what: exit $rc, want 2"; return; fi
    if [ "$(wc -l < "$tmp/err")" -ne 1 ]; then fail "$what: stderr is not one line:"; cat "$tmp/err"; return; fi
    grep -Eq -- "$want" "$tmp/err" || fail "$what: message '$(cat "$tmp/err")' does not match '$want'"
}

# ---- good runs ----
out=$("$SIM" "$tmp/small.json")
echo "$out" | grep -Eq '^wfbp +3000\.000 +1\.000x' || fail "table: wfbp row: $out"
echo "$out" | grep -Eq '^mgwfbp-dp +1200\.000 +2\.500x' || fail "table: mgwfbp-dp row: $out"
echo "$out" | grep -q '^lower bound' || fail "table: no lower bound row"
for name in $("$SIM" --help | sed -n 's/^policies: //p' | sed 's/ (default.*//; s/,//g'); do
    echo "$out" | grep -q "^$name " || fail "table: no row for policy $name"
done

"$SIM" "$tmp/small.json" --policy mgwfbp --json > "$tmp/mg.jsonl"
[ "$(wc -l < "$tmp/mg.jsonl")" -eq 1 ] || fail "--json --policy: want one line"
jq -e '.usbyte_plan == 1 and .policy == "mgwfbp" and (.iteration - 1.2 | fabs) < 1e-12 and (.plan_seconds >= 0)
       and (.blocks | length) == 1 and .blocks[0].segments == [[0,0,12],[1,0,12],[2,0,12]]' "$tmp/mg.jsonl" >/dev/null ||
    fail "--json plan object: $(cat "$tmp/mg.jsonl")"
n_policies=$("$SIM" "$tmp/small.json" --policy all --json | wc -l)
[ "$n_policies" -ge 7 ] || fail "--policy all --json: $n_policies lines"

# The reference policies and their settings on the small profile (alpha 1, beta 0; 12-byte calls
# ready at 0, 0.1, 0.2).  ddp, 1 MiB first bucket: one bucket, 0.2 + 1 = 1.2 s; caps 0: three.
# horovod, 1 ms cycles: three cycles, three buffers, 3 s; 500 ms cycles: {0} at 0, {1,2} at 0.5,
# ends 1 + 1 = 2 s; with the threshold 0 no fusion again: 3 s.
sim_iter() { "$SIM" "$tmp/small.json" --json "$@" | jq -r '"\(.blocks | length) \(.iteration)"'; }
[ "$(sim_iter --policy ddp)" = "1 1.2" ] || fail "ddp defaults: $(sim_iter --policy ddp)"
[ "$(sim_iter --policy ddp --ddp-first-bucket-mb 0 --ddp-bucket-cap-mb 0)" = "3 3" ] || fail "ddp caps 0"
[ "$(sim_iter --policy horovod)" = "3 3" ] || fail "horovod defaults: $(sim_iter --policy horovod)"
[ "$(sim_iter --policy horovod --horovod-cycle-ms 500)" = "2 2" ] || fail "horovod --horovod-cycle-ms 500"
[ "$(sim_iter --policy horovod --horovod-cycle-ms 500 --horovod-fusion-threshold 0)" = "3 3" ] ||
    fail "horovod --horovod-fusion-threshold 0"
"$SIM" "$tmp/small.json" --policy ddp --ddp-bucket-cap-mb 2.5 --json | jq -e '.params == "first_bucket=1048576 bucket=2621440"' \
    > /dev/null || fail "--ddp-bucket-cap-mb 2.5 is not 2.5 MiB"
"$SIM" --list-nets --json | jq -e -s 'map(select(.name == "10gbe"))[0] | (.a0 * 14 - 5.230272768511732e-4 | fabs) < 1e-15' \
    > /dev/null || fail "--list-nets --json: 10gbe's a0"
"$SIM" --list-nets | grep -q '^100gb-ib ' || fail "--list-nets: no 100gb-ib line"

# --plan-out then --eval gives the same iteration and block times.
"$SIM" "$tmp/small.json" --policy wfbp --plan-out "$tmp/plan.json" > /dev/null
"$SIM" "$tmp/small.json" --eval "$tmp/plan.json" --json > "$tmp/eval.json"
jq -e --slurpfile a "$tmp/plan.json" '.iteration == $a[0].iteration and .blocks == $a[0].blocks and .policy == "wfbp"' \
    "$tmp/eval.json" > /dev/null || fail "--eval of --plan-out differs: $(cat "$tmp/eval.json")"
"$SIM" "$tmp/small.json" --eval "$tmp/plan.json" | grep -Eq '^wfbp +3000\.000' || fail "--eval table"
# --eval recomputes: a plan file with wrong times gets the model's times back.
jq '.iteration = 99 | .blocks[0].end = 42' "$tmp/plan.json" > "$tmp/wrong.json"
"$SIM" "$tmp/small.json" --eval "$tmp/wrong.json" --json | jq -e '.iteration == 3 and .blocks[0].end == 1' > /dev/null ||
    fail "--eval does not recompute times"
# --plan-out with several policies writes the fastest.
"$SIM" "$tmp/small.json" --plan-out "$tmp/fast.json" > /dev/null
jq -e '(.iteration - 1.2 | fabs) < 1e-12' "$tmp/fast.json" > /dev/null || fail "--plan-out with all: not the fastest"

# Network options: --alpha/--beta override the profile; --net with --ranks; a profile without net.
"$SIM" "$tmp/nonet.json" --alpha 1 --beta 0 --policy wfbp --json | jq -e '.iteration == 3' > /dev/null ||
    fail "--alpha/--beta"
"$SIM" "$tmp/small.json" --alpha 2 --policy wfbp --json | jq -e '.iteration == 6' > /dev/null || fail "--alpha override"
"$SIM" "$tmp/nonet.json" --net 10gbe --ranks 8 > "$tmp/net.txt" || fail "--net 10gbe --ranks 8"
# 10gbe at 8 ranks is MG-WFBP's alpha 523.027 us.
grep -q 'alpha 523.027 us' "$tmp/net.txt" || fail "--net 10gbe at 8 ranks: $(head -2 "$tmp/net.txt")"
for preset in 56gb-ib 100gb-ib nvlink; do
    "$SIM" "$tmp/nonet.json" --net $preset --ranks 16 > /dev/null || fail "--net $preset"
done

# --svg: a self-contained, well-formed SVG with one link lane per policy.
"$SIM" "$tmp/small.json" --svg "$tmp/t.svg" > /dev/null
grep -q '<svg xmlns' "$tmp/t.svg" || fail "--svg: not an SVG"
[ "$(grep -c ': link</text>' "$tmp/t.svg")" -eq "$n_policies" ] || fail "--svg: want one link lane per policy"
grep -q 'time (ms)' "$tmp/t.svg" || fail "--svg: no axis"
# Each policy's end label lies right of its end line, clear of every bar of its lanes, and inside
# the drawing (about 6.2 px per character at 11 px).
python3 - "$tmp/t.svg" <<'PY' || fail "--svg: an end label overlaps the bars or leaves the drawing"
import sys
import xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
svg = ET.parse(sys.argv[1]).getroot()
width = float(svg.get("width"))
groups = [g for g in svg.iter(ns + "g") if g.get("class") == "ub-policy"]
assert groups, "no policy group"
for g in groups:
    line = [e for e in g.iter(ns + "line") if e.get("class") == "ub-end"][0]
    xe = float(line.get("x1"))
    text = [e for e in g.iter(ns + "text") if "ms" in (e.text or "") and e.get("font-size") == "11"][0]
    x0 = float(text.get("x")) if text.get("text-anchor") == "start" else float(text.get("x")) - 6.2 * len(text.text)
    x1 = x0 + 6.2 * len(text.text)
    bars_end = max(float(r.get("x")) + float(r.get("width")) for r in g.iter(ns + "rect"))
    assert x0 >= bars_end - 0.01 and x0 >= xe, (g.get("data-policy"), x0, bars_end, xe)
    assert x1 <= width, (g.get("data-policy"), x1, width)
PY
grep -q 'forward segment' "$tmp/t.svg" || fail "--svg: no legend"
if command -v python3 > /dev/null; then
    python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' "$tmp/t.svg" || fail "--svg: malformed XML"
fi

# --sweep: one row per rank count, speedups over wfbp.
"$SIM" "$tmp/nonet.json" --sweep ranks=2,4,8 --net 100gb-ib > "$tmp/sweep.txt"
[ "$(grep -Ec '^ +(2|4|8) ' "$tmp/sweep.txt")" -eq 3 ] || fail "--sweep rows: $(cat "$tmp/sweep.txt")"
grep -q '(1.000x)' "$tmp/sweep.txt" || fail "--sweep: no wfbp speedup column"
"$SIM" "$tmp/nonet.json" --sweep ranks=2,4 --net 10gbe --policy best --json | jq -e -s 'length == 4' > /dev/null ||
    fail "--sweep --json: want wfbp and best per rank count"

# --synthetic, barrier and layer-wise; the same seed gives the same plan (a pure function of the profile).
"$SIM" --synthetic 50,7 --policy mgwfbp-dp --json | jq -e '.blocks | length > 0' > /dev/null || fail "--synthetic"
a=$("$SIM" --synthetic 60,9,layerwise --net 100gb-ib --ranks 16 --json | jq -c 'del(.plan_seconds)')
b=$("$SIM" --synthetic 60,9,layerwise --net 100gb-ib --ranks 16 --json | jq -c 'del(.plan_seconds)')
[ -n "$a" ] && [ "$a" = "$b" ] || fail "--synthetic layerwise: plans differ between two runs"

# A usbyte report replays as its embedded profile (first planned communicator, or --comm N).
jq -n --slurpfile p "$tmp/small.json" '{usbyte_report: 1, rank: 0, world_size: 2,
    comms: [{state: "detect", profile: null}, {state: "planned", profile: $p[0]}]}' > "$tmp/report.json"
"$SIM" "$tmp/report.json" | grep -Eq '^mgwfbp-dp +1200\.000 +2\.500x' || fail "report: first planned communicator"
"$SIM" "$tmp/report.json" --comm 1 --policy wfbp --json | jq -e '.iteration == 3' > /dev/null || fail "report --comm 1"

# The lower bound (docs/model.md rule 6) and proofs of optimality: here one merged block is optimal.
"$SIM" "$tmp/small.json" --json > "$tmp/all.jsonl"
jq -e -s 'map(select(.policy == "best"))[0] | .optimal == true and (.lower_bound - 1.2 | fabs) < 1e-12' \
    "$tmp/all.jsonl" > /dev/null || fail "best on small.json: not proven optimal at 1.2: $(cat "$tmp/all.jsonl")"
jq -e -s 'map(select(.policy == "wfbp"))[0] | .optimal == false' "$tmp/all.jsonl" > /dev/null ||
    fail "wfbp (3 s against a bound of 1.2 s) is marked optimal"
echo "$out" | grep -Eq '^best +1200\.000 +2\.500x +0\.00%' || fail "table: best's gap to the bound: $out"

# The runtime's constraints from the profile: every policy's plan obeys align and staging_max.
jq '. + {align: 8, staging_max: 16}' "$tmp/small.json" > "$tmp/constrained.json"
"$SIM" "$tmp/constrained.json" --json > "$tmp/constrained.jsonl" || fail "constrained profile: exit $?"
jq -e -s 'map(select(.policy == "syncea"))[0] | (.blocks | length) == 3' "$tmp/constrained.jsonl" > /dev/null ||
    fail "syncea with staging_max 16 must not stage 36 bytes: $(cat "$tmp/constrained.jsonl")"

# Extreme inputs that once looped, aborted or printed nan (each within a time limit).
# A gap shorter than a startup, then the same call again: US-Byte's unit count for the rest
# of the gap once overflowed to 0 bytes and looped forever.
cat > "$tmp/tinybeta.json" <<'EOF2'
{"usbyte_profile": 1, "name": "tiny-beta", "backward_end": 0.00196, "forward": [0.01],
 "calls": [{"bytes": 8192000, "ready": 0.0000749}, {"bytes": 4000, "ready": 0.0000749}, {"bytes": 8192, "ready": 0.0000822},
           {"bytes": 8192, "ready": 0.0000822}, {"bytes": 4194304, "ready": 0.00196}]}
EOF2
timeout 60 "$SIM" "$tmp/tinybeta.json" --alpha 1e-4 --beta 1e-30 --json > "$tmp/tiny.jsonl" ||
    fail "tiny beta: exit $? (the usbyte policy must terminate)"
[ "$(wc -l < "$tmp/tiny.jsonl")" -ge 7 ] || fail "tiny beta: not every policy printed"
timeout 60 "$SIM" "$tmp/small.json" --alpha 1e-320 --policy wfbp --json | jq -e '.iteration > 0' > /dev/null ||
    fail "--alpha 1e-320 (a subnormal number) is a valid cost"
jq '.calls[0].bytes = 4611686018427387904' "$tmp/small.json" > "$tmp/huge.json"
timeout 60 "$SIM" "$tmp/huge.json" --beta 1e-10 > "$tmp/huge.txt" || fail "a 2^62-byte call: exit $?"
grep -q '^bytescheduler ' "$tmp/huge.txt" || fail "a 2^62-byte call: no bytescheduler row"
jq '.net = {alpha: 0, beta: 0} | .calls[].ready = 0 | .backward_end = 0' "$tmp/small.json" > "$tmp/zero.json"
"$SIM" "$tmp/zero.json" > "$tmp/zero.txt" || fail "all-zero profile: exit $?"
grep -qi 'nan' "$tmp/zero.txt" && fail "all-zero profile prints nan: $(cat "$tmp/zero.txt")"
grep -Eq '^best +0\.000 +1\.000x +0\.00%' "$tmp/zero.txt" || fail "all-zero profile: $(cat "$tmp/zero.txt")"

# ---- bad input: one line naming the file, the place and the problem; exit 2 ----
expect_bad "overflowing costs" "small\.json: alpha 1e\+308 s, beta 0 s/B and copy_beta 0 s/B make this profile's times overflow" \
    "$SIM" "$tmp/small.json" --alpha 1e308
sed 's/"bytes": 12, "ready": 0.1/"bytes": 4001, "ready": 0.1/' "$tmp/small.json" > "$tmp/partial.json"
expect_bad "bytes not whole elements" "$tmp/partial.json: calls\[1\]\.bytes: 4001 is not a whole number of float32 elements \(4 bytes each\)" \
    "$SIM" "$tmp/partial.json"
jq '.align = -1' "$tmp/small.json" > "$tmp/badalign.json"
expect_bad "negative align" "badalign\.json: align: must be an integer number of bytes >= 0, got -1" "$SIM" "$tmp/badalign.json"
expect_bad "unreadable file" "^usbyte-sim: $tmp/none.json: cannot read: No such file" "$SIM" "$tmp/none.json"
printf '{"usbyte_profile": 1, "calls": [' > "$tmp/malformed.json"
expect_bad "malformed JSON" "$tmp/malformed.json: line 1, column [0-9]+: malformed JSON" "$SIM" "$tmp/malformed.json"
sed 's/"bytes": 12, "ready": 0.1/"bytes": -5, "ready": 0.1/' "$tmp/small.json" > "$tmp/negative.json"
expect_bad "negative size" "$tmp/negative.json: calls\[1\]\.bytes: must be a positive integer, got -5" \
    "$SIM" "$tmp/negative.json"
sed 's/"ready": 0.2/"ready": -1/' "$tmp/small.json" > "$tmp/negready.json"
expect_bad "negative time" "$tmp/negready.json: calls\[2\]\.ready: must be a finite number >= 0, got -1" \
    "$SIM" "$tmp/negready.json"
expect_bad "missing net" "$tmp/nonet.json: net: missing; give --ranks P --net PRESET or --alpha S --beta" \
    "$SIM" "$tmp/nonet.json"
expect_bad "half a net" "net: missing, so --alpha and --beta must both be given" "$SIM" "$tmp/nonet.json" --alpha 1
expect_bad "--net without ranks" "$tmp/nonet.json: ranks: missing; --net 10gbe needs --ranks P" \
    "$SIM" "$tmp/nonet.json" --net 10gbe
expect_bad "unknown preset" "--net: unknown preset \"wifi\" \(known: 10gbe, " "$SIM" "$tmp/small.json" --net wifi --ranks 8
expect_bad "unknown policy" "--policy: unknown policy \"fastest\" \(known: wfbp, " "$SIM" "$tmp/small.json" --policy fastest
expect_bad "bad number" "--alpha: must be a finite number >= 0, got \"-3\"" "$SIM" "$tmp/small.json" --alpha -3
expect_bad "bad ranks" "--ranks: must be an integer from 1 to" "$SIM" "$tmp/small.json" --net 10gbe --ranks x
expect_bad "sweep without net" "--sweep needs --net PRESET" "$SIM" "$tmp/small.json" --sweep ranks=2,4
expect_bad "sweep with svg" "--sweep prints a scaling table: it does not combine with --plan-out or --svg" \
    "$SIM" "$tmp/small.json" --sweep ranks=2 --net 10gbe --svg "$tmp/x.svg"
expect_bad "bad synthetic" "--synthetic: expected N,SEED\[,layerwise\]\[,hard\]" "$SIM" --synthetic 0,1
expect_bad "synthetic beyond int" "--synthetic: .*with N from 1 to 10000000 calls, got \"4294967301,1\"" \
    "$SIM" --synthetic 4294967301,1
expect_bad "synthetic too large" "--synthetic: .*with N from 1 to 10000000 calls" "$SIM" --synthetic 10000001,1
# Times no job measures, and a call ready after the backward pass ended.
jq '.backward_end = 1e300' "$tmp/small.json" > "$tmp/huge.json"
expect_bad "backward_end 1e300" "$tmp/huge.json: backward_end 1e\+300 s, .*not an iteration a job measures" \
    "$SIM" "$tmp/huge.json"
jq '.calls[0].ready = .backward_end + 1' "$tmp/small.json" > "$tmp/late.json"
expect_bad "ready after backward_end" "$tmp/late.json: calls\[0\]\.ready .* is after backward_end" "$SIM" "$tmp/late.json"
# A report of another version, and a FIFO (never opened for reading: it would block).
printf '{"usbyte_report": 2, "rank": 0, "world_size": 1, "comms": [{"profile": %s}]}\n' "$(cat "$tmp/small.json")" \
    > "$tmp/v2.json"
expect_bad "report version 2" "$tmp/v2.json: usbyte_report: unsupported version 2 \(expected 1\)" "$SIM" "$tmp/v2.json"
mkfifo "$tmp/fifo.json"
expect_bad "a FIFO" "$tmp/fifo.json: cannot read: not a regular file" timeout 20 "$SIM" "$tmp/fifo.json"
expect_bad "eval with policy" "--eval evaluates one given plan" "$SIM" "$tmp/small.json" --eval "$tmp/plan.json" --policy wfbp
expect_bad "bad sweep" "--sweep: expected ranks=P1,P2" "$SIM" "$tmp/small.json" --sweep 2,4 --net 10gbe
expect_bad "unknown option" "unknown option --fast" "$SIM" "$tmp/small.json" --fast
expect_bad "no profile" "^usbyte-sim: no profile given" "$SIM" --json
expect_bad "bad bucket cap" "--ddp-bucket-cap-mb: must be a number of MiB from 0 to 1e12, got \"-1\"" \
    "$SIM" "$tmp/small.json" --ddp-bucket-cap-mb -1
expect_bad "bad fusion threshold" "--horovod-fusion-threshold: must be a whole number of bytes, got \"1.5\"" \
    "$SIM" "$tmp/small.json" --horovod-fusion-threshold 1.5
expect_bad "bad cycle" "--horovod-cycle-ms: must be a finite number >= 0" "$SIM" "$tmp/small.json" --horovod-cycle-ms x
expect_bad "--list-nets with a profile" "--list-nets prints the presets: it takes no profile" "$SIM" "$tmp/small.json" --list-nets
# Plans: not covering the calls, covering twice, a wrong shape, an unreadable plan.
jq 'del(.blocks[2])' "$tmp/plan.json" > "$tmp/short.json"
expect_bad "plan not covering" "^usbyte-sim: $tmp/short.json: call 2: bytes \[0, 12\) are not covered" \
    "$SIM" "$tmp/small.json" --eval "$tmp/short.json"
jq '.blocks[1].segments += [[0, 4, 8]]' "$tmp/plan.json" > "$tmp/twice.json"
expect_bad "plan covering twice" "$tmp/twice.json: call 0: bytes \[4, 12\) are covered twice" \
    "$SIM" "$tmp/small.json" --eval "$tmp/twice.json"
jq '.blocks[0].segments[0][0] = 9' "$tmp/plan.json" > "$tmp/nocall.json"
expect_bad "plan naming a missing call" "$tmp/nocall.json: blocks\[0\]\.segments\[0\]: call 9 does not exist" \
    "$SIM" "$tmp/small.json" --eval "$tmp/nocall.json"
jq '.blocks[1].segments[0] = [1, 0]' "$tmp/plan.json" > "$tmp/shape.json"
expect_bad "plan of the wrong shape" "$tmp/shape.json: blocks\[1\]\.segments\[0\]: must be \[call, offset_bytes, length_bytes\]" \
    "$SIM" "$tmp/small.json" --eval "$tmp/shape.json"
"$SIM" "$tmp/small.json" --policy wfbp --plan-out "$tmp/plan.json" > /dev/null
jq '.blocks[1].segments = [[1, 0, 6], [1, 6, 6]]' "$tmp/plan.json" > "$tmp/element.json"
expect_bad "plan splitting an element" "$tmp/element.json: blocks\[1\]\.segments\[0\]: end 6 of call 1 is not a cut the runtime can issue \(multiples of 4 bytes: whole float32 elements\)" \
    "$SIM" "$tmp/small.json" --eval "$tmp/element.json"
jq '.blocks = [{segments: [[0, 0, 12], [1, 0, 12]]}, {segments: [[2, 0, 12]]}]' "$tmp/plan.json" > "$tmp/staged.json"
expect_bad "plan above staging_max" "$tmp/staged.json: blocks\[0\] stages 24 bytes \(several calls, or ranges of one call that do not touch\), above staging_max 16" \
    "$SIM" "$tmp/constrained.json" --eval "$tmp/staged.json"
expect_bad "unreadable plan" "$tmp/noplan.json: cannot read" "$SIM" "$tmp/small.json" --eval "$tmp/noplan.json"
expect_bad "unwritable --plan-out" "/nonexistent/dir/p.json: cannot (write|create)" \
    "$SIM" "$tmp/small.json" --policy wfbp --plan-out /nonexistent/dir/p.json

# --net-table: a measured curve.  The small profile's 12-byte calls sit on the table's floor (1 s
# up to 16 bytes; 5 s at 32; above, 5 s times bytes/32): wfbp replays at 3 s, syncea's one block
# of 36 bytes ends at 0.2 + 5.625 s.  The model sees one size (12 bytes: 1 s, all of it per byte,
# as the fit puts a single size; its calibration starts at 64 KiB), so it predicts that block at
# 0.2 + 3 s.
printf '# a test curve\n# columns: bytes us inplace_us\n16\t1000000\t1000000\n32\t5000000\t5000000\n' > "$tmp/curve.tsv"
"$SIM" "$tmp/small.json" --net-table "$tmp/curve.tsv" --json > "$tmp/nt.jsonl" || fail "--net-table failed"
jq -se 'map(select(.policy == "wfbp"))[0] | (.curve_iteration - 3) | fabs < 1e-9' "$tmp/nt.jsonl" > /dev/null ||
    fail "--net-table: wfbp does not replay at 3 s: $(cat "$tmp/nt.jsonl")"
jq -se 'map(select(.policy == "syncea"))[0] | ((.curve_iteration - 5.825) | fabs < 1e-9) and ((.predicted_iteration - 3.2) | fabs < 1e-9)' \
    "$tmp/nt.jsonl" > /dev/null || fail "--net-table: syncea not 5.825 s on the table, 3.2 s predicted: $(cat "$tmp/nt.jsonl")"
jq -se 'map(select(.policy == "best"))[0] | .curve_iteration <= 3 + 1e-9' "$tmp/nt.jsonl" > /dev/null ||
    fail "--net-table: best slower than wfbp on the table: $(cat "$tmp/nt.jsonl")"
"$SIM" "$tmp/small.json" --net-table "$tmp/curve.tsv" --model line --json > "$tmp/ntl.jsonl"
cmp -s "$tmp/nt.jsonl" "$tmp/ntl.jsonl" || fail "--model line differs from the fit on one size: $(cat "$tmp/ntl.jsonl")"
"$SIM" "$tmp/small.json" --net-table "$tmp/curve.tsv" | grep -q "on_curve_ms" || fail "--net-table: no table"
"$SIM" "$tmp/small.json" --net-table "$tmp/curve.tsv" --model-error | grep -q "^model (calls + calibration)" ||
    fail "--model-error: no model row"
printf '16\t1\n8\t2\n' > "$tmp/down.tsv"
expect_bad "--net-table, bytes not rising" "^usbyte-sim: $tmp/down.tsv: line 2: bytes 8 not above the previous row's 16" \
    "$SIM" "$tmp/small.json" --net-table "$tmp/down.tsv"
printf '# c\n16\tx\n' > "$tmp/word.tsv"
expect_bad "--net-table, a word for a time" "^usbyte-sim: $tmp/word.tsv: line 2: the time \(us\) is missing" \
    "$SIM" "$tmp/small.json" --net-table "$tmp/word.tsv"
printf '# only comments\n' > "$tmp/empty.tsv"
expect_bad "--net-table, no rows" "^usbyte-sim: $tmp/empty.tsv: no rows" "$SIM" "$tmp/small.json" --net-table "$tmp/empty.tsv"
expect_bad "--net-table, unreadable" "^usbyte-sim: $tmp/none.tsv: cannot read" "$SIM" "$tmp/small.json" --net-table "$tmp/none.tsv"
expect_bad "--net-table with --net" "--net-table gives the network" "$SIM" "$tmp/small.json" --net-table "$tmp/curve.tsv" --net 10gbe --ranks 8
expect_bad "--model-error without a table" "--model-error needs --net-table" "$SIM" "$tmp/small.json" --model-error
# --interference: the small profile's compute ran beside its own blocks (busy from 0 to 3 s) at
# half speed (F = 1): its own seconds are half its wall ones, so wfbp replays at 3 s and syncea's
# one block, which nothing overlaps, starts at 0.1 s instead of 0.2 s.
"$SIM" "$tmp/small.json" --interference 1 --json > "$tmp/if.jsonl" || fail "--interference failed"
jq -se 'map(select(.policy == "wfbp"))[0].iteration | . > 2.999999 and . < 3.000001' "$tmp/if.jsonl" >/dev/null ||
    fail "--interference: wfbp does not replay at 3 s: $(cat "$tmp/if.jsonl")"
jq -se 'map(select(.policy == "syncea"))[0].iteration | . > 1.099999 and . < 1.100001' "$tmp/if.jsonl" >/dev/null ||
    fail "--interference: syncea not at 1.1 s: $(cat "$tmp/if.jsonl")"
expect_bad "--interference above 1" "^usbyte-sim: --interference: must be from 0 to 1" "$SIM" "$tmp/small.json" --interference 1.5
expect_bad "--interference with --net-table" "--interference does not combine" \
    "$SIM" "$tmp/small.json" --interference 0.2 --net-table "$tmp/curve.tsv"
expect_bad "--model unknown" "--model: expected fit or line" "$SIM" "$tmp/small.json" --model quadratic

# Outputs are written like the runtime's report (ub_write_file_atomic): never through a link, never
# over what is not a regular file, never half-written; a regular file is replaced.
ln -s "$tmp/victim" "$tmp/link.json"
echo untouched > "$tmp/victim"
expect_bad "--plan-out through a symbolic link" 'link\.json.*(symbolic link|not a regular file)' \
    "$SIM" "$tmp/small.json" --policy wfbp --plan-out "$tmp/link.json"
[ "$(cat "$tmp/victim")" = untouched ] || fail "--plan-out wrote through a symbolic link"
mkdir "$tmp/adir.svg"
expect_bad "--svg onto a directory" 'adir\.svg.*(directory|not a regular file)' "$SIM" "$tmp/small.json" --svg "$tmp/adir.svg"
echo old > "$tmp/replace.json"
"$SIM" "$tmp/small.json" --policy wfbp --plan-out "$tmp/replace.json" >/dev/null || fail "--plan-out over a regular file failed"
jq -e '.usbyte_plan == 1' "$tmp/replace.json" >/dev/null || fail "--plan-out did not replace the regular file with a plan"
ls "$tmp" | grep -q '\.partial$' && fail "a temporary .partial file was left behind: $(ls "$tmp" | grep partial)"

expect_bad "report, --comm past the end" 'report\.json: comms\[5\]: the report has 2 communicator' "$SIM" "$tmp/report.json" --comm 5
expect_bad "report, unplanned --comm" 'report\.json: comms\[0\]\.profile: none \(state "detect"' "$SIM" "$tmp/report.json" --comm 0
jq '.comms[1].profile.calls[1].bytes = -5' "$tmp/report.json" > "$tmp/badreport.json"
expect_bad "report, bad embedded profile" 'badreport\.json: comms\[1\]\.profile: calls\[1\]\.bytes' "$SIM" "$tmp/badreport.json"
jq '.comms = [.comms[0]]' "$tmp/report.json" > "$tmp/unplanned.json"
expect_bad "report, nothing planned" 'unplanned\.json: comms: no communicator of this report has a profile' "$SIM" "$tmp/unplanned.json"
expect_bad "--comm on a profile" 'small\.json: a communicator index applies to a usbyte report' "$SIM" "$tmp/small.json" --comm 0

if [ "$failures" -ne 0 ]; then
    echo "$failures failure(s)"
    exit 1
fi
echo "sim_cli: all checks passed"
