#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
#
# Commit subjects since the rule took effect (the first commit after
# 0.1.0's last, cfcaeff): `area: summary`, at most 72 characters, and a
# body saying why for any change of more than a few lines. Merge commits
# are exempt (git writes their subjects).
# Exit: 0 pass, 77 skip (not a git checkout, or a shallow one that lacks
# the base), anything else fail.

set -u
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
base=cfcaeff
cd "$REPO" || exit 1
git rev-parse --git-dir >/dev/null 2>&1 ||
	{ echo "SKIP: not a git checkout"; exit 77; }
git cat-file -e "$base^{commit}" 2>/dev/null ||
	{ echo "SKIP: shallow clone without commit $base"; exit 77; }

fails=0 n=0
while IFS= read -r c; do
	n=$((n + 1))
	subj=$(git log -1 --format=%s "$c")
	body=$(git log -1 --format=%b "$c" | grep -cv '^\s*$')
	lines=$(git show --format= --numstat "$c" | awk '{s += $1 + $2} END {print s + 0}')
	if [ ${#subj} -gt 72 ]; then
		echo "FAIL: ${c:0:7} subject is ${#subj} characters (at most 72): $subj"
		fails=$((fails + 1))
	fi
	if ! [[ $subj =~ ^[A-Za-z0-9_./,+\ -]+:\ [^\ ] ]]; then
		echo "FAIL: ${c:0:7} subject is not 'area: summary': $subj"
		fails=$((fails + 1))
	fi
	if [ "$lines" -gt 20 ] && [ "$body" -eq 0 ]; then
		echo "FAIL: ${c:0:7} changes $lines lines with no body saying why: $subj"
		fails=$((fails + 1))
	fi
done < <(git rev-list --no-merges "$base..HEAD")
echo "checked $n commit(s) since $base"
[ "$fails" -eq 0 ] && echo "PASS: commit subjects" && exit 0
exit 1
