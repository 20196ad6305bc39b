#!/usr/bin/env bash
# The runtime's files: USBYTE_LOG_FILE naming a FIFO (with or without a reader) or a symbolic
# link is refused with one warning per rank and logging goes to standard error, never hanging in
# open(); a regular log file gets the lines.  Ranks given one USBYTE_REPORT path without %r each
# leave a whole report (the last one wins) and no temporary; a report path that is a directory,
# a device or a symbolic link is left as it is, with an error naming it; a report directory that
# does not exist is said once per rank at start-up.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
source tests/integration/preload-env.sh
TRAINER=$BUILD/trainers/ddp_like
for f in "$BUILD/libusbyte.so" "$TRAINER" "$BUILD/emu/emu-run"; do
    [ -e "$f" ] || { echo "missing $f: build it first (make)"; exit 1; }
done
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export USBYTE_EMU_ALPHA_US=200 USBYTE_EMU_GBPS=0.2 USBYTE_WARMUP=2 USBYTE_MODE=observe
ARGS=(--profile data/profiles/resnet50-v100-b64-barrier.json --iters 9 --time-scale 0.1 --bytes-scale 0.01)
run() { # NAME RANKS ENV...: runs the trainer with the variables, output in $WORK/NAME.out
    local name=$1 n=$2
    shift 2
    env LD_PRELOAD="$USBYTE_PRELOAD" "$@" "$BUILD/emu/emu-run" -n "$n" --timeout 120 -- "$TRAINER" "${ARGS[@]}" \
        >"$WORK/$name.out" 2>&1 || { sed 's/^/    | /' "$WORK/$name.out"; fail "$name: the run failed"; }
}
per_rank() { # FILE RANKS REGEX MIN [MAX]: each rank printed MIN to MAX (default MIN) lines matching REGEX
    for ((r = 0; r < $2; r++)); do
        local got
        got=$(grep -c "^\[rank $r\] usbyte\[$r\]: .*$3" "$1" || true)
        ((got >= $4 && got <= ${5:-$4})) \
            || { sed 's/^/    | /' "$1"; fail "$(basename "$1" .out): rank $r printed $got lines matching '$3', expected ${4}${5:+ to $5}"; }
    done
}

# 1. Log file: a FIFO without a reader (open would block forever without O_NONBLOCK).
mkfifo "$WORK/log.fifo"
run fifo 2 USBYTE_LOG=info USBYTE_REPORT="$WORK/fifo-%r.json" USBYTE_LOG_FILE="$WORK/log.fifo"
per_rank "$WORK/fifo.out" 2 'warning: USBYTE_LOG_FILE ".*log.fifo" is a FIFO.*; logging to standard error' 1
for r in 0 1; do   # the other (info) lines came to standard error
    grep "^\[rank $r\] usbyte\[$r\]: " "$WORK/fifo.out" | grep -qv 'warning: ' || fail "fifo: rank $r logged nothing else"
done
# 2. A FIFO with a reader: open succeeds, but it is not a regular file (writes could block).
# This shell holds the reading end open (read-write: Linux opens that without waiting) for the
# whole run, so that every rank finds a reader whenever it opens.
exec 3<>"$WORK/log.fifo"
run fifo-reader 2 USBYTE_REPORT="$WORK/fifo-%r.json" USBYTE_LOG_FILE="$WORK/log.fifo"
per_rank "$WORK/fifo-reader.out" 2 'warning: USBYTE_LOG_FILE ".*log.fifo" is not a regular file (a FIFO)' 1
python3 - <<'PY' || fail "log lines were written into the FIFO"
import os
os.set_blocking(3, False)
try:
    data = os.read(3, 4096)
except BlockingIOError:
    data = b""
