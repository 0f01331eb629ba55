#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
#
# libcnuaspeermem host tests (no device): uapi layout, ownership of the
# GPU fd, PD, DMA-BUF and MR under AddressSanitizer/UBSan, SONAME and
# symbol versions: make -C userspace/peermem check, built out of tree.
# Exit: 0 pass, 77 skip (no libibverbs-dev), anything else fail.

set -u

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
[ -f /usr/include/infiniband/verbs.h ] || { echo "SKIP: no-libibverbs-dev: libibverbs-dev not installed"; exit 77; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
if make -s -C "$REPO/userspace/peermem" O="$OUT" check >"$OUT/log" 2>&1; then
	grep -E '^(PASS|FAIL|note)' "$OUT/log"
	exit 0
fi
cat "$OUT/log"
echo "FAIL: make -C userspace/peermem check"
exit 1
