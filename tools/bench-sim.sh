#!/usr/bin/env bash
# The planner benchmark behind `make bench-sim`: every profile of data/profiles
# (USBYTE_PROFILES overrides) and a few seeded synthetic ones, at 8, 16, 64 and 128 ranks on the
# 10gbe and 100gb-ib presets: each policy's predicted iteration time, the speedup of `best`
# over wfbp, syncea, mgwfbp, bytescheduler and what users run today (ddp, ddp-tuned, horovod), its
# gap to the lower bound of docs/model.md and whether it is proven optimal; a summary of those gaps on
# barrier and layer-wise rows; the headline: gains of best over DDP's default and tuned buckets
# (geometric means and maxima per network model, link and rank count); the geometric means of
# best/ddp, best/ddp-tuned and best/horovod per network and the tuned bucket_cap_mb; the profiles
# that carry their own measured net under it; every shared profile on each measured curve of
# data/net (USBYTE_NET_TABLES overrides), plans from the fitted model and from one line, replayed
# on the curve (usbyte-sim --net-table); then the time to compute a `best` plan for 100,
# 1,000 and 10,000 calls on synthetic profiles, ordinary and communication-bound ("hard"), and
# that of ddp-tuned's sweep.
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

# One JSON line per (input, net, ranks, policy): the plan object plus where it came from.  The
# (netmodel) names how the link is costed: "formula" is the preset's alpha/beta by the ring formula; runs
# under another network model add rows with their own name, and every table groups by it.
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
            jq -c --arg profile "$label" --arg net "$net" --argjson layerwise "$layerwise" --arg netmodel formula \
                '{profile: $profile, netmodel: $netmodel, net: $net, ranks, policy, iteration, lower_bound, optimal, layerwise: $layerwise,
                  plan_seconds, params: (.params // ""), blocks: (.blocks | length)}' >> "$rows"
    done
done

# The shared profiles on each measured curve (usbyte-sim --net-table): plans from the model fitted
# on the curve, replayed on it; kept per (profile, curve) for the curves' table below, and one line
# per policy in curve_rows (network model "curve", the curve's name as net, its ranks, the
# iteration on the curve) for the headline.
curve_rows=$tmp/curve_rows.jsonl
: > "$curve_rows"
if [ -d "$NET_TABLES" ] && [ -d "$PROFILES" ]; then
    for f in "$PROFILES"/*.json; do
        for t in "$NET_TABLES"/*.tsv; do
            p=$(basename "$f" .json) c=$(basename "$t" .tsv)
            "$SIM" "$f" --net-table "$t" --json > "$tmp/curve-$p-$c.jsonl"
            jq -c --arg profile "$p" --arg net "$c" --argjson ranks "$(sed -n 's/^# ranks: *\([0-9]*\).*/\1/p' "$t" | head -1)" \
                --argjson layerwise "$(jq '(.forward // [0]) | length > 1' "$f")" \
                '{profile: $profile, netmodel: "curve", net: $net, ranks: $ranks, policy, iteration: .curve_iteration,
                  predicted: .predicted_iteration, layerwise: $layerwise, params: ""}' "$tmp/curve-$p-$c.jsonl" >> "$curve_rows"
        done
    done
fi

# The registry's order, as the simulator printed it (never a hand-written list of names).
policies=$(jq -r -s 'reduce .[].policy as $p ([]; if index([$p]) then . else . + [$p] end) | join(" ")' "$rows")

{
    echo "# usbyte-sim benchmark"
    echo
    echo "Made by \`make bench-sim\` (tools/bench-sim.sh; \`$SIM\` under the timing model of docs/model.md) on"
    echo "$(date -u +%Y-%m-%d), $(uname -m), $(nproc) CPUs. Profiles: \`$PROFILES\` (FLOP-derived, except the"
    echo "measured GoogleNet trace) and seeded synthetic ones (\`--synthetic N,SEED[,layerwise]\`). Networks: the"
    echo "\`10gbe\` and \`100gb-ib\` presets (docs/planner.md gives their sources), converted to alpha/beta for each"
    echo "rank count by the ring formula. Every profile is replayed under the preset, not under its own \`net\`."
    echo
    echo "## Predicted iteration time (ms) per policy, and the speedup of \`best\`"
    echo
    printf '| profile | net | ranks |'
    for p in $policies; do printf ' %s |' "$p"; done
    echo ' lower bound | best/wfbp | best/syncea | best/mgwfbp | best/bytescheduler | best/ddp | best/ddp-tuned | best/horovod | best gap to LB | optimal |'
    printf '|---|---|--:|'
    for p in $policies; do printf -- '--:|'; done
    echo '--:|--:|--:|--:|--:|--:|--:|--:|--:|:-:|'
    jq -r -s --arg policies "$policies" '
        ($policies | split(" ")) as $pol
        | group_by([.profile, .netmodel, .net, .ranks]) | sort_by(.[0].profile, .[0].net, .[0].ranks)[]
        | (map({key: .policy, value: .iteration}) | from_entries) as $t
        | (map(select(.policy == "best"))[0].optimal) as $opt
        | .[0] as $r
        | def ratio($a): if $t[$a] and $t.best then "\($t[$a] / $t.best * 1000 | round / 1000)x" else "-" end;
          "| \($r.profile) | \($r.net) | \($r.ranks) | "
          + ([$pol[] | if $t[.] then ($t[.] * 1e6 | round / 1000 | tostring) else "-" end] | join(" | "))
          + " | \($r.lower_bound * 1e6 | round / 1000) | \(ratio("wfbp")) | \(ratio("syncea")) | \(ratio("mgwfbp")) | \(ratio("bytescheduler")) | \(ratio("ddp")) | \(ratio("ddp-tuned")) | \(ratio("horovod")) | "
          + (if $t.best then "\(($t.best / $r.lower_bound - 1 | if . < 0 then 0 else . end) * 10000 | round / 100)%" else "-" end)
          + " | " + (if $opt then "yes" else "" end) + " |"' "$rows"
    echo
    echo "## Summary"
    echo
    jq -r -s '
        group_by([.profile, .netmodel, .net, .ranks])
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
    echo "Gap of \`best\` to the lower bound of docs/model.md (rule 6), and the rows where \`best\` is proven optimal"
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
    echo "## \`best\` against what users run today: \`ddp\`, \`ddp-tuned\` and \`horovod\`"
    echo
    echo "\`ddp\` is PyTorch DDP's default bucketing (1 MiB first bucket, then 25 MiB, in gradient-ready order),"
    echo "\`ddp-tuned\` the same buckets at the best \`bucket_cap_mb\` of a sweep (every MiB from 1 to 1000, the"
    echo "first bucket 1 MiB or equal to the cap): what a DDP user gets by tuning DDP's one knob for this"
    echo "profile and link; \`horovod\` Horovod's tensor fusion (1 ms cycles, 128 MiB threshold). docs/planner.md"
    echo "says how each is modelled (the \`horovod\` figure leaves out the wait for the next cycle, which"
    echo "flatters Horovod). Every figure is over the shared profiles (synthetic ones left out); the gain of"
    echo "\`best\` over a reference is the reference's iteration over that of \`best\`, minus one."
    echo
    echo "### Headline: over DDP's default and tuned buckets"
    echo
    echo "Barrier consumers: the next forward waits for every gradient (the \`-barrier\` profiles, and"
    echo "GoogleNet's); per-layer consumers: each layer's forward waits only for its own gradients. Geometric"
    echo "mean of the gain over the profiles of each kind, then the largest (its row in brackets). Network"
    echo "model \`formula\`: the preset's alpha/beta by the ring formula, as in every table above; \`curve\`:"
    echo "a measured allreduce curve of $NET_TABLES at its own rank count, every policy planned under the model"
    echo "fitted on the curve and timed on the curve itself (\`--net-table\`, as in \"On measured curves\" below),"
    echo "\`ddp-tuned\`'s cap included: a user tuning on the real network could pick another cap, and \`best\`"
    echo "is never behind \`ddp-tuned\` only under the model it planned with, so on a curve it can be (a"
    echo "negative gain)."
    echo
    echo "| network model | net | ranks | barrier: over ddp | max | over ddp-tuned | max | per-layer: over ddp | max | over ddp-tuned | max | rows where ddp-tuned is as fast (faster) |"
    echo "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
    refs=$tmp/refs.json
    cat "$rows" "$curve_rows" | jq -s 'map(select(.profile | startswith("synthetic") | not))
        | group_by([.profile, .netmodel, .net, .ranks])
        | map((map({key: .policy, value: .iteration}) | from_entries) as $t
              | (map(select(.policy == "ddp-tuned"))[0].params) as $tp
              | {profile: .[0].profile, netmodel: .[0].netmodel, net: .[0].net, ranks: .[0].ranks, layerwise: .[0].layerwise,
                 model: (.[0].profile | sub("-(v100|a100|h100|k80).*$"; "")),
                 ddp: ($t.ddp / $t.best), tuned: ($t["ddp-tuned"] / $t.best), hvd: ($t.horovod / $t.best),
                 cap: (($tp // "") | capture("bucket_cap_mb=(?<c>[0-9.]+) first_bucket_mb=(?<f>[0-9.]+)") // {c: "?", f: "?"})})' > "$refs"
    jq -r '
        def pct: (. - 1) * 1000 | round / 10 | if . < 0 then "\(.)%" else "+\(.)%" end;
        def gm(f): if length == 0 then "-" else (map(f | log) | add / length | exp | pct) end;
        def mx(f): if length == 0 then "-" else (max_by(f) | "\(f | pct) (\(.profile))") end;
        group_by([.netmodel, .net, .ranks])[]
        | (map(select(.layerwise | not))) as $b | (map(select(.layerwise))) as $l
        | "| \(.[0].netmodel) | \(.[0].net) | \(.[0].ranks) | \($b | gm(.ddp)) | \($b | mx(.ddp)) | \($b | gm(.tuned)) | \($b | mx(.tuned)) | \($l | gm(.ddp)) | \($l | mx(.ddp)) | \($l | gm(.tuned)) | \($l | mx(.tuned)) | \(map(select(.tuned <= 1 + 1e-9)) | length) of \(length) (\(map(select(.tuned < 1 - 1e-9)) | length)) |"' "$refs"
    echo
    echo "In one sentence per network model (the ranges run over the links and rank counts of the table, each"
    echo "figure a geometric mean over the profiles of a kind; README's Status paragraph quotes these lines):"
    echo
    jq -r '
        def pct: (. - 1) * 1000 | round / 10 | if . < 0 then tostring else "+\(.)" end;
        def gms(f): group_by([.net, .ranks]) | map(map(f | log) | add / length | exp);
        def range(f): if length == 0 then "-" else (gms(f) | if min >= 1 then "\(min | pct)-\(max | pct | ltrimstr("+"))%" else "\(min | pct)% to \(max | pct)%" end) end;
        def most(f): if length == 0 then "-" else "\(map(f) | max | pct)%" end;
        group_by(.netmodel)[]
        | (map(select(.tuned < 1 - 1e-9)) | length) as $faster | length as $n
        | (map(select(.layerwise | not))) as $b | (map(select(.layerwise))) as $l
        | "- \(.[0].netmodel): over DDP'"'"'s default buckets `best` gains \($b | range(.ddp)) with barrier consumers (at most \($b | most(.ddp))) and \($l | range(.ddp)) with per-layer consumers (at most \($l | most(.ddp))); over DDP at its best `bucket_cap_mb` \($b | range(.tuned)) with barrier consumers (at most \($b | most(.tuned))) and \($l | range(.tuned)) with per-layer consumers (at most \($l | most(.tuned)))"
          + (if $faster > 0 then "; on \($faster) of \($n) rows DDP at its best cap is the faster." else "." end)' "$refs"
    echo
    echo "Against Horovod and across both kinds: geometric means of best/ddp, best/ddp-tuned and best/horovod"
    echo "(1x: no gain) per link and rank count; \"largest\" names the row of the largest best/ddp-tuned."
    echo
    echo "| network model | net | ranks | barrier: best/horovod | per-layer: best/horovod | all: best/ddp | best/ddp-tuned | best/horovod | largest best/ddp-tuned |"
    echo "|---|---|--:|--:|--:|--:|--:|--:|---|"
    jq -r '
        def gm(f): if length == 0 then "-" else (map(f | log) | add / length | exp * 1000 | round / 1000 | tostring + "x") end;
        group_by([.netmodel, .net, .ranks])[]
        | (map(select(.layerwise | not))) as $b | (map(select(.layerwise))) as $l | max_by(.tuned) as $w
        | "| \(.[0].netmodel) | \(.[0].net) | \(.[0].ranks) | \($b | gm(.hvd)) | \($l | gm(.hvd)) | \(gm(.ddp)) | \(gm(.tuned)) | \(gm(.hvd)) | \($w.profile) \($w.tuned * 1000 | round / 1000)x |"' "$refs"
    echo
    echo "Per network, network model \`formula\` (geometric mean over its GPU variants; each cell best/ddp,"
    echo "best/ddp-tuned, best/horovod):"
    echo
    formula=$tmp/refs-formula.json
    jq 'map(select(.netmodel == "formula"))' "$refs" > "$formula"
    ranks_list=$(jq -r '[.[].ranks] | unique | map(tostring) | join(" ")' "$formula")
    # ranks_header COLUMN...: a table's header row, the given columns and then one per rank count.
    ranks_header() {
        printf '|'
        for c in "$@"; do printf ' %s |' "$c"; done
        for r in $ranks_list; do printf ' %s ranks |' "$r"; done
        printf '\n|'
        for c in "$@"; do printf -- '---|'; done
        for r in $ranks_list; do printf -- '--:|'; done
        echo
    }
    ranks_header network kind "network model" net
    jq -r '
        def gm(f): (map(f | log) | add / length | exp * 1000 | round / 1000 | tostring + "x");
        group_by([.model, .layerwise, .netmodel, .net])[]
        | "| \(.[0].model) | \(if .[0].layerwise then "per-layer" else "barrier" end) | \(.[0].netmodel) | \(.[0].net) | "
          + ([group_by(.ranks)[] | "\(gm(.ddp)), \(gm(.tuned)), \(gm(.hvd))"] | join(" | ")) + " |"' "$formula"
    echo
    echo "The \`bucket_cap_mb\` that \`ddp-tuned\` chose per profile, network model \`formula\` (MiB; \"=\": the"
    echo "first bucket equal to the cap, otherwise 1 MiB; 25 is DDP's default, kept on a tie):"
    echo
    ranks_header profile net
    jq -r 'group_by([.profile, .net])[]
        | "| \(.[0].profile) | \(.[0].net) | "
          + ([sort_by(.ranks)[] | "\(.cap.c)\(if .cap.f == .cap.c and .cap.c != "1" then "=" else "" end)"] | join(" | ")) + " |"' "$formula"
    echo
    jq -r -s 'map(select(.policy == "ddp-tuned") | .plan_seconds * 1000) | sort
        | "Planning time of `ddp-tuned` on these rows (its sweep): median \(.[length / 2 | floor] * 1000 | round / 1000) ms, max \(max * 1000 | round / 1000) ms."' "$rows"
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
                fit=$(cat "$tmp/curve-$(basename "$f" .json)-$(basename "$t" .tsv).jsonl")
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
    echo "The last two columns time \`ddp-tuned\` alone on the same profiles (\`--policy ddp-tuned\`): its sweep,"
    echo "which \`best\`'s time includes, and the number of distinct plans it evaluated (median)."
    echo
    echo "| calls | variant | runs | median ms | max ms | proven optimal | mean gap to LB | max gap to LB | ddp-tuned median ms, max ms | ddp-tuned plans evaluated |"
    echo "|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|"
    times=$tmp/times.jsonl
    : > "$times"
    for n in $PLAN_SIZES; do
        for variant in "" ",hard" ",layerwise" ",layerwise,hard"; do
            for seed in $PLAN_SEEDS; do
                tuned=$("$SIM" --synthetic "$n,$seed$variant" --net 10gbe --ranks 8 --policy ddp-tuned --json |
                    jq -c 'select(.policy == "ddp-tuned") | {ms: (.plan_seconds * 1000),
                           plans: (.params | capture("; (?<p>[0-9]+) distinct plans") | .p | tonumber)}')
                "$SIM" --synthetic "$n,$seed$variant" --net 10gbe --ranks 8 --policy best --json |
                    jq -c --argjson n "$n" --arg v "${variant#,}" --argjson tuned "$tuned" 'select(.policy == "best")
                        | {n: $n, variant: (if $v == "" then "barrier" else $v end), ms: (.plan_seconds * 1000), optimal,
                           gap: (.iteration / .lower_bound - 1 | if . < 0 then 0 else . end), tuned: $tuned}' >> "$times"
            done
        done
    done
    jq -r -s '
        def row($name): (map(.ms) | sort) as $t
            | "| \(.[0].n) | \($name) | \(length) | \($t[length / 2 | floor] * 1000 | round / 1000) | \($t | max * 1000 | round / 1000) | \(map(select(.optimal)) | length) | \(map(.gap) | add / length * 10000 | round / 100)% | \(map(.gap) | max * 10000 | round / 100)% | \((map(.tuned.ms) | sort) as $d | "\($d[length / 2 | floor] * 1000 | round / 1000), \($d | max * 1000 | round / 1000)") | \(map(.tuned.plans) | sort | .[length / 2 | floor]) |";
        group_by(.n)[] | (group_by(.variant)[] | row(.[0].variant)), row("**all**")' "$times"
} > "$tmp/out.md"
mkdir -p "$(dirname "$OUT")"
cp "$tmp/out.md" "$OUT"
cat "$OUT"
