#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# cnuas-vswitchd host unit tests (real daemon, real sockets, ASan/UBSan).
# timeout: 900
set -euo pipefail
cd "$(dirname "$0")/../.."
make -C userspace check
