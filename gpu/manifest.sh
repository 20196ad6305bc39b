#!/bin/sh
# manifest.sh KIT MAX_BYTES: writes KIT/MANIFEST.json (what was built from what, the newest C
# library symbol version its files need, the libraries it carries, its size) and fails when the
# kit is larger than MAX_BYTES.
set -eu
kit=$1
max=$2
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
[ "$commit" = unknown ] || git diff --quiet HEAD 2>/dev/null || commit="$commit+local-changes"
# Every ELF file's versioned glibc symbols; the newest is what a machine's C library must offer.
glibc=$( (find "$kit" -type f -exec objdump -T {} + 2>/dev/null || true) | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
bytes=$(du -sb "$kit" | cut -f1)
files=$(find "$kit" -type f | wc -l)
carried=$(ls "$kit/lib/usbyte" | sed 's/.*/"&"/' | paste -sd, -)
cat > "$kit/MANIFEST.json" <<JSON
{
  "built": "$(date -u +%Y-%m-%dT%H:%MZ)",
  "commit": "$commit",
  "built_on": "$(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME"), $(ldd --version 2>&1 | head -1)",
  "glibc_needed": "${glibc#GLIBC_}",
  "carried_libraries": [$carried],
  "files": $files,
  "bytes": $bytes
}
JSON
if [ "$bytes" -gt "$max" ]; then
    echo "manifest.sh: $kit is $bytes bytes, more than the $max allowed" >&2
    exit 1
fi
echo "gpu-kit: $files files, $((bytes / 1024)) KiB, needs glibc ${glibc#GLIBC_} or newer"
