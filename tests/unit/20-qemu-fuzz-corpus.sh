#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# QEMU's fuzz configs (tests/fuzz/qemu/: generic-fuzz, cnuas-vmstate):
# every input of their kept corpus (tests/fuzz/corpus/qemu-*) and of
# tests/fuzz/refuse/ runs once against this tree's cached
# qemu-fuzz-x86_64, else the newest cached one (older than our targets:
# fail). Building one takes 20-40 minutes, so this
# test never builds it (make fuzz does): without one it skips
# (no-qemu-fuzz in tests/skip-reasons). Any crash or sanitizer report
# fails.
# timeout: 900
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
tests/fuzz/run-qemu-fuzz replay "$PWD/build/fuzz" 0
rc=$?
[ $rc = 77 ] && echo "SKIP: no-qemu-fuzz: no cached qemu-fuzz-x86_64 (make fuzz or scripts/build-qemu-fuzz builds one)"
exit $rc
