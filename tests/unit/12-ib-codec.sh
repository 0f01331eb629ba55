#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# The RoCEv2 codec (src/cnuas_ib/wire.h, opcode.c, icrc.c) as plain C:
# field packing, the opcode table, and the ICRC against frames captured
# from Linux Soft-RoCE.
set -euo pipefail
cd "$(dirname "$0")/../.."
make -s -C src/cnuas_ib/test check
