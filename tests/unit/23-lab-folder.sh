#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
#
# The lab's folder is private (scripts/lab.d/common.sh, lab_dir_private):
# its /tmp name is predictable, so one that another user or a symlink got
# there first is refused with a clear word, and ours is mode 0700.
# Exit: 0 pass, anything else fail.

set -u
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "PASS: $*"; }

# shellcheck source=../lib-skip.sh
. "$REPO/tests/lib-skip.sh"
# shellcheck source=../../scripts/lab.d/common.sh
. "$REPO/scripts/lab.d/common.sh"
top=$(mktemp -d)
trap 'rm -rf "$top"' EXIT

# private DIR: lab_dir_private in a subshell (its die exits); output and status
private() { (lab_dir_private "$1") 2>&1; }

d=$top/new/lab
if out=$(private "$d") && [ "$(stat -c %a "$d")" = 700 ]; then
	ok "a new lab folder is made mode 0700"
else
	fail "new folder: $out, mode $(stat -c %a "$d" 2>/dev/null)"
fi

mkdir -m 0755 "$top/old"
if out=$(private "$top/old") && [ "$(stat -c %a "$top/old")" = 700 ]; then
	ok "our old folder of mode 0755 is made 0700"
else
	fail "old folder: $out, mode $(stat -c %a "$top/old")"
fi

ln -s "$top/old" "$top/link"
if out=$(private "$top/link"); then
	fail "a symlink was taken as the lab folder"
else
	case $out in
	*symlink*) ok "a symlink is refused: ${out##*error: }" ;;
	*) fail "a symlink: no clear word (got: $out)" ;;
	esac
fi

if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
	mkdir -m 0777 "$top/theirs"
	chown nobody "$top/theirs"
	if out=$(private "$top/theirs"); then
		fail "a folder of user nobody was taken as the lab folder"
	else
		case $out in
		*"belongs to uid $(id -u nobody)"*) ok "another user's folder is refused: ${out##*error: }" ;;
		*) fail "another user's folder: no clear word (got: $out)" ;;
		esac
	fi
	[ "$(stat -c %a "$top/theirs")" = 777 ] || fail "another user's folder was changed"
else
	# Only root can make a folder another user owns.
	sub_skip "another user's folder" not-root "making a folder another user owns needs root"
fi
[ "$fails" = 0 ]
