# Sourced by the runtime's test scripts (tests/integration/runtime_*.sh): strict mode, the
# repository root as the working directory, BUILD and SAN, USBYTE_PRELOAD (preload-env.sh), a WORK
# directory removed at exit, `fail MESSAGE` and `need FILE...` (a missing build output fails with
# the hint to build), `same_results NAME BASE`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
BUILD=${BUILD:-build}
SAN=${SAN:-}
source tests/integration/preload-env.sh
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
need() {
    local f
    for f in "$@"; do
        [ -e "$f" ] || { echo "missing $f: build it first (make)"; exit 1; }
    done
}
# same_results NAME BASE (trainer outputs in $WORK/NAME.out): every rank's checksum of NAME equals BASE's.
same_results() {
    local got want
    got=$(grep -o 'rank [0-9]*\] checksum [0-9a-f]*' "$WORK/$1.out" | sort)
    want=$(grep -o 'rank [0-9]*\] checksum [0-9a-f]*' "$WORK/$2.out" | sort)
    [ -n "$want" ] && [ "$got" = "$want" ] || fail "$1: results differ from the run without usbyte: $got / $want"
}
