#!/usr/bin/env bash
# usbyte-doctor on ELF files this test builds: a program importing NCCL and the CUDA runtime
# dynamically (against the emulator's libraries, and against CUDA_HOME's real ones when present),
# one defining its own ncclAllReduce, one linked with libcudart_static.a (and stripped), a -Bsymbolic shared
# library defining ncclAllReduce (and the same library without -Bsymbolic, whose calls go through
# its PLT), a program importing cudaEventRecord under another version node, a non-ELF file and a
# truncated ELF, usbyte's own library, a -Bsymbolic CUDA runtime; then CUDA_HOME's libnccl.so.2
# (its version equals nccl.h's) and --python with stand-in torch packages, which ends with one
# verdict for the job.  Each gets its verdict line and the exit status (0 schedulable, 1 not, 2
# unusable input; several files: the worst); the summary's counts are the verdict lines', and no
# file is both bound inside and interposable.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
BUILD=${BUILD:-build}
DOC=$BUILD/usbyte-doctor
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
[ -x "$DOC" ] || { echo "missing $DOC (make)"; exit 1; }
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# expect NAME STATUS 'REGEX'... -- FILE...: exit status and every line pattern.
expect() {
    local name=$1 want=$2
    shift 2
    local pats=()
    while [ "$1" != -- ]; do pats+=("$1"); shift; done
    shift
    local rc=0
    "$DOC" "$@" > "$W/out" 2>&1 || rc=$?
    echo "== $name (exit $rc)"
    sed 's/^/    /' "$W/out"
    [ $rc -eq "$want" ] || fail "$name: exit $rc, want $want"
    for p in "${pats[@]}"; do
        grep -Eq -- "$p" "$W/out" || fail "$name: no line matching '$p'"
    done
    counts_match "$name"
}

# counts_match NAME: the summary's counts are the verdict lines' (one verdict per file, each
# starting with one of the summary's words), and no file is called both interposable and
# unreachable (-Bsymbolic binding the framework's calls).
counts_match() {
    local words=("interposable for schedule mode" "observe only" "not interposable" "nothing for usbyte here"
                 "unusable input") w want got
    local summary
    if ! summary=$(grep '^usbyte-doctor: [0-9]* files\?:' "$W/out"); then
        ! grep -q '^  verdict: ' "$W/out" || fail "$1: verdicts without a summary line"
        return 0
    fi
    for w in "${words[@]}"; do
        got=$(grep -c "^  verdict: $w\(:\|$\)" "$W/out" || true)
        want=$(sed -n "s/.* \([0-9][0-9]*\) $w\(,.*\)\?$/\1/p" <<< "$summary")
        [ "$got" = "$want" ] || fail "$1: $got verdict lines '$w', the summary says '$want': $summary"
    done
    [ "$(grep -c '^  verdict: ' "$W/out" || true)" -eq "$(grep -c '^[^ ].*:$' "$W/out" || true)" ] ||
        fail "$1: not one verdict per file"
    awk '/^[^ ].*:$/ {f=$0; b=0} /cannot intercept/ {b=1} /verdict: interposable/ && b {print f}' "$W/out" |
        grep -q . && fail "$1: a file both bound inside (-Bsymbolic) and interposable"
    return 0
}

CC=${CC:-cc}
INC=(-I"$CUDA_HOME/include")
cat > "$W/uses.c" <<'EOF'
#include <cuda_runtime_api.h>
#include <nccl.h>
int main(int argc, char **argv)
{
    (void)argv;
    if (argc > 5) { /* never runs: the test only reads the file */
        cudaEventRecord(0, 0);
        ncclAllReduce(0, 0, 0, ncclFloat, ncclSum, 0, 0);
    }
    return 0;
}
EOF
cat > "$W/lib.c" <<'EOF'
#include <nccl.h>
ncclResult_t ncclAllReduce(const void *s, void *r, size_t n, ncclDataType_t t, ncclRedOp_t o, ncclComm_t c,
                           cudaStream_t st)
{
    (void)s; (void)r; (void)n; (void)t; (void)o; (void)c; (void)st;
    return ncclSuccess;
}
int framework_step(void) { return (int)ncclAllReduce(0, 0, 0, ncclFloat, ncclSum, 0, 0); }
EOF

