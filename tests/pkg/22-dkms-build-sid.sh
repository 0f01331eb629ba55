#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# The cnuas-dkms .deb builds its modules on Debian unstable (sid): the
# newest Debian kernel (7.x), with sid's own DKMS and gcc. Same checks as
# 21-dkms-build-trixie.sh, which does the work.
# timeout: 1500
CNUAS_DKMS_SUITE=sid exec "$(dirname "$0")/21-dkms-build-trixie.sh"
