#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# The kernel sources build warning-free with W=1 and sparse (C=1) against
# Debian 12's headers, and pass the kernel's checkpatch.pl.
# timeout: 900
set -euo pipefail
cd "$(dirname "$0")/../.."
kdir=$(ls -d /lib/modules/6.1.*-amd64/build 2>/dev/null | sort -V | tail -n1)
[ -n "$kdir" ] || { echo "SKIP: linux-headers-amd64 (6.1) not installed"; exit 77; }
command -v sparse >/dev/null || { echo "SKIP: sparse not installed"; exit 77; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cp -a src/. "$out/"
make -C "$out" KDIR="$kdir" W=1 C=1 2>&1 | tee "$out/build.log"
# Anything the compiler or sparse says is a failure.
if grep -E 'warning:|error:' "$out/build.log"; then
	echo "FAIL: warnings above"
	exit 1
fi
# Not the build's generated *.mod.c of an in-tree module build.
files=$(find src -name '*.[ch]' -not -path 'src/include/*' -not -name '*.mod.c' | sort)
scripts/kernel-checkpatch $files
# Headers in src/include are shared with QEMU and userspace, which have no
# BIT() macro.
scripts/kernel-checkpatch --ignore BIT_MACRO src/include/*.h
