#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# After the group: no guest console shows an Oops, BUG: or WARNING:.
. "$(dirname "$0")/lib.sh"
n=$(ls "$LAB_DIR"/node*.console.log 2>/dev/null | wc -l)
[ "$n" -gt 0 ] || fail "no console logs under $LAB_DIR"
bad=$(grep -HnE 'Oops|BUG:|WARNING:' "$LAB_DIR"/node*.console.log 2>/dev/null)
if [ -n "$bad" ]; then
	echo "$bad" | head -20
	fail "kernel problems in the guest consoles"
fi
echo "consoles clean: $n logs"
