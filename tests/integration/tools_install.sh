#!/usr/bin/env bash
# make install DESTDIR=... PREFIX=...: lib/libusbyte.so, bin/ with the four tools,
# share/doc/usbyte with the docs and share/usbyte/profiles with the benchmark profiles; the installed usbyte-run and usbyte-doctor use the installed
# library (not the build tree's), the installed usbyte-run runs a 2-rank job and writes its page
# with the installed usbyte-report; make uninstall leaves no file behind; PREFIX defaults to
# /usr/local.
source "$(dirname "$0")/trainers/observe_lib.sh"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# A make of its own, not the jobserver of a make that may have started this test.
unset MAKEFLAGS MFLAGS MAKELEVEL
M=(make --no-print-directory -s -C "$ROOT" BUILD="$BUILD" SAN="$SAN")
D=$WORK/dest
P=/opt/usbyte-test
"${M[@]}" install DESTDIR="$D" PREFIX=$P > "$WORK/install.out" 2>&1 || { fail "make install: $(tail -5 "$WORK/install.out")"; }
I=$D$P
for f in lib/libusbyte.so bin/usbyte-run bin/usbyte-report bin/usbyte-doctor bin/usbyte-sim; do
    [ -x "$I/$f" ] || fail "not installed (executable): $f"
done
for f in README.md $(cd "$ROOT" && ls docs/*.md); do
    [ -f "$I/share/doc/usbyte/$(basename "$f")" ] || fail "doc not installed: $f"
done
for f in README.md $(cd "$ROOT/data/profiles" && ls *.json); do
    cmp -s "$I/share/usbyte/profiles/$f" "$ROOT/data/profiles/$f" || fail "profile not installed: $f"
done
cmp -s "$I/lib/libusbyte.so" "$ROOT/$LIB" || fail "the installed library is not the build's"

# The installed tools find the installed library.
pre=""
[ -n "$SAN" ] && [[ "$SAN" == *address* ]] && pre=$(gcc -print-file-name=libasan.so)
ARGS=(--profile "$PROFILES/resnet50-v100-b64-barrier.json" --iters 12 --time-scale 0.2 --bytes-scale 0.01)
LD_PRELOAD=$pre "$I/bin/usbyte-run" --report "$WORK/r" -- "$EMU_RUN" -n 2 --timeout 60 -- "$TRAINERS/ddp_like" \
    "${ARGS[@]}" > "$WORK/run.out" 2> "$WORK/run.err" || fail "installed usbyte-run: exit $?"
grep -q "^usbyte-run: LD_PRELOAD=${pre:+$pre }$I/lib/libusbyte.so;" "$WORK/run.err" ||
    fail "installed usbyte-run does not preload the installed library: $(grep '^usbyte-run:' "$WORK/run.err" | head -1)"
grep -q "^usbyte: 2 of 2 rank reports" "$WORK/run.err" || fail "installed usbyte-run: no summary: $(tail -3 "$WORK/run.err")"
[ -s "$WORK/r/usbyte-report.html" ] || fail "installed usbyte-run wrote no page"
"$I/bin/usbyte-doctor" "$TRAINERS/ddp_like" > "$WORK/doctor.out" || fail "installed usbyte-doctor: exit $?"
grep -q "($I/lib/libusbyte.so exports" "$WORK/doctor.out" || fail "installed usbyte-doctor: $(cat "$WORK/doctor.out")"

# Uninstall removes every installed file.
"${M[@]}" uninstall DESTDIR="$D" PREFIX=$P > "$WORK/uninstall.out" 2>&1 || fail "make uninstall: $(tail -3 "$WORK/uninstall.out")"
left=$(find "$D" -type f | sed "s|^$D||")
[ -z "$left" ] || fail "left after make uninstall: $left"

# The default prefix.
"${M[@]}" -n install DESTDIR="$D" > "$WORK/dry.out" 2>&1 || fail "make -n install: $(tail -3 "$WORK/dry.out")"
grep -q "$D/usr/local/lib/libusbyte.so" "$WORK/dry.out" || fail "PREFIX does not default to /usr/local"

[ $failures -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "tools_install: all checks passed"
