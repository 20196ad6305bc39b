#!/usr/bin/env bash
# The emulator's network knobs (docs/emulator-nccl.md, docs/emulator-cuda.md), measured:
#  - USBYTE_EMU_NET: each allreduce's modelled time (the op log's model_end - start) is the
#    table's value (first row below it, linear between rows, proportional above the last, the
#    in-place column for in-place calls) on 2 ranks and on 3, and the stream time between events
#    around it, less what the op log says the emulator added, is within 10% + 2 ms of it (as
#    emu_nccl_timing);
#  - a bad table: one line per process naming the file and the line, and the formula's times;
#  - USBYTE_EMU_JITTER_PCT: every factor (modelled / table) within the band, the same in a
#    second run, others with another seed, different across ranks;
#  - USBYTE_EMU_INTERFERENCE: many short host functions beside one allreduce take F x their
#    run, not a sleep's granularity each;
#  - USBYTE_EMU_INTERFERENCE: a host function and a kernel beside an allreduce of their device
#    take F x the overlap (from the op log's arrival and end of the allreduce and the function's
#    own clock) longer than the function ran, beyond the extra a function alone shows (the
#    measured baseline); compute alone and compute on another device beside it are not
#    stretched; with F = 0 nothing is.  Medians of 5 repetitions (a busy machine that delays two
#    workers by milliseconds is outvoted), within 10% + 2 ms, and the added time may exceed that
#    by the lateness with which the function's own sleep woke (measured: the machine's load).
set -euo pipefail
cd "$(dirname "$0")/../../.."
B=${BUILD:-build}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
PROG="$B/tests/emu/integration/emu_net"
SIZES=(4096 4096:i 524288 2097152:i 8388608 8388608:i)
printf '# source: emu_net.sh\n# columns: bytes\tus\tin_place_us\n65536\t20000\t10000\n1048576\t40000\t30000\n4194304\t60000\t50000\n' >"$WORK/net.tsv"
printf '# a row out of order\n65536\t20000\n1024\t30000\n' >"$WORK/bad.tsv"

# run NAME RANKS ARGS...: output in $WORK/NAME.out, stderr in NAME.err, op logs NAME-<rank>.log
run() {
    local name=$1 n=$2
    shift 2
    USBYTE_EMU_OPLOG="$WORK/$name-%r.log" "$B/emu/emu-run" -n "$n" --timeout 120 -- "$PROG" "$@" \
        >"$WORK/$name.out" 2>"$WORK/$name.err" || { cat "$WORK/$name.out" "$WORK/$name.err"; exit 1; }
    [ "$(grep -c 'net: done' "$WORK/$name.out")" -eq "$n" ] || { cat "$WORK/$name.out" "$WORK/$name.err"; exit 1; }
}

USBYTE_EMU_NET="$WORK/net.tsv" run table 2 curve "${SIZES[@]}"
USBYTE_EMU_NET="$WORK/net.tsv" run table3 3 curve 524288 8388608:i
USBYTE_EMU_NET="$WORK/bad.tsv" run bad 2 curve 4096 524288
USBYTE_EMU_NET="$WORK/net.tsv" USBYTE_EMU_JITTER_PCT=20 run jitter 2 curve "${SIZES[@]}"
USBYTE_EMU_NET="$WORK/net.tsv" USBYTE_EMU_JITTER_PCT=20 run jitter-again 2 curve "${SIZES[@]}"
USBYTE_EMU_NET="$WORK/net.tsv" USBYTE_EMU_JITTER_PCT=20 USBYTE_EMU_JITTER_SEED=7 run jitter-seed 2 curve "${SIZES[@]}"
# allreduces of 2 x 25 ms on 2 ranks (the formula) beside 80 ms of compute
USBYTE_EMU_ALPHA_US=25000 USBYTE_EMU_INTERFERENCE=0.5 run interference 2 interference 80
USBYTE_EMU_ALPHA_US=25000 run no-interference 2 interference 80
# 100 host functions of 50 us beside one allreduce of 50 ms: F x their time, not a sleep's
# granularity (~50 us) per function
USBYTE_EMU_ALPHA_US=25000 USBYTE_EMU_INTERFERENCE=0.1 run small-beside 2 small-ops 100 50
USBYTE_EMU_ALPHA_US=25000 run small-alone 2 small-ops 100 50

python3 - "$WORK" <<'EOF'
import glob, os, re, sys

work = sys.argv[1]
failed = []


