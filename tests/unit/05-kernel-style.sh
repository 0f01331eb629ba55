#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# The kernel sources pass scripts/kernel-checkpatch: checkpatch --strict
# over src/, and a W=1 and sparse build against Debian 12's headers
# without a warning. A clean result of the same inputs (files, tools,
# headers) is remembered, not repeated (scripts/kernel-checkpatch).
# timeout: 900
set -euo pipefail
cd "$(dirname "$0")/../.."
exec scripts/kernel-checkpatch
