#!/usr/bin/env bash
# The planner benchmark behind `make bench-sim`: every profile of ../shared/data/profiles
# (USBYTE_PROFILES overrides) and a few seeded synthetic ones, at 8, 16, 64 and 128 ranks on the
# 10gbe and 100gb-ib presets: each policy's predicted iteration time and the speedup of `best`
# over wfbp, syncea, mgwfbp and bytescheduler; then the time to compute a `best` plan for
# 100, 1,000 and 10,000 calls.  Writes Markdown to the file given as $1 (default
# docs/bench-sim.md) and to stdout.  Needs jq.
set -euo pipefail
BUILD=${BUILD:-build}
SIM=$BUILD/usbyte-sim
OUT=${1:-docs/bench-sim.md}
PROFILES=${USBYTE_PROFILES:-../shared/data/profiles}
RANKS=${BENCH_RANKS:-8,16,64,128}
NETS=${BENCH_NETS:-10gbe 100gb-ib}
SYNTHETIC=${BENCH_SYNTHETIC-"200,1 200,2,layerwise 1000,3 1000,4,layerwise"}
PLAN_SIZES=${BENCH_PLAN_SIZES:-100 1000 10000}

command -v jq > /dev/null || { echo "bench-sim.sh: needs jq" >&2; exit 2; }
[ -x "$SIM" ] || { echo "bench-sim.sh: missing $SIM (make $SIM)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

inputs=()
if [ -d "$PROFILES" ]; then
    for f in "$PROFILES"/*.json; do inputs+=("file:$f"); done
else
    echo "bench-sim.sh: no profile folder $PROFILES; synthetic profiles only" >&2
fi
for s in $SYNTHETIC; do inputs+=("synthetic:$s"); done

# One JSON line per (input, net, ranks, policy): the plan object plus where it came from.
rows=$tmp/rows.jsonl
: > "$rows"
for input in "${inputs[@]}"; do
    kind=${input%%:*} arg=${input#*:}
    if [ "$kind" = file ]; then src=("$arg") label=$(basename "$arg" .json); else src=(--synthetic "$arg") label="synthetic($arg)"; fi
    for net in $NETS; do
        "$SIM" "${src[@]}" --sweep "ranks=$RANKS" --net "$net" --json |
            jq -c --arg profile "$label" --arg net "$net" \
                '{profile: $profile, net: $net, ranks, policy, iteration, lower_bound, plan_seconds, params: (.params // ""), blocks: (.blocks | length)}' >> "$rows"
    done
done

# The registry's order, as the simulator printed it (never a hand-written list of names).
policies=$(jq -r -s 'reduce .[].policy as $p ([]; if index([$p]) then . else . + [$p] end) | join(" ")' "$rows")

{
    echo "# usbyte-sim benchmark"
    echo
    echo "Made by \`make bench-sim\` (tools/bench-sim.sh; \`$SIM\` under the MODEL.md timing model) on"
    echo "$(date -u +%Y-%m-%d), $(uname -m), $(nproc) CPUs. Profiles: \`$PROFILES\` (FLOP-derived, except the"
    echo "measured GoogleNet trace) and seeded synthetic ones (\`--synthetic N,SEED[,layerwise]\`). Networks: the"
    echo "\`10gbe\` and \`100gb-ib\` presets (docs/planner.md gives their sources), converted to alpha/beta for each"
    echo "rank count by the ring formula. Every profile is replayed under the preset, not under its own \`net\`."
    echo
    echo "## Predicted iteration time (ms) per policy, and the speedup of \`best\`"
    echo
    printf '| profile | net | ranks |'
    for p in $policies; do printf ' %s |' "$p"; done
    echo ' lower bound | best/wfbp | best/syncea | best/mgwfbp | best/bytescheduler | best gap to LB |'
    printf '|---|---|--:|'
    for p in $policies; do printf -- '--:|'; done
    echo '--:|--:|--:|--:|--:|--:|'
    jq -r -s --arg policies "$policies" '
        ($policies | split(" ")) as $pol
        | group_by([.profile, .net, .ranks]) | sort_by(.[0].profile, .[0].net, .[0].ranks)[]
        | (map({key: .policy, value: .iteration}) | from_entries) as $t
        | .[0] as $r
        | def ratio($a): if $t[$a] and $t.best then "\($t[$a] / $t.best * 1000 | round / 1000)x" else "-" end;
          "| \($r.profile) | \($r.net) | \($r.ranks) | "
          + ([$pol[] | if $t[.] then ($t[.] * 1e6 | round / 1000 | tostring) else "-" end] | join(" | "))
          + " | \($r.lower_bound * 1e6 | round / 1000) | \(ratio("wfbp")) | \(ratio("syncea")) | \(ratio("mgwfbp")) | \(ratio("bytescheduler")) | "
          + (if $t.best then "\(($t.best / $r.lower_bound - 1) * 10000 | round / 100)%" else "-" end) + " |"' "$rows"
    echo
    echo "## Summary"
    echo
    jq -r -s '
        group_by([.profile, .net, .ranks])
        | map((map({key: .policy, value: .iteration}) | from_entries) as $t
              | {best: $t.best, others: ([to_entries[] | select(.key != "best") | .value] | min),
                 wfbp: $t.wfbp, bs: $t.bytescheduler, lb: .[0].lower_bound, net: .[0].net, ranks: .[0].ranks,
                 profile: .[0].profile, min_other: ([$t | to_entries[] | select(.key != "best") | .value] | min)})
        | map(select(.best != null)) as $rows
        | ($rows | map(select(.best > .min_other * (1 + 1e-12)))) as $worse
        | ($rows | map(select(.net == "10gbe" and .ranks == 8))) as $r8
        | "- rows: \($rows | length); rows where `best` is slower than another policy: \($worse | length)"
          + (if ($worse | length) > 0 then " (" + ([$worse[] | "\(.profile) \(.net) \(.ranks)"] | join(", ")) + ")" else "" end),
          "- average gap of `best` to the lower bound: \(($rows | map(.best / .lb - 1) | add / length) * 10000 | round / 100)%; largest: \(($rows | map(.best / .lb - 1) | max) * 10000 | round / 100)%",
          "- 8 ranks, 10gbe: `best` over wfbp up to \($r8 | map(.wfbp / .best) | max * 1000 | round / 1000)x (mean \($r8 | map(.wfbp / .best) | add / length * 1000 | round / 1000)x); over bytescheduler up to \($r8 | map(select(.bs) | .bs / .best) | max * 1000 | round / 1000)x (mean \($r8 | map(select(.bs) | .bs / .best) | add / length * 1000 | round / 1000)x)",
          "- all rows: `best` over wfbp up to \($rows | map(.wfbp / .best) | max * 1000 | round / 1000)x, over bytescheduler up to \($rows | map(select(.bs) | .bs / .best) | max * 1000 | round / 1000)x"' "$rows"
    echo
    echo "## Profiles that carry their own \`net\` (replayed under it)"
    echo
    echo "| profile | policy | iteration ms | speedup over wfbp | gap to lower bound | blocks |"
    echo "|---|---|--:|--:|--:|--:|"
    for input in "${inputs[@]}"; do
        [ "${input%%:*}" = file ] || continue
        f=${input#*:}
        jq -e 'has("net")' "$f" > /dev/null 2>&1 || continue
        "$SIM" "$f" --json | jq -r -s --arg profile "$(basename "$f" .json)" '
            (map(select(.policy == "wfbp"))[0].iteration) as $w | .[]
            | "| \($profile) | \(.policy) | \(.iteration * 1e6 | round / 1000) | \($w / .iteration * 1000 | round / 1000)x | \((.iteration / .lower_bound - 1) * 10000 | round / 100)% | \(.blocks | length) |"'
    done
    echo
    echo "## Time to compute a \`best\` plan"
    echo
    echo "Seeded synthetic barrier profiles (\`usbyte-sim --synthetic N,1 --net 10gbe --ranks 8 --json\`);"
    echo "the planning time of one run as the simulator measures it (\`plan_seconds\`), wall clock of this machine."
    echo
    echo "| calls | best plan ms | blocks | best/wfbp |"
    echo "|--:|--:|--:|--:|"
    for n in $PLAN_SIZES; do
        "$SIM" --synthetic "$n,1" --net 10gbe --ranks 8 --json |
            jq -r -s --arg n "$n" '(map({key: .policy, value: .}) | from_entries) as $p
                | "| \($n) | \($p.best.plan_seconds * 1e6 | round / 1000) | \($p.best.blocks | length) | \($p.wfbp.iteration / $p.best.iteration * 1000 | round / 1000)x |"'
    done
} > "$tmp/out.md"
mkdir -p "$(dirname "$OUT")"
cp "$tmp/out.md" "$OUT"
cat "$OUT"
