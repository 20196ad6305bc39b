#!/usr/bin/env bash
# make install DESTDIR=... PREFIX=...: lib/libusbyte.so, bin/ with the four tools,
# share/doc/usbyte with the docs and share/usbyte/profiles with the benchmark profiles; the installed usbyte-run and usbyte-doctor use the installed
# library (not the build tree's), the installed usbyte-run runs a 2-rank job and writes its page
# with the installed usbyte-report; make uninstall leaves no file behind; PREFIX defaults to
# /usr/local.  A node without jansson or libelf: the installed library and tools load the copies
# carried in lib/usbyte/ (found through their RUNPATH), shown in a fake root that holds only the C
# library, where they run and where taking the carried copy away makes them fail; `make dist`
# packs the same tree, which runs wherever it is unpacked.
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

# The libraries a node may lack are carried in lib/usbyte/, and found there through RUNPATH.
BUNDLED=(libjansson.so.4 libelf.so.1)
for s in "${BUNDLED[@]}"; do
    [ -f "$I/lib/usbyte/$s" ] || fail "not carried: lib/usbyte/$s"
done
for f in lib/libusbyte.so bin/usbyte-sim bin/usbyte-report bin/usbyte-doctor; do
    rp=$(LC_ALL=C readelf -d "$I/$f" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]$/\1/p')
    [ "$rp" = '$ORIGIN/../lib/usbyte' ] || fail "$f: RUNPATH '$rp', expected \$ORIGIN/../lib/usbyte"
done

# loaded_from LOG SONAME: the path the loader initialised SONAME from (LD_DEBUG=files output).
# (normalised: the loader names it through RUNPATH, ".../lib/../lib/usbyte/...").
loaded_from() {
    local p
    p=$(sed -n "s/.*calling init: \(.*\/$2\)\$/\1/p" "$1")
    [ -n "$p" ] && realpath -m "${p%%$'\n'*}"
}

# On this machine, which has jansson: the installed library takes the carried copy, not the system's.
LD_DEBUG=files LD_PRELOAD="${pre:+$pre }$I/lib/libusbyte.so" /bin/true 2> "$WORK/ld-host.log"
got=$(loaded_from "$WORK/ld-host.log" libjansson.so.4)
[ "$got" = "$I/lib/usbyte/libjansson.so.4" ] || fail "preloaded libusbyte.so took jansson from '$got', not from $I/lib/usbyte"

# A fake root with only what the installed files need from the C library and zlib (their own
# libraries copied from this machine, without the ones usbyte carries): a node without jansson
# and libelf.  Root is needed for chroot; sanitizer runtimes need /proc and their own preload.
# make dist: the installed tree as a tarball.
"${M[@]}" dist > "$WORK/dist.out" 2>&1 || fail "make dist: $(tail -3 "$WORK/dist.out")"
tarball=$ROOT/$(sed -n 's/^dist: //p' "$WORK/dist.out")
[ -f "$tarball" ] || fail "make dist: no tarball ($(tail -2 "$WORK/dist.out"))"
tar -tzf "$tarball" > "$WORK/dist.list" 2>&1 || fail "make dist: $tarball: $(tail -1 "$WORK/dist.list")"
top=$(sed -n '1s|/.*||p' "$WORK/dist.list")
for f in lib/libusbyte.so lib/usbyte/libjansson.so.4 lib/usbyte/libelf.so.1 bin/usbyte-run bin/usbyte-sim; do
    grep -qx "$top/$f" "$WORK/dist.list" || fail "make dist: $top/$f not in $tarball"
done

# A node without jansson and libelf: this machine with their files hidden (an empty file bound
# over each, in a mount namespace of the checks' own; root only).  The build tree's tools, which
# carry nothing, must fail there; the installed and the unpacked trees must work.
hide=()
for s in "${BUNDLED[@]}"; do
    h=$(ldd "$ROOT/$BUILD/usbyte-doctor" "$ROOT/$LIB" | sed -n "s/^[[:space:]]*$s => \(\/[^ ]*\) .*/\1/p" | head -1)
    [ -n "$h" ] && hide+=("$(readlink -f "$h")")
done
mkdir -p "$WORK/dist-tree" && tar -C "$WORK/dist-tree" -xzf "$tarball"
cat > "$WORK/hidden.sh" <<'SH'
# Runs in the mount namespace: hides the files given, then checks. Variables from the test.
set -u
for h in $HIDE; do mount --bind /dev/null "$h" || exit 3; done
fail() { echo "FAIL: $*"; }
loaded_from() { sed -n "s/.*calling init: \(.*\/$2\)\$/\1/p" "$1" | head -1 | xargs -r realpath -m; }
# Hidden for real: the build tree's tools find no jansson, no libelf.
"$BUILDDIR/usbyte-sim" --synthetic 12,1 --ranks 8 --net 10gbe > "$WORK/h-build-sim.out" 2>&1 &&
    fail "hidden jansson: the build tree's usbyte-sim still ran"