EMU=$BUILD/emu
$CC "${INC[@]}" -o "$W/dyn_emu" "$W/uses.c" -L"$EMU" -Wl,-rpath-link,"$EMU" -lnccl -lcudart
# NCCL linked in: the program's calls bind to lib.c's definition.
$CC "${INC[@]}" -o "$W/own" "$W/uses.c" "$W/lib.c" -L"$EMU" -Wl,-rpath-link,"$EMU" -lcudart
# -O0: the call of the library's own function is a call through its PLT unless -Bsymbolic binds it.
$CC -O0 -fPIC -shared "${INC[@]}" -Wl,-Bsymbolic -o "$W/libsymbolic.so" "$W/lib.c"
$CC -O0 -fPIC -shared "${INC[@]}" -o "$W/libplt.so" "$W/lib.c"
printf 'not an ELF file\n' > "$W/text.so"
head -c 3000 "$W/dyn_emu" > "$W/truncated"
[ "$(head -c 4 "$W/truncated" | od -An -c | tr -d ' ')" = '177ELF' ] || fail "the truncated file lost its ELF header"

# A CUDA runtime stand-in whose symbols carry the version node libcudart.so.12 (what CUDA 12's
# runtime and the PyTorch cu12 wheels use).
printf 'libcudart.so.12 { global: cudaEventRecord; local: *; };\n' > "$W/v12.map"
printf 'int cudaEventRecord(void *e, void *s) { (void)e; (void)s; return 0; }\n' > "$W/rt12.c"
mkdir -p "$W/rt12"
$CC -fPIC -shared -Wl,-soname,libcudart.so.12 -Wl,--version-script="$W/v12.map" -o "$W/rt12/libcudart.so.12" "$W/rt12.c"
ln -sf libcudart.so.12 "$W/rt12/libcudart.so"
$CC "${INC[@]}" -o "$W/dyn_cu12" "$W/uses.c" -L"$W/rt12" -L"$EMU" -Wl,-rpath-link,"$EMU" -lnccl -lcudart

IMPORTED='NCCL: imported \(undefined ncclAllReduce in \.dynsym, libnccl\.so\.2 in DT_NEEDED\): interposable'
expect "dynamic -lnccl (emulator)" 0 "$IMPORTED" \
    'CUDA runtime: imported as cudaEventRecord@libcudart\.so\.13: usbyte.s wrappers bind to it' \
    'verdict: interposable for schedule mode' -- "$W/dyn_emu"
expect "own ncclAllReduce" 1 "NCCL: linked statically \(ncclAllReduce defined in the file.*a program's own definition" \
    'HOROVOD_NCCL_LINK=SHARED' 'nvidia-nccl' 'verdict: not interposable' -- "$W/own"
expect "-Bsymbolic library" 1 'NCCL: linked statically .*-Bsymbolic binds' \
    'binding: linked with -Bsymbolic \(DT_SYMBOLIC/DF_SYMBOLIC\)' 'verdict: not interposable' -- "$W/libsymbolic.so"
expect "library calling its own export through the PLT" 0 \
    'NCCL: linked into the file .*called through a dynamic relocation: LD_PRELOAD still intercepts it' \
    'verdict: interposable for schedule mode' -- "$W/libplt.so"
expect "non-ELF" 2 'verdict: unusable input: not an ELF file' -- "$W/text.so"
expect "usbyte's own library" 0 "this is usbyte's own library" "verdict: nothing for usbyte here: usbyte's own library" \
    '1 files?: 0 interposable for schedule mode, 0 observe only, 0 not interposable, 1 nothing for usbyte here' \
    -- "$BUILD/libusbyte.so"
cp "$BUILD/libusbyte.so" "$W/renamed.so"
expect "usbyte's own library, renamed" 0 "verdict: nothing for usbyte here: usbyte's own library" -- "$W/renamed.so"
mkdir -p "$W/rtsym"
printf 'int cudaEventRecord(void *e, void *s) { (void)e; (void)s; return 0; }\nint rt_self(void) { return cudaEventRecord(0, 0); }\n' > "$W/rtsym.c"
$CC -O0 -fPIC -shared -Wl,-Bsymbolic -Wl,-soname,libcudart.so.12 -o "$W/rtsym/libcudart.so.12" "$W/rtsym.c"
expect "a -Bsymbolic CUDA runtime" 0 'binding: linked with -Bsymbolic; the calls it binds inside are its own internal ones' \
    'verdict: nothing for usbyte here: the CUDA runtime itself' -- "$W/rtsym/libcudart.so.12"
