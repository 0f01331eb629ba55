#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# cnuas-vswitchd host unit tests (real daemon, real sockets, ASan/UBSan).
# The dgram-port test runs a real QEMU: ours, built by the qtest before.
# timeout: 900
set -euo pipefail
cd "$(dirname "$0")/../.."
if qemu=$(scripts/build-qemu --print 2>/dev/null | tail -n1) && [ -x "$qemu" ]; then
	export PATH=$(dirname "$qemu"):$PATH
fi
make -C userspace/vswitchd check