grep -q "libjansson.so.4" "$WORK/h-build-sim.out" || fail "hidden jansson: $(tail -1 "$WORK/h-build-sim.out")"
"$BUILDDIR/usbyte-doctor" "$BUILDDIR/libusbyte.so" > "$WORK/h-build-doc.out" 2>&1 &&
    fail "hidden libelf: the build tree's usbyte-doctor still ran"
grep -q "libelf.so.1" "$WORK/h-build-doc.out" || fail "hidden libelf: $(tail -1 "$WORK/h-build-doc.out")"
for T in $TREES; do
    LD_DEBUG=files LD_PRELOAD="${PRE:+$PRE }$T/lib/libusbyte.so" /bin/true 2> "$WORK/h-ld.log"
    grep -q "cannot be preloaded" "$WORK/h-ld.log" && fail "$T: libusbyte.so cannot be preloaded: $(grep -m1 preloaded "$WORK/h-ld.log")"
    got=$(loaded_from "$WORK/h-ld.log" libjansson.so.4)
    [ "$got" = "$T/lib/usbyte/libjansson.so.4" ] || fail "$T: the preloaded library took jansson from '$got'"
    "$T/bin/usbyte-sim" --synthetic 12,1 --ranks 8 --net 10gbe > "$WORK/h-sim.out" 2>&1 || fail "$T: usbyte-sim: $(tail -1 "$WORK/h-sim.out")"
    grep -q "best" "$WORK/h-sim.out" || fail "$T: usbyte-sim printed no policy table: $(head -2 "$WORK/h-sim.out")"
    "$T/bin/usbyte-doctor" "$T/lib/libusbyte.so" > "$WORK/h-doc.out" 2>&1
    rc=$?
    [ $rc -le 2 ] && grep -q "libusbyte.so" "$WORK/h-doc.out" || fail "$T: usbyte-doctor: exit $rc: $(tail -1 "$WORK/h-doc.out")"
    rm -rf "$WORK/h-page"
    "$T/bin/usbyte-report" "$WORK"/r/usbyte-report-*.json -o "$WORK/h-page" > "$WORK/h-rep.out" 2>&1 && [ -s "$WORK/h-page/usbyte-report.html" ] ||
        fail "$T: usbyte-report: $(tail -1 "$WORK/h-rep.out")"
done
SH
if [ ${#hide[@]} -ne ${#BUNDLED[@]} ]; then
    fail "cannot find this machine's ${BUNDLED[*]} to hide (found: ${hide[*]})"
elif ! unshare -m true 2> "$WORK/unshare.err"; then
    echo "info: no run with jansson and libelf hidden: no mount namespace here ($(head -1 "$WORK/unshare.err")); the RUNPATH check above stands"
else
    HIDE="${hide[*]}" TREES="$I $WORK/dist-tree/$top" BUILDDIR="$ROOT/$BUILD" PRE="$pre" WORK="$WORK" \
        unshare -m bash "$WORK/hidden.sh" > "$WORK/hidden.out" 2>&1
    rc=$?
    [ $rc -eq 0 ] || fail "the checks with jansson and libelf hidden ended with exit $rc"
    if grep -q "^FAIL" "$WORK/hidden.out"; then
        failures=$((failures + $(grep -c "^FAIL" "$WORK/hidden.out")))
        grep "^FAIL" "$WORK/hidden.out"
    else
        echo "info: with the system's ${BUNDLED[*]} hidden: the build tree's tools fail, the installed and unpacked trees run"
    fi
fi

# Uninstall removes every installed file.
"${M[@]}" uninstall DESTDIR="$D" PREFIX=$P > "$WORK/uninstall.out" 2>&1 || fail "make uninstall: $(tail -3 "$WORK/uninstall.out")"
left=$(find "$D" -type f | sed "s|^$D||")
[ -z "$left" ] || fail "left after make uninstall: $left"

# The default prefix.
"${M[@]}" -n install DESTDIR="$D" > "$WORK/dry.out" 2>&1 || fail "make -n install: $(tail -3 "$WORK/dry.out")"
grep -q "$D/usr/local/lib/libusbyte.so" "$WORK/dry.out" || fail "PREFIX does not default to /usr/local"

[ $failures -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "tools_install: all checks passed"
