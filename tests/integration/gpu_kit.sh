#!/usr/bin/env bash
# make gpu-kit and its rehearsal: the kit builds (under 40 MiB, with what it must carry, its
# programs needing nothing of the emulator's own), and
# check.sh --rehearse runs steps 1-3 on the CPU emulator the kit carries, passing every check that
# runs, recording every check of steps 1-3, and skipping steps 4-6 with their reason; its allreduce
# curve, recorded on the emulator playing a measured table (data/net), is that table in data/net's
# format (never faster than a row, and each row the table's plus what the op log says the calls ran
# past it plus the emulator's own cost per call, the median over the rows), with usbyte's fitted
# line beside it.  Then a copy
# of the kit whose ddp_like prints another checksum under usbyte: the rehearsal must fail that
# check, say why, and exit 1.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
BUILD=${BUILD:-build}
SAN=${SAN:-}
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
unset MAKEFLAGS MFLAGS MAKELEVEL
KIT=$ROOT/$BUILD/gpu-kit

make --no-print-directory -s -C "$ROOT" BUILD="$BUILD" SAN="$SAN" gpu-kit > "$WORK/make.out" 2>&1 ||
    { cat "$WORK/make.out"; echo "FAIL: make gpu-kit"; exit 1; }
for f in check.sh README.md MANIFEST.json lib/libusbyte.so lib/usbyte/libjansson.so.4 lib/usbyte/libelf.so.1 \
    bin/usbyte-run bin/usbyte-report bin/usbyte-doctor libexec/ddp_like libexec/horovod_like libexec/per_layer \
    libexec/runtime_sched libexec/queues libexec/facts libexec/smoke emu/libcudart.so.13 emu/libnccl.so.2 \
    emu/libcuda.so.1 emu/libcupti.so.13 py/check.py py/kit_run.py py/torch_facts.py py/torch_faults.py \
    examples/pytorch_ddp.py examples/per_layer.py examples/common_gpu.py; do
    [ -e "$KIT/$f" ] || fail "not in the kit: $f"
