#!/usr/bin/env bash
# `ddp-tuned` on the benchmark profiles (data/profiles) and seeded synthetic ones, as bench-sim
# runs them (both presets, the smallest and largest rank counts): `best` is never slower than
# `ddp-tuned`, which is never slower than `ddp`; the setting that ddp-tuned names in its params,
# given back to usbyte-sim as DDP's caps, gives `ddp` the same iteration and blocks.
set -euo pipefail
BUILD=${BUILD:-build}
SIM=$BUILD/usbyte-sim
[ -x "$SIM" ] || { echo "missing $SIM (make $SIM)"; exit 1; }
command -v jq > /dev/null || { echo "needs jq"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

inputs=()
for f in data/profiles/*.json; do inputs+=("$f"); done
[ ${#inputs[@]} -ge 10 ] || fail "only ${#inputs[@]} benchmark profiles in data/profiles"
for s in 200,1 200,2,layerwise 300,5,hard 300,6,layerwise,hard 150,8,layerwise; do inputs+=("synthetic:$s"); done
rows=0
for input in "${inputs[@]}"; do
    case $input in synthetic:*) src=(--synthetic "${input#synthetic:}") ;; *) src=("$input") ;; esac
    for net in 10gbe 100gb-ib; do
        # One line per rank count: ranks, best, ddp-tuned, ddp, ddp-tuned's blocks and params.
        "$SIM" "${src[@]}" --net "$net" --sweep ranks=8,128 --json | jq -r -s 'group_by(.ranks)[]
            | (map({key: .policy, value: .}) | from_entries) as $p
            | "\($p.best.ranks) \($p.best.iteration) \($p["ddp-tuned"].iteration) \($p.ddp.iteration) \($p["ddp-tuned"].blocks | length) \($p["ddp-tuned"].params)"' > "$tmp/lines"
        while read -r ranks best tuned ddp nblocks params; do
            what="$input $net $ranks"
            rows=$((rows + 1))
            awk -v b="$best" -v t="$tuned" 'BEGIN { exit !(b <= t) }' || fail "$what: best $best slower than ddp-tuned $tuned"
            awk -v t="$tuned" -v d="$ddp" 'BEGIN { exit !(t <= d) }' || fail "$what: ddp-tuned $tuned slower than ddp $ddp"
            cap=$(sed -n 's/^bucket_cap_mb=\([0-9.]*\) first_bucket_mb=\([0-9.]*\) .*/\1/p' <<< "$params")
            first=$(sed -n 's/^bucket_cap_mb=\([0-9.]*\) first_bucket_mb=\([0-9.]*\) .*/\2/p' <<< "$params")
            if [ -z "$cap" ] || [ -z "$first" ]; then fail "$what: params '$params' name no setting"; continue; fi
            [ "$first" = 1 ] || [ "$first" = "$cap" ] || fail "$what: first bucket $first MiB is neither 1 MiB nor the cap $cap"
            again=$("$SIM" "${src[@]}" --net "$net" --ranks "$ranks" --policy ddp --ddp-bucket-cap-mb "$cap" \
                --ddp-first-bucket-mb "$first" --json | jq -r 'select(.policy == "ddp") | "\(.iteration) \(.blocks | length)"')
            [ "$again" = "$tuned $nblocks" ] || fail "$what: ddp at cap $cap MiB, first $first MiB gives '$again', ddp-tuned '$tuned $nblocks'"
        done < "$tmp/lines"
    done
done
[ "$rows" -ge 60 ] || fail "only $rows rows checked"
[ "$failures" -eq 0 ] && echo "sim_ddp_tuned: $rows rows, best <= ddp-tuned <= ddp, the named setting reproduces ddp-tuned"
exit $(( failures > 0 ))
