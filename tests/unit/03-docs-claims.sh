#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
#
# The docs name only what the tree has: README.md's and docs/*.md's links
# resolve, and the paths, make targets, switch options, cnuas-vsctl
# commands, lab options and switch counters they name in code exist
# (tests/unit/docs_claims.py says how each is found). Then the same check
# on a copy of the docs with one wrong claim of each kind must name each,
# so the check cannot pass by finding nothing.
# Exit: 0 pass, 77 skip (no python3), anything else fail.

set -u
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CHECK=$REPO/tests/unit/docs_claims.py
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }

python3 "$CHECK" "$REPO" || exit 1

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$REPO/README.md" "$REPO/docs" "$tmp/"
bad=('scripts/no-such-script' 'make no-such-target'
	'cnuas-vswitchd --no-such-option' 'cnuas-vsctl no-such-command'
	'scripts/lab up --no-such-lab-option')
for b in "${bad[@]}"; do
	echo "\`$b\`" >>"$tmp/docs/README.md"
done
echo '[a link](no-such-page.md)' >>"$tmp/docs/README.md"
# shellcheck disable=SC2016 # backticks, not expansions
sed -i 's/^| `drop_runt` |/| `drop_no_such_counter` |/' "$tmp/docs/debugging.md"
out=$(python3 "$CHECK" "$REPO" "$tmp") && { echo "FAIL: wrong claims passed"; exit 1; }
for w in no-such-script no-such-target no-such-option no-such-command \
	no-such-lab-option no-such-page.md drop_no_such_counter 'prints drop_runt'; do
	grep -q -- "$w" <<<"$out" || { echo "FAIL: the check missed $w: $out"; exit 1; }
done
echo "PASS: the docs' claims hold, and a wrong one of each kind is caught"