done
# On the GPU machine the programs load the real libcudart.so.13 and libnccl.so.2: they may need no
# symbol version that only the emulator defines.
for f in "$KIT"/libexec/*; do
    LC_ALL=C readelf -V "$f" | grep -q USBYTE_EMU && fail "libexec/$(basename "$f") needs the emulator's USBYTE_EMU symbols"
done
bytes=$(du -sb "$KIT" | cut -f1)
[ "$bytes" -lt 41943040 ] || fail "the kit is $bytes bytes, over 40 MiB"
echo "info: the kit: $((bytes / 1024)) KiB, $(python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print("needs glibc", m["glibc_needed"], "carries", ", ".join(m["carried_libraries"]))' "$KIT/MANIFEST.json")"

# Under AddressSanitizer the kit's library is preloaded into bash and python, which are not built
# with it: its runtime must come first, and their leaks are not ours.
if [[ "$SAN" == *address* ]]; then
    export LD_PRELOAD=$(gcc -print-file-name=libasan.so) ASAN_OPTIONS=${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}detect_leaks=0
fi

# check OUT PYTHON: the rehearsal's results checked in PYTHON (variables: doc, checks,
# by_name, md).
check() {
    python3 - "$1" "$2" <<'PY'
import json, sys
out, code = sys.argv[1], sys.argv[2]
doc = json.load(open(out + "/gpu-check.json"))
md = open(out + "/gpu-check.md").read()
checks = doc["checks"]
by_name = {c["name"]: c for c in checks}
try:
    exec(code)
except AssertionError as e:
    print("FAIL: %s" % e)
    for c in checks:
        print("    | step %d %s: %s %s %s" % (c["step"], c["name"], c["status"], c["reason"], c["numbers"]))
    sys.exit(1)
PY
}

start=$(date +%s)
bash "$KIT/check.sh" --out "$WORK/r" --rehearse > "$WORK/rehearse.out" 2>&1
rc=$?
echo "info: the rehearsal took $(($(date +%s) - start)) s, exit $rc"
[ $rc -eq 0 ] || { sed 's/^/    | /' "$WORK/rehearse.out" | tail -40; fail "the rehearsal exited $rc"; }
check "$WORK/r" '
assert all(c["status"] in ("pass", "skip") for c in checks), "a check failed"
steps = {s: [c for c in checks if c["step"] == s] for s in range(1, 7)}
for s in (4, 5, 6):
    assert len(steps[s]) == 1 and steps[s][0]["status"] == "skip" and "rehearsal" in steps[s][0]["reason"], "step %d: %r" % (s, steps[s])
for name in ("libraries", "kit loads", "device (CUDA + NCCL program)", "usbyte-doctor"):
    assert by_name[name]["status"] == "pass", name
assert len([c for c in steps[2] if c["name"].startswith("CUDA_DEVICE_MAX_CONNECTIONS=")]) == 5, "step 2 configurations"
three = [c for c in steps[3] if "without and with usbyte" in c["name"]]
assert len(three) == 8 and all(c["status"] == "pass" for c in three), "step 3: %d checks" % len(three)
assert by_name["2-rank allreduce (smoke test)"]["status"] == "pass", "smoke"
for c in three:
    n = c["numbers"]
    assert n["state"] == "schedule" and n["measured_speedup"] > 0 and n["predicted_speedup"] >= 1, c["name"]
    assert n.get("exact") is True or n.get("equal_checksums") is True, c["name"]
assert "| 3 CUDA + NCCL | ddp_like, 2 ranks, without and with usbyte | pass |" in md, "the table"
cv = by_name["allreduce curve, 2 ranks, usbyte observing"]
assert cv["status"] == "pass" and cv["numbers"]["sizes"] == 9 and "usbyte_line_alpha_us" in cv["numbers"], cv
text = open(out + "/step3/curve/allreduce-curve.tsv").read()
for head in ("# source: ", "# hardware: ", "# ranks: 2\n", "# columns: bytes\ttime_us_out_of_place\ttime_us_in_place\n"):
    assert head in text, "the curve has no %r line" % head
got = [[float(x) for x in l.split("\t")] for l in text.splitlines() if l and not l.startswith("#")]
played = {}
for l in open("data/net/11-aws-g4dn-tcp-socket-2node-2r.tsv"):
    if l.strip() and not l.startswith("#"):
        f = [float(x) for x in l.split("\t")]
        played[f[0]] = f[1:]
assert [r[0] for r in got] == [4096.0 * 2 ** i for i in range(9)] and all(len(r) == 3 for r in got), got
late = {}   # bytes: the median time rank 0 ran a call past the table (op log: end - model_end), us
for l in open(out + "/step3/curve/oplog-0.txt"):
    f = l.split()
    if not l.startswith("#") and f[4] == "allreduce":
        late.setdefault(float(f[5]), []).append((int(f[11]) - int(f[10])) / 1e3)
# how much that lateness itself varies (p90 - p10 over the calls of a size): the jitter of a busy
# machine, which the recorded medians carry too
spread = {b: sorted(v)[len(v) * 9 // 10] - sorted(v)[len(v) // 10] for b, v in late.items()}
late = {b: sorted(v)[len(v) // 2] for b, v in late.items()}
for c in (1, 2):
    # the emulator cost per call beyond that: waking the ranks, the median over the rows
    cost = sorted(r[c] - late[r[0]] - played[r[0]][c - 1] for r in got)[len(got) // 2]
    for r in got:
        t = played[r[0]][c - 1]
        assert r[c] >= 0.97 * t, "%d bytes: %.2f us, faster than the table (%.2f)" % (r[0], r[c], t)
        assert abs(r[c] - late[r[0]] - cost - t) <= 0.1 * t + 100 + spread[r[0]], (
            "%d bytes: %.2f us, the table %.2f plus the emulator cost %.2f and %.2f past the table "
            "(spread %.2f)" % (r[0], r[c], t, cost, late[r[0]], spread[r[0]]))
model = [l.split("\t") for l in open(out + "/step3/curve/allreduce-curve-model.tsv") if not l.startswith("#")]
assert len(model) == 9 and all(len(m) == 7 for m in model), model
assert "measure the mechanism, not a cluster" in md
print("info: %d checks: %d passed, %d skipped" % (len(checks), sum(c["status"] == "pass" for c in checks),
                                                  sum(c["status"] == "skip" for c in checks)))
' || failures=$((failures + 1))
for d in ddp_like-2r horovod_like-2r per_layer-2r runtime_sched-1r; do
    [ -s "$WORK/r/step3/$d/usbyte-report.html" ] || fail "no usbyte-report.html for $d"
    ls "$WORK/r/step3/$d"/usbyte-report-*-1.json > /dev/null 2>&1 || [ "$d" = runtime_sched-1r ] ||
        fail "no report of rank 1 for $d"
done
grep -q "^| 1 facts | kit loads | pass |" "$WORK/r/gpu-check.md" || fail "the table has no 'kit loads' row"

# A kit whose ddp_like gives another checksum when usbyte is preloaded: the check must fail.
cp -a "$KIT" "$WORK/bad"
mv "$WORK/bad/libexec/ddp_like" "$WORK/bad/libexec/ddp_like.real"
cat > "$WORK/bad/libexec/ddp_like" <<'SH'
#!/bin/sh
case "${LD_PRELOAD:-}" in
*libusbyte*) "$0.real" "$@" | sed 's/^checksum .*/checksum 0123456789abcdef/' ;;
*) exec "$0.real" "$@" ;;
esac
SH
chmod +x "$WORK/bad/libexec/ddp_like"
bash "$WORK/bad/check.sh" --out "$WORK/bad-r" --rehearse --steps 3 --only '^ddp_like, 1 rank' > "$WORK/bad.out" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "the rehearsal with a wrong checksum exited $rc, expected 1"
check "$WORK/bad-r" '
c = by_name["ddp_like, 1 rank, without and with usbyte"]
assert c["status"] == "fail" and "checksums differ" in c["reason"], "the wrong checksum passed: %r" % c
assert "ddp_like, 2 ranks, without and with usbyte" not in by_name, "--only ran another check"
' || failures=$((failures + 1))

[ $failures -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "gpu_kit: all checks passed"