rc=0
"$DOC" --lib > "$W/out" 2>&1 || rc=$?
[ $rc -eq 2 ] && [ "$(cat "$W/out")" = "usbyte-doctor: --lib: needs the path of a libusbyte.so" ] ||
    fail "--lib without a value: exit $rc, $(cat "$W/out")"
expect "truncated ELF" 2 'verdict: unusable input: truncated ELF' -- "$W/truncated"
# Corrupt offsets near 2^64: said as the offset, never as a sum wrapped past 2^64.
python3 - "$W/rtsym/libcudart.so.12" "$W/shoff.so" "$W/secoff.so" <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
shoff, = struct.unpack("<Q", b[0x28:0x30]); entsz, = struct.unpack("<H", b[0x3a:0x3c])
c = bytearray(b); c[0x28:0x30] = struct.pack("<Q", 0xFFFFFFFFFFFFFF00); open(sys.argv[2], "wb").write(c)
c = bytearray(b); i = shoff + entsz; c[i + 0x18:i + 0x20] = struct.pack("<Q", 0xFFFFFFFFFFFFFFF0)
open(sys.argv[3], "wb").write(c)
PY
expect "section headers beyond 2^64" 2 \
    'verdict: unusable input: corrupt ELF: the section headers start at offset 0xffffffffffffff00, beyond the file' -- "$W/shoff.so"
expect "a section beyond 2^64" 2 \
    'verdict: unusable input: corrupt ELF: section .* starts at offset 0xfffffffffffffff0, beyond the file' -- "$W/secoff.so"
grep -q '1844674407' "$W/out" && fail "a wrapped offset printed: $(grep verdict "$W/out")"
# A library with its own static CUDA runtime and no NCCL call (cuBLAS, cuDNN, cuRAND...): nothing
# for usbyte, exit 0.
printf 'int cudaEventRecord(void *e, void *s) { (void)e; (void)s; return 0; }\nint blas_gemm(void) { return cudaEventRecord(0, 0); }\n' \
    > "$W/blas.c"
$CC -O0 -fPIC -shared -Wl,-soname,libcublas-like.so.13 -o "$W/libcublas-like.so.13" "$W/blas.c"
expect "a cuBLAS-like library" 0 'CUDA runtime: linked statically .*makes no NCCL call' \
    'verdict: nothing for usbyte here: no NCCL call' -- "$W/libcublas-like.so.13"
for lib in libcublas.so.13 libcurand.so.10 libcusparse.so.12 libcusolver.so.12 libcudnn.so.9; do
    [ -f "$CUDA_HOME/lib64/$lib" ] || continue
    expect "$lib" 0 'verdict: nothing for usbyte here' -- "$CUDA_HOME/lib64/$lib"
done
expect "missing file" 2 'verdict: unusable input: cannot open: No such file' -- "$W/none"
expect "several files: the worst" 2 \
    '3 files: 1 interposable for schedule mode, 0 observe only, 1 not interposable, 0 nothing for usbyte here, 1 unusable input' \
    -- "$W/dyn_emu" "$W/own" "$W/text.so"

# The CUDA 12 import: interposable exactly when libusbyte.so defines the version node libcudart.so.12.
# (readelf into a file first: grep -q stops reading at the first match, and under pipefail
# readelf's SIGPIPE would take the other branch)
readelf -V "$BUILD/libusbyte.so" >"$W/usbyte-versions"
if grep -q 'Name: libcudart.so.12$' "$W/usbyte-versions"; then
    expect "cudaEventRecord@libcudart.so.12" 0 'imported as cudaEventRecord@libcudart\.so\.12: usbyte.s wrappers bind' \
        -- "$W/dyn_cu12"
else
    expect "cudaEventRecord@libcudart.so.12" 1 \
        'imported as cudaEventRecord@libcudart\.so\.12, but .*libusbyte\.so exports its wrappers only under libcudart\.so\.13' \
        'verdict: observe only' -- "$W/dyn_cu12"
fi