def check(ok, msg):
    print(("ok   " if ok else "FAIL ") + msg)
    if not ok:
        failed.append(msg)


def table(path):
    rows = []
    for line in open(path):
        if line.startswith("#") or not line.strip():
            continue
        rows.append([float(x) for x in line.rstrip("\n").split("\t")])
    return rows


def interp(rows, m, in_place):
    col = 2 if in_place and len(rows[0]) > 2 else 1
    if m <= rows[0][0]:
        return rows[0][col]
    if m >= rows[-1][0]:
        return rows[-1][col] * m / rows[-1][0]
    for lo, hi in zip(rows, rows[1:]):
        if lo[0] <= m <= hi[0]:
            return lo[col] + (m - lo[0]) / (hi[0] - lo[0]) * (hi[col] - lo[col])


def oplog(name):
    """{rank: {index: (bytes, queued, arrival, start, data_end, model_end, end)}}"""
    logs = {}
    for path in glob.glob(os.path.join(work, name + "-*.log")):
        for line in open(path):
            if line.startswith("#"):
                continue
            f = line.split()
            logs.setdefault(int(f[1]), {})[int(f[3])] = tuple(int(x) for x in f[5:12])
    return logs


def lines(name, head):
    out = []
    for line in open(os.path.join(work, name + ".out")):
        m = re.match(r"\[rank (\d+)\] %s (.*)" % head, line)
        if m:
            out.append((int(m.group(1)), m.group(2).split()))
    return out


def pos(x):
    return max(x, 0)


def curve(name):
    """[(rank, index, bytes, in_place, modelled_ms, measured_ms)]: measured = event time less
    what the op log says the emulator and this host added (emu_timing.c's accounting)."""
    log, res = oplog(name), []
    for rank, f in lines(name, "op"):
        index, nbytes, in_place, ev_ms, recorded, end_recorded = int(f[0]), int(f[1]), int(f[2]), float(f[3]), int(f[4]), int(f[5])
        r = log[rank][index]
        prev_end = log[rank][index - 1][6]
        queued, start, model_end, end = r[1], r[3], r[5], r[6]
        stamped = max(recorded, prev_end)
        excess = pos(queued - stamped) + pos(start - queued) + pos(end - model_end) + pos(end_recorded - end)
        res.append((rank, index, nbytes, in_place, (model_end - start) / 1e6, ev_ms - excess / 1e6))
    return res


rows = table(os.path.join(work, "net.tsv"))
for name in ("table", "table3"):
    got = curve(name)
    check(len(got) > 0, "%s: measurements" % name)
    for rank, index, nbytes, in_place, model_ms, meas_ms in got:
        want = interp(rows, nbytes, in_place) / 1e3
        check(abs(model_ms - want) <= 2e-6, "%s rank %d op %d: %d bytes%s modelled %.4f ms, table %.4f ms"
              % (name, rank, index, nbytes, " in place" if in_place else "", model_ms, want))
        slack = 0.10 * want + 2.0
        check(abs(meas_ms - want) <= slack, "%s rank %d op %d: measured %.3f ms, table %.3f ms (+-%.3f)"
              % (name, rank, index, meas_ms, want, slack))

# A bad file: one line per process naming it and the line, and the formula (2 ranks, 20 us, 10 GB/s).
err = open(os.path.join(work, "bad.err")).read() + open(os.path.join(work, "bad.out")).read()
bad_lines = [l for l in err.splitlines() if "USBYTE_EMU_NET" in l]
check(len(bad_lines) == 2 and all("bad.tsv: line 3: bytes 1024 not above the previous row\'s 65536" in l
                                  and "using the alpha-beta formula" in l for l in bad_lines),
      "bad table: one line per process: %r" % bad_lines)
for rank, index, nbytes, in_place, model_ms, meas_ms in curve("bad"):
    want = (2 * 20 + 2 * 0.5 * nbytes / 1e4) / 1e3
    check(abs(model_ms - want) <= 2e-6, "bad table rank %d op %d: modelled %.4f ms, formula %.4f ms" % (rank, index, model_ms, want))

# Jitter: within the band, repeatable per seed, different across seeds and ranks.
def factors(name):
    return {(r, i): model_ms / (interp(rows, b, ip) / 1e3) for r, i, b, ip, model_ms, _ in curve(name)}

