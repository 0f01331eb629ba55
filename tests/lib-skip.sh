# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# shellcheck shell=bash
# How a test says it did not run (sourced). A skip is a claim about the
# machine: TAG must be one of tests/skip-reasons, or tests/run fails it.
#   skip_because TAG REASON...   the whole test: `SKIP: TAG: REASON`, exit 77
#   sub_skip NAME TAG REASON...  a part of a test (a sub-test, a fuzz
#                                target) that did not run: a line in the
#                                file tests/run names in $CNUAS_SKIPS
skip_because() {
	local tag=$1
	shift
	echo "SKIP: $tag: $*"
	exit 77
}
sub_skip() {
	local name=$1 tag=$2
	shift 2
	echo "sub-test skipped: $name: $tag: $*"
	printf '%s\t%s\t%s\n' "$name" "$tag" "$*" >>"${CNUAS_SKIPS:-/dev/null}"
}
# skip_line_tag LINE / skip_line_reason LINE: the parts of a
# `SKIP: TAG: REASON` line (no tag: "none" and the whole text).
skip_line_tag() {
	local t
	t=$(sed -n 's/^SKIP: *\([a-z0-9-]*\): .*/\1/p' <<<"$1")
	echo "${t:-none}"
}
skip_line_reason() {
	if [[ $1 =~ ^SKIP:\ *[a-z0-9-]+:\ (.*)$ ]]; then
		echo "${BASH_REMATCH[1]}"
	else
		sed 's/^SKIP: *//' <<<"$1"
	fi
}