if [ -f "$CUDA_HOME/lib64/libcudart_static.a" ]; then
    $CC "${INC[@]}" -o "$W/static_rt" "$W/uses.c" "$CUDA_HOME/lib64/libcudart_static.a" -L"$EMU" \
        -Wl,-rpath-link,"$EMU" -lnccl -lpthread -ldl -lrt
    expect "libcudart_static.a" 1 "$IMPORTED" \
        'CUDA runtime: linked statically \(cudaEventRecord defined in the file at 0x[0-9a-f]+\): completion cannot be redirected' \
        'verdict: observe only: relink it with the shared runtime \(nvcc -cudart shared.*USBYTE_MODE=observe$' -- "$W/static_rt"
    # Stripped, the runtime is still recognised by the error names it carries.
    strip -o "$W/static_rt_stripped" "$W/static_rt"
    expect "libcudart_static.a, stripped" 1 "$IMPORTED" \
        'CUDA runtime: linked statically \(the runtime.s error names are in the file, its symbols stripped\)' \
        'verdict: observe only' -- "$W/static_rt_stripped"
else
    echo "info: $CUDA_HOME/lib64/libcudart_static.a not found: static runtime case skipped"
fi

if [ -f "$CUDA_HOME/lib64/libnccl.so.2" ]; then
    $CC "${INC[@]}" -o "$W/dyn_real" "$W/uses.c" -L"$CUDA_HOME/lib64" -lnccl -lcudart
    expect "dynamic -lnccl (CUDA_HOME)" 0 "$IMPORTED" 'verdict: interposable for schedule mode' -- "$W/dyn_real"
    # The version the library says it is equals the header installed with it.
    v=$(awk '/#define NCCL_MAJOR/{a=$3} /#define NCCL_MINOR/{b=$3} /#define NCCL_PATCH/{c=$3} END{print a"."b"."c}' \
        "$CUDA_HOME/include/nccl.h")
    expect "CUDA_HOME's libnccl.so.2" 0 "NCCL: this is NCCL itself \(SONAME libnccl\.so\.2\), version ${v//./\\.}[+ ]" \
        -- "$CUDA_HOME/lib64/libnccl.so.2"
else
    echo "info: $CUDA_HOME/lib64/libnccl.so.2 not found: real NCCL cases skipped"
fi

# --python: the shared libraries of the torch that python3 imports (a stand-in package here).
mkdir -p "$W/py/torch/lib"
: > "$W/py/torch/__init__.py"
cp "$W/libsymbolic.so" "$W/py/torch/lib/libtorch_cuda.so"
cp "$W/dyn_emu" "$W/py/torch/lib/libc10_cuda.so"
PYTHONPATH=$W/py expect "--python" 1 "usbyte-doctor: --python: $W/py/torch/lib/libtorch_cuda.so" \
    "^$W/py/torch/lib/libc10_cuda.so:" '2 files: 1 interposable for schedule mode, 0 observe only, 1 not interposable' \
    "^usbyte-doctor: the job with this python3's torch/horovod: usbyte cannot reach its NCCL calls: $W/py/torch/lib/libtorch_cuda.so links NCCL statically" \
    -- --python
tail -1 "$W/out" | grep -q "^usbyte-doctor: the job with" || fail "--python does not end with the job's verdict"
# A torch whose NCCL caller imports it: schedule mode works; with a static runtime: observe only.
mkdir -p "$W/py2/torch/lib"
: > "$W/py2/torch/__init__.py"
cp "$W/dyn_emu" "$W/py2/torch/lib/libtorch_cuda.so"
cp "$CUDA_HOME/lib64/libnccl.so.2" "$W/py2/torch/lib/" 2> /dev/null || true
PYTHONPATH=$W/py2 expect "--python, interposable" 0 \
    "^usbyte-doctor: the job with this python3's torch/horovod: schedule mode will work: $W/py2/torch/lib/libtorch_cuda.so imports ncclAllReduce and cudaEventRecord@libcudart.so.13" \
    -- --python
if [ -f "$CUDA_HOME/lib64/libcudart_static.a" ]; then
    cp "$W/static_rt" "$W/py2/torch/lib/libtorch_cuda.so"
    PYTHONPATH=$W/py2 expect "--python, static runtime" 1 \
        "^usbyte-doctor: the job with this python3's torch/horovod: observe only: $W/py2/torch/lib/libtorch_cuda.so" \
        -- --python
fi
if python3 -c 'import importlib.util as u, sys; sys.exit(any(u.find_spec(m) for m in ("torch", "horovod")))'; then
    PYTHONPATH=$W/nothing expect "--python without torch" 2 'python3 imports neither torch nor horovod' -- --python
fi

[ $failures -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "tools_doctor: all checks passed"
