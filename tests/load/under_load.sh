#!/usr/bin/env bash
# make test-load: the whole suite, ROUNDS times, each under HOGS busy processes (`yes >/dev/null`),
# then one line per test: how often it passed.  A test must not fail because the machine is busy
# (CI runs on a shared machine); this is how that is checked.  Not part of make test.
#
#   make test-load                      3 rounds, 2 hogs, the plain build
#   make test-load SAN=address,undefined ROUNDS=4 HOGS=2
#
# Each round's output is kept in $(BUILD)/load/round-N.out (a failing test's output in full).
set -u
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-3}
HOGS=${HOGS:-2}
BUILD=${BUILD:-build}
SAN=${SAN:-}
OUT=$BUILD/load
mkdir -p "$OUT"
hogs=()
stop_hogs() { ((${#hogs[@]})) && kill "${hogs[@]}" 2>/dev/null; wait 2>/dev/null; hogs=(); }
trap stop_hogs EXIT
for ((r = 1; r <= ROUNDS; r++)); do
    for ((h = 0; h < HOGS; h++)); do
        yes >/dev/null &
        hogs+=($!)
    done
    start=$(date +%s)
    make --no-print-directory test SAN="$SAN" >"$OUT/round-$r.out" 2>&1
    echo "round $r of $ROUNDS under $HOGS hogs: $(tail -1 "$OUT/round-$r.out") in $(($(date +%s) - start)) s"
    stop_hogs
done
python3 - "$OUT" "$ROUNDS" <<'PY'
import re, sys
out, rounds = sys.argv[1], int(sys.argv[2])
seen, passed = [], {}
for r in range(1, rounds + 1):
    for line in open("%s/round-%d.out" % (out, r), errors="replace"):
        m = re.match(r"(PASS|FAIL) (\S+)", line)
        if m:
            if m.group(2) not in passed:
                seen.append(m.group(2))
                passed[m.group(2)] = 0
            passed[m.group(2)] += m.group(1) == "PASS"
bad = [t for t in seen if passed[t] < rounds]
for t in seen:
    print("%-64s %d/%d" % (t, passed[t], rounds))
print("%d tests, %d passed every round%s" % (len(seen), len(seen) - len(bad), "; not: " + " ".join(bad) if bad else ""))
sys.exit(1 if bad else 0)
PY
