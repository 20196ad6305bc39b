#!/bin/sh
# bundle.sh DIR FILE...: copies into DIR the shared libraries FILEs need that a node may lack, each
# under its soname, so that FILEs find them there through their RUNPATH ($ORIGIN/../lib/usbyte).
# bundle.sh --list FILE...: prints those sonames, one a line (what `make uninstall` removes).
#
# What is carried: every DT_NEEDED of the FILEs (today libjansson.so.4, and libelf.so.1 for
# usbyte-doctor) except what every node that runs CUDA already has (the C library: libc, libm,
# libdl, libpthread, librt, the dynamic loader), the compiler's runtimes (libgcc_s, the sanitizer
# runtimes of a SAN= build) and CUDA's and NCCL's own libraries, which must be the node's.  Their
# own dependencies are not carried: libelf needs libz.so.1, which every distribution has.
set -eu

list=0
if [ "${1:-}" = --list ]; then
    list=1
    shift
else
    dir=${1:?usage: bundle.sh DIR FILE... | bundle.sh --list FILE...}
    shift
fi

# The sonames FILEs need, without the node's own.
needed() {
    for f in "$@"; do
        LC_ALL=C readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'
    done | sort -u | grep -Ev '^(libc|libm|libdl|libpthread|librt|libresolv|libutil|ld-linux[-a-z0-9_.]*|libgcc_s|lib[altm]san|libubsan|libhwasan|libcuda|libcudart|libnccl|libcupti)\.so' || true
}

sonames=$(needed "$@")
if [ $list = 1 ]; then
    [ -z "$sonames" ] || echo "$sonames"
    exit 0
fi
mkdir -p "$dir"
for s in $sonames; do
    # Where the loader finds it for these files here: the copy they were linked and tested with.
    path=""
    for f in "$@"; do
        path=$(ldd "$f" 2>/dev/null | sed -n "s/^[[:space:]]*$s => \(\/[^ ]*\) .*/\1/p" | head -1)
        [ -n "$path" ] && break
    done
    if [ -z "$path" ]; then
        echo "bundle.sh: $s (needed by $*) is not found on this machine" >&2
        exit 1
    fi
    install -m 0644 "$(readlink -f "$path")" "$dir/$s"
    echo "bundled $s from $path"
done