assert not data, data[:200]
PY
exec 3<&-
# 3. A symbolic link planted at the log path is not followed.
echo keep >"$WORK/victim"
ln -s "$WORK/victim" "$WORK/log.link"
run log-link 2 USBYTE_REPORT="$WORK/link-%r.json" USBYTE_LOG_FILE="$WORK/log.link"
per_rank "$WORK/log-link.out" 2 'warning: USBYTE_LOG_FILE ".*log.link" is a symbolic link' 1
[ "$(cat "$WORK/victim")" = keep ] || fail "the log went through the symbolic link"
# 4. A regular log file per rank gets the lines; standard error none.
run log-file 2 USBYTE_LOG=info USBYTE_REPORT="$WORK/lf-%r.json" USBYTE_LOG_FILE="$WORK/log-%r.txt"
for r in 0 1; do
    grep -q "^usbyte\[$r\]: " "$WORK/log-$r.txt" || fail "log-$r.txt lacks the rank's lines"
done
grep -q 'usbyte\[' "$WORK/log-file.out" && fail "lines went to standard error despite the log file"

# 5. One report path for every rank: each run leaves one whole report and nothing else.
for n in 8 4 8; do
    rm -rf "$WORK/same" && mkdir "$WORK/same"
    run same-$n "$n" USBYTE_REPORT="$WORK/same/report.json"
    grep -E 'report: .*(cannot|failed)' "$WORK/same-$n.out" && fail "same path, $n ranks: a write failed"
    [ "$(grep -c 'has no %r: the '"$n"' ranks write one file' "$WORK/same-$n.out")" -eq 1 ] \
        || fail "same path, $n ranks: not exactly one warning that %r is missing"
    left=$(ls -A "$WORK/same")
    [ "$left" = report.json ] || fail "same path, $n ranks: left $(echo $left)"
    python3 - "$WORK/same/report.json" "$n" <<'PY' || fail "same path: not a whole report"
import json, sys
r = json.load(open(sys.argv[1]))
assert 0 <= r["rank"] < int(sys.argv[2]) and r["world_size"] == int(sys.argv[2]), (r["rank"], r["world_size"])
assert r["comms"][0]["state"] == "planned", r["comms"][0]["state"]
PY
done

# 6. Report paths that are not regular files are left as they are, with an error naming them.
mkdir "$WORK/rdir"
run rdir 2 USBYTE_REPORT="$WORK/rdir"
[ -d "$WORK/rdir" ] && [ -z "$(ls -A "$WORK/rdir")" ] || fail "the directory report path was changed"
[ -z "$(ls "$WORK" | grep 'rdir\..*partial' || true)" ] || fail "a temporary was left next to rdir"
# Once per rank: the report is written at planning and again at exit, the same error is said once.
per_rank "$WORK/rdir.out" 2 'report: .*rdir: exists and is a directory' 1
echo keep >"$WORK/victim2"
ln -s "$WORK/victim2" "$WORK/report.link"
run rlink 2 USBYTE_REPORT="$WORK/report.link"
[ -L "$WORK/report.link" ] && [ "$(cat "$WORK/victim2")" = keep ] || fail "the report went through or over the link"
if mknod "$WORK/null" c 1 3 2>/dev/null; then
    run rnull 2 USBYTE_REPORT="$WORK/null"
    [ -c "$WORK/null" ] || fail "the device report path was replaced"
    grep -q "null: exists and is a character device" "$WORK/rnull.out" || fail "no error for the device"
else
    echo "info: cannot make a device node here: the device case is covered by test_atomic_write"
fi
# 7. A report directory that does not exist, or is not writable: said once per rank at start-up,
# naming the directory, and not again with a temporary's name after the warm-up.
run rmissing 2 USBYTE_REPORT="$WORK/no-such-dir/r-%r.json"
per_rank "$WORK/rmissing.out" 2 "the directory \"$WORK/no-such-dir\" does not exist" 1
grep -q 'partial\|temporary' "$WORK/rmissing.out" && { sed 's/^/    | /' "$WORK/rmissing.out" | grep usbyte; fail "a temporary's name was reported"; }
if [ "$(id -u)" -ne 0 ]; then
    mkdir "$WORK/ro" && chmod 555 "$WORK/ro"
    run rreadonly 2 USBYTE_REPORT="$WORK/ro/r-%r.json"
    per_rank "$WORK/rreadonly.out" 2 "the directory \"$WORK/ro\" is not writable" 1
else
    echo "info: as root every directory is writable: the read-only case cannot be made here"
fi
echo "runtime files: ok"
