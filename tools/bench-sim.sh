#!/usr/bin/env bash
# The planner benchmark behind `make bench-sim`: every profile of data/profiles
# (USBYTE_PROFILES overrides) and a few seeded synthetic ones, at 8, 16, 64 and 128 ranks on the
# 10gbe and 100gb-ib presets: each policy's predicted iteration time, the speedup of `best`
# over wfbp, syncea, mgwfbp, bytescheduler and what users run today (ddp, horovod), its gap to
# the MODEL.md lower bound and whether it is proven optimal; a summary of those gaps on barrier
# and layer-wise rows; the geometric means of best/ddp and best/horovod per link and rank count
# and per network; the profiles
# that carry their own measured net under it; every shared profile on each measured curve of
# data/net (USBYTE_NET_TABLES overrides), plans from the fitted model and from one line, replayed
# on the curve (usbyte-sim --net-table); then the time to compute a `best` plan for 100,
# 1,000 and 10,000 calls on synthetic profiles, ordinary and communication-bound ("hard").
# Writes Markdown to the file given as $1 (default docs/bench-sim.md) and to stdout.  Needs jq.
set -euo pipefail
BUILD=${BUILD:-build}
SIM=$BUILD/usbyte-sim
OUT=${1:-docs/bench-sim.md}
PROFILES=${USBYTE_PROFILES:-data/profiles}
NET_TABLES=${USBYTE_NET_TABLES:-data/net}
RANKS=${BENCH_RANKS:-8,16,64,128}
NETS=${BENCH_NETS:-10gbe 100gb-ib}
SYNTHETIC=${BENCH_SYNTHETIC-"200,1 200,2,layerwise 1000,3 1000,4,layerwise 200,5,hard 200,6,layerwise,hard"}
PLAN_SIZES=${BENCH_PLAN_SIZES:-100 1000 10000}
PLAN_SEEDS=${BENCH_PLAN_SEEDS:-1 2 3}

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
    if [ "$kind" = file ]; then
        src=("$arg") label=$(basename "$arg" .json)
        layerwise=$(jq '(.forward // [0]) | length > 1' "$arg")
    else
        src=(--synthetic "$arg") label="synthetic($arg)"
        case $arg in *layerwise*) layerwise=true ;; *) layerwise=false ;; esac
    fi
    for net in $NETS; do
        "$SIM" "${src[@]}" --sweep "ranks=$RANKS" --net "$net" --json |
            jq -c --arg profile "$label" --arg net "$net" --argjson layerwise "$layerwise" \
                '{profile: $profile, net: $net, ranks, policy, iteration, lower_bound, optimal, layerwise: $layerwise,
                  plan_seconds, params: (.params // ""), blocks: (.blocks | length)}' >> "$rows"
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
    echo ' lower bound | best/wfbp | best/syncea | best/mgwfbp | best/bytescheduler | best/ddp | best/horovod | best gap to LB | optimal |'
    printf '|---|---|--:|'
    for p in $policies; do printf -- '--:|'; done
    echo '--:|--:|--:|--:|--:|--:|--:|--:|:-:|'
    jq -r -s --arg policies "$policies" '
        ($policies | split(" ")) as $pol
        | group_by([.profile, .net, .ranks]) | sort_by(.[0].profile, .[0].net, .[0].ranks)[]
        | (map({key: .policy, value: .iteration}) | from_entries) as $t
        | (map(select(.policy == "best"))[0].optimal) as $opt
        | .[0] as $r
        | def ratio($a): if $t[$a] and $t.best then "\($t[$a] / $t.best * 1000 | round / 1000)x" else "-" end;
          "| \($r.profile) | \($r.net) | \($r.ranks) | "
          + ([$pol[] | if $t[.] then ($t[.] * 1e6 | round / 1000 | tostring) else "-" end] | join(" | "))
          + " | \($r.lower_bound * 1e6 | round / 1000) | \(ratio("wfbp")) | \(ratio("syncea")) | \(ratio("mgwfbp")) | \(ratio("bytescheduler")) | \(ratio("ddp")) | \(ratio("horovod")) | "
          + (if $t.best then "\(($t.best / $r.lower_bound - 1 | if . < 0 then 0 else . end) * 10000 | round / 100)%" else "-" end)
          + " | " + (if $opt then "yes" else "" end) + " |"' "$rows"
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
    echo "Gap of \`best\` to the MODEL.md lower bound (rule 6), and the rows where \`best\` is proven optimal"
    echo "(its iteration meets the bound to 1e-9; the search then stops at once):"
    echo
    echo "| rows | count | proven optimal | mean gap | median gap | max gap | row of the max |"
    echo "|---|--:|--:|--:|--:|--:|---|"
    jq -r -s '
        def pct: . * 10000 | round / 100 | tostring + "%";
        def median: sort | if length % 2 == 1 then .[length / 2 | floor] else (.[length / 2 - 1] + .[length / 2]) / 2 end;
        map(select(.policy == "best") | . + {gap: (if .lower_bound > 0 then .iteration / .lower_bound - 1 | if . < 0 then 0 else . end else 0 end),
                                             synthetic: (.profile | startswith("synthetic"))}) as $b
        | [["barrier, shared profiles", ($b | map(select((.layerwise | not) and (.synthetic | not))))],
           ["layer-wise, shared profiles", ($b | map(select(.layerwise and (.synthetic | not))))],
           ["barrier, synthetic", ($b | map(select((.layerwise | not) and .synthetic)))],
           ["layer-wise, synthetic", ($b | map(select(.layerwise and .synthetic)))]][]
        | .[0] as $name | .[1] as $r | select(($r | length) > 0)
        | ($r | max_by(.gap)) as $w
        | "| \($name) | \($r | length) | \($r | map(select(.optimal)) | length) | \($r | map(.gap) | add / length | pct) | \($r | map(.gap) | median | pct) | \($w.gap | pct) | \($w.profile) \($w.net) \($w.ranks) |"' "$rows"
    echo
    jq -r -s 'map(select(.policy == "best") | .plan_seconds * 1000) | sort
        | "Planning time of `best` on these rows (it runs every other policy first): median \(.[length / 2 | floor] * 1000 | round / 1000) ms, max \(max * 1000 | round / 1000) ms."' "$rows"
    echo
    echo "## \`best\` against what users run today: \`ddp\` and \`horovod\`"
    echo
    echo "\`ddp\` is PyTorch DDP's default bucketing (1 MiB first bucket, then 25 MiB, in gradient-ready order),"
    echo "\`horovod\` Horovod's tensor fusion (1 ms cycles, 128 MiB threshold); docs/planner.md says how each is"
    echo "modelled (the \`horovod\` figure leaves out the wait for the next cycle, which flatters Horovod)."
    echo "Geometric means of best/ddp and best/horovod (iteration of the reference over that of \`best\`; 1x:"
    echo "no gain) over the shared profiles (synthetic ones left out), per link and rank count; \"largest\""
    echo "names the row of the largest best/ddp."
    echo
    echo "| net | ranks | barrier: best/ddp | best/horovod | layer-wise: best/ddp | best/horovod | all: best/ddp | best/horovod | rows where best = ddp | largest best/ddp |"
    echo "|---|--:|--:|--:|--:|--:|--:|--:|--:|---|"
    refs=$tmp/refs.json
    jq -s 'map(select(.profile | startswith("synthetic") | not))
        | group_by([.profile, .net, .ranks])
        | map((map({key: .policy, value: .iteration}) | from_entries) as $t
              | {profile: .[0].profile, net: .[0].net, ranks: .[0].ranks, layerwise: .[0].layerwise,
                 model: (.[0].profile | sub("-(v100|a100|h100|k80).*$"; "")),
                 ddp: ($t.ddp / $t.best), hvd: ($t.horovod / $t.best)})' "$rows" > "$refs"
    jq -r '
        def gm(f): if length == 0 then "-" else (map(f | log) | add / length | exp * 1000 | round / 1000 | tostring + "x") end;
        group_by([.net, .ranks])[]
        | (map(select(.layerwise | not))) as $b | (map(select(.layerwise))) as $l | max_by(.ddp) as $w
        | "| \(.[0].net) | \(.[0].ranks) | \($b | gm(.ddp)) | \($b | gm(.hvd)) | \($l | gm(.ddp)) | \($l | gm(.hvd)) | \(gm(.ddp)) | \(gm(.hvd)) | \(map(select(.ddp <= 1 + 1e-9)) | length) of \(length) | \($w.profile) \($w.ddp * 1000 | round / 1000)x |"' "$refs"
    echo
    echo "Per network (geometric mean over its GPU variants; each cell best/ddp, best/horovod):"
    echo
    ranks_list=$(jq -r '[.[].ranks] | unique | map(tostring) | join(" ")' "$refs")
    printf '| network | kind | net |'
    for r in $ranks_list; do printf ' %s ranks |' "$r"; done
    echo
    printf '|---|---|---|'
    for r in $ranks_list; do printf -- '--:|'; done
    echo
    jq -r '
        def gm(f): (map(f | log) | add / length | exp * 1000 | round / 1000 | tostring + "x");
        group_by([.model, .layerwise, .net])[]
        | "| \(.[0].model) | \(if .[0].layerwise then "layer-wise" else "barrier" end) | \(.[0].net) | "
          + ([group_by(.ranks)[] | "\(gm(.ddp)), \(gm(.hvd))"] | join(" | ")) + " |"' "$refs"
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
            | "| \($profile) | \(.policy) | \(.iteration * 1e6 | round / 1000) | \($w / .iteration * 1000 | round / 1000)x | \((.iteration / .lower_bound - 1 | if . < 0 then 0 else . end) * 10000 | round / 100)% | \(.blocks | length) |"'
    done
    echo
    echo "## On measured curves (\`--net-table\`)"
    echo
    echo "Each shared profile on each measured allreduce curve of $NET_TABLES (docs/model.md, \`--net-table\`):"
    echo "the plans are made from the model the runtime would fit on the curve (its call sizes plus the"
    echo "calibration sizes, read off the curve), then replayed on the curve itself. \`best\` predicted"
    echo "and on the curve (ms), its prediction error, and its speedup over \`ddp\` (DDP's default buckets)"
    echo "and \`wfbp\` on the curve; then the same with plans from one line fitted on the call sizes."
    echo
    echo "| profile | curve | best predicted | best on curve | error | x ddp | x wfbp | line: best on curve | line: error | line: x ddp |"
    echo "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|"
    if [ -d "$NET_TABLES" ] && [ -d "$PROFILES" ]; then
        for f in "$PROFILES"/*.json; do
            for t in "$NET_TABLES"/*.tsv; do
                fit=$("$SIM" "$f" --net-table "$t" --json)
                line=$("$SIM" "$f" --net-table "$t" --model line --json)
                jq -r -s --arg p "$(basename "$f" .json)" --arg t "$(basename "$t" .tsv)" --argjson line "$(jq -s . <<< "$line")" '
                    def pol($a; $n): $a | map(select(.policy == $n))[0];
                    def r3: . * 1000 | round / 1000;
                    pol(.; "best") as $b | pol(.; "ddp") as $d | pol(.; "wfbp") as $w
                    | pol($line; "best") as $lb | pol($line; "ddp") as $ld
                    | "| \($p) | \($t) | \($b.predicted_iteration * 1000 | r3) | \($b.curve_iteration * 1000 | r3) | \(($b.predicted_iteration / $b.curve_iteration - 1) * 10000 | round / 100)% | \($d.curve_iteration / $b.curve_iteration | r3)x | \($w.curve_iteration / $b.curve_iteration | r3)x | \($lb.curve_iteration * 1000 | r3) | \(($lb.predicted_iteration / $lb.curve_iteration - 1) * 10000 | round / 100)% | \($ld.curve_iteration / $lb.curve_iteration | r3)x |"' <<< "$fit"
            done
        done
    fi
    echo
    echo "## Time to compute a \`best\` plan"
    echo
    echo "Seeded synthetic profiles (\`usbyte-sim --synthetic N,SEED[,layerwise][,hard] --net 10gbe --ranks 8 --json\`,"
    echo "seeds $PLAN_SEEDS): barrier and layer-wise, ordinary and communication-bound (\`hard\`: the backward pass"
    echo "lasts 0.3-0.9 times the link's byte time alone, so no merging makes the profile compute-bound). The"
    echo "planning time of one run as the simulator measures it (\`plan_seconds\`: every policy, then the search),"
    echo "wall clock of this machine; median and max over the seeds and variants of a size, and per variant."
    echo
    echo "| calls | variant | runs | median ms | max ms | proven optimal | mean gap to LB | max gap to LB |"
    echo "|--:|---|--:|--:|--:|--:|--:|--:|"
    times=$tmp/times.jsonl
    : > "$times"
    for n in $PLAN_SIZES; do
        for variant in "" ",hard" ",layerwise" ",layerwise,hard"; do
            for seed in $PLAN_SEEDS; do
                "$SIM" --synthetic "$n,$seed$variant" --net 10gbe --ranks 8 --policy best --json |
                    jq -c --argjson n "$n" --arg v "${variant#,}" 'select(.policy == "best")
                        | {n: $n, variant: (if $v == "" then "barrier" else $v end), ms: (.plan_seconds * 1000), optimal,
                           gap: (.iteration / .lower_bound - 1 | if . < 0 then 0 else . end)}' >> "$times"
            done
        done
    done
    jq -r -s '
        def row($name): (map(.ms) | sort) as $t
            | "| \(.[0].n) | \($name) | \(length) | \($t[length / 2 | floor] * 1000 | round / 1000) | \($t | max * 1000 | round / 1000) | \(map(select(.optimal)) | length) | \(map(.gap) | add / length * 10000 | round / 100)% | \(map(.gap) | max * 10000 | round / 100)% |";
        group_by(.n)[] | (group_by(.variant)[] | row(.[0].variant)), row("**all**")' "$times"
} > "$tmp/out.md"
mkdir -p "$(dirname "$OUT")"
cp "$tmp/out.md" "$OUT"
cat "$OUT"
