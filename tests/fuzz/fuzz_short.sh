#!/usr/bin/env bash
# The fuzzer's short pass in make test: 400 cases of one fixed seed from the in-tree profiles,
# so that it is the same everywhere; cases that match a named known defect (KNOWN in fuzz.py)
# are skipped, so that a planner fix or a new defect shows as a change here, not as noise.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
SIM=$BUILD/usbyte-sim
[ -x "$SIM" ] || { echo "missing $SIM: build it first (make)"; exit 1; }
exec python3 tests/fuzz/fuzz.py --sim "$SIM" --seed 1 --runs 400 --skip-known --corpus data/profiles