a, b, c = factors("jitter"), factors("jitter-again"), factors("jitter-seed")
check(len(a) == 2 * 6 and a.keys() == b.keys() == c.keys(), "jitter: the same operations in each run")
check(all(0.8 - 1e-6 <= f <= 1.2 + 1e-6 for f in list(a.values()) + list(c.values())),
      "jitter: every factor in [0.8, 1.2]: %s" % sorted(round(f, 4) for f in a.values()))
check(all(abs(a[k] - b[k]) <= 1e-6 for k in a), "jitter: the same factors in a second run")
check(sum(abs(a[k] - c[k]) > 1e-3 for k in a) >= len(a) - 1, "jitter: other factors with another seed")
check(sum(abs(a[(0, i)] - a[(1, i)]) > 1e-3 for (r, i) in a if r == 0) >= 5, "jitter: the ranks draw different factors")
check(sum(abs(f - 1) > 0.01 for f in a.values()) >= 8, "jitter: the factors are not 1")

# Interference: extra time = F x overlap beside an allreduce of the device, nothing otherwise.
def median(v):
    v = sorted(v)
    return v[len(v) // 2]


def compute(name, factor):
    log = oplog(name)
    got = {}   # (rank, kind): [(extra ms beyond the function's own run, overlap ms)], one per repetition
    for rank, f in lines(name, "compute"):
        kind, index, ev_ms, fs, fe = f[0], int(f[1]), float(f[2]), int(f[3]), int(f[4])
        overlap = 0.0
        if index >= 0:
            r = log[rank][index]
            overlap = pos(min(fe, r[6]) - max(fs, r[2])) / 1e6
        got.setdefault((rank, kind), []).append((ev_ms - (fe - fs) / 1e6, overlap, max((fe - fs) / 1e6 - 80, 0)))
    for rank in sorted({r for r, _ in got}):
        base = median([e for e, _, _ in got[(rank, "alone")]])
        check(len(got[(rank, "alone")]) == 5 and median([e - late for e, _, late in got[(rank, "alone")]]) <= 0.1 * 80 + 2.0,
              "%s rank %d: compute alone: %.3f ms beyond its own run" % (name, rank, base))
        for kind in ("host", "kernel", "other-device"):
            reps = got[(rank, kind)]
            want_of = (lambda o: factor * o) if kind != "other-device" else (lambda o: 0.0)
            # A busy machine wakes the emulator's added sleep late as it woke the function's own
            # 80 ms sleep late: that lateness, measured, may come on top, never below.
            miss = median([e - base - want_of(o) for e, o, _ in reps])
            miss_late = median([e - base - want_of(o) - late for e, o, late in reps])
            want = median([want_of(o) for _, o, _ in reps])
            overlap = median([o for _, o, _ in reps])
            slack = 0.1 * want + 2.0
            check(len(reps) == 5 and miss >= -slack and miss_late <= slack and overlap > 20,
                  "%s rank %d: %s beside an allreduce (overlap %.3f ms): %.3f ms added beyond the baseline, want "
                  "%.3f (-%.3f, +%.3f and the function's own lateness, median %.3f)" % (
                      name, rank, kind, overlap, want + miss, want, slack, slack, median([l for _, _, l in reps])))

compute("interference", 0.5)
compute("no-interference", 0.0)

# Many short functions: what the stream held beyond the functions' own run, less what it held
# without interference (the worker's dispatch between them), is F = 0.1 x their run inside the
# allreduce.
def small(name):
    log = oplog(name)
    out = {}
    for rank, f in lines(name, "small"):
        index, ev_ms, fn_ms, first, last = int(f[0]), float(f[1]), float(f[2]), int(f[3]), int(f[4])
        r = log[rank][index]
        # The functions are alike: the part of their span inside the allreduce is the part of
        # their run beside it.
        inside = pos(min(last, r[6]) - max(first, r[2])) / max(last - first, 1)
        out[rank] = (ev_ms - fn_ms, fn_ms, inside)
    return out

beside, alone = small("small-beside"), small("small-alone")
for rank in sorted(beside):
    held, fn_ms, inside = beside[rank]
    want = 0.1 * fn_ms * inside
    added = held - alone[rank][0]
    check(inside > 0.8 and -(0.5 * want + 2.0) <= added - want <= 0.5 * want + 2.0,
          "small rank %d: 100 functions (%.3f ms, %.0f%% beside an allreduce): %.3f ms added, want %.3f" % (
              rank, fn_ms, 100 * inside, added, want))
if failed:
    sys.exit("%d check(s) failed" % len(failed))
print("ok")
EOF
