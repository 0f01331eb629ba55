#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# QEMU's generic-fuzz configs (tests/fuzz/qemu/): every input of their
# kept corpus (tests/fuzz/corpus/qemu-*) runs once against the newest
# cached qemu-fuzz-x86_64. Building that takes 20-40 minutes, so this
# test never builds it (make fuzz does): without one it skips.
# Any crash or sanitizer report fails.
# timeout: 900
set -euo pipefail
cd "$(dirname "$0")/../.."
exec tests/fuzz/run-qemu-fuzz replay "$PWD/build/fuzz" 0
