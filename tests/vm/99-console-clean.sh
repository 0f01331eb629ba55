#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# After the group: no guest console shows an Oops, BUG, WARNING, lockdep
# report, soft lockup or hung task, and the switch's log no crash or
# sanitizer report (lib.sh logs_clean; each side lab is read the same
# way before it goes down).
# link-layers: eth ib
. "$(dirname "$0")/lib.sh"
logs_clean "$LAB_DIR" "the group's lab"
