#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
#
# The QEMU device files in qemu-patches/ are in QEMU's style: QEMU's own
# scripts/checkpatch.pl --strict (from Debian's qemu source, the one the
# series is for) passes on every C file and header there, checked at its
# path in QEMU's tree so the tests/ rules apply to the qtests. First
# scripts/qemu-series --check: the manifest lists exactly those files.
# Exit: 0 pass, 77 skip (no qemu source or perl), anything else fail.

set -u
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CACHE=${CNUAS_CACHE:-$HOME/.cache/cnuas}
SRC_CACHE=$CACHE/src
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

"$REPO/scripts/qemu-series" --check || {
    echo "FAIL: scripts/qemu-series --check"
    exit 1
}
echo "ok   scripts/qemu-series --check"

command -v perl >/dev/null || { echo "SKIP: no-perl: perl not installed"; exit 77; }

# Debian's orig tarball, the one scripts/build-qemu fetches (apt-get source).
orig_tarball() {
    find "$SRC_CACHE" -maxdepth 1 -name 'qemu_*.orig.tar.*' 2>/dev/null |
        sort -V | tail -n 1
}
tarball=$(orig_tarball)
if [ -z "$tarball" ]; then
    mkdir -p "$SRC_CACHE"
    (cd "$SRC_CACHE" && apt-get source -d qemu) >"$TMP/fetch.log" 2>&1
    tarball=$(orig_tarball)
fi
if [ -z "$tarball" ]; then
    echo "SKIP: no-qemu-source: no qemu source in $SRC_CACHE (apt-get source -d qemu failed:" \
         "$(tail -n 1 "$TMP/fetch.log"))"
    exit 77
fi
tar -xaf "$tarball" -C "$TMP" --wildcards '*/scripts/checkpatch.pl' ||
    { echo "FAIL: no scripts/checkpatch.pl in $tarball"; exit 1; }
checkpatch=$(find "$TMP" -name checkpatch.pl | head -n 1)
echo "ok   checkpatch.pl from $(basename "$tarball")"

cd "$REPO/qemu-patches" || exit 1
files=$(find hw include tests -name '*.[ch]' 2>/dev/null | sort)
[ -n "$files" ] || { echo "FAIL: no C files in qemu-patches/"; exit 1; }
fail=0
for f in $files; do
    if out=$(perl "$checkpatch" --no-tree --strict --terse --color=never \
             -f "$f" 2>&1); then
        echo "ok   $f"
    else
        grep -v '^total: ' <<<"$out"
        echo "FAIL $f"
        fail=1
    fi
done
[ $fail = 0 ] || exit 1
echo "PASS: QEMU checkpatch.pl on qemu-patches/"
