#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# QEMU's generic-fuzz configs (tests/fuzz/qemu/): every input of their
# kept corpus (tests/fuzz/corpus/qemu-*) runs once against the newest
# cached qemu-fuzz-x86_64. Building that takes 20-40 minutes, so this
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
