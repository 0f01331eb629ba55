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

# One git log for every commit (a git call per commit cost 20 s of CPU
# for 700 commits): a record of hash, subject and body between \x1e
# marks, then its --numstat lines.
report=$(git log --no-merges --numstat --format=$'\x1e%h\n%s\n%b\x1e' "$base..HEAD" | awk -v m=$'\x1e' '
function done_one() {
	if (h == "") return
	n++
	if (length(subj) > 72) { printf "FAIL: %s subject is %d characters (at most 72): %s\n", h, length(subj), subj; f++ }
	if (subj !~ /^[A-Za-z0-9_.\/,+ -]+: [^ ]/) { printf "FAIL: %s subject is not '"'"'area: summary'"'"': %s\n", h, subj; f++ }
	if (lines > 20 && body == 0) { printf "FAIL: %s changes %d lines with no body saying why: %s\n", h, lines, subj; f++ }
}
!inrec && index($0, m) == 1 { done_one(); h = substr($0, 2); inrec = 1; state = "subj"; body = 0; lines = 0; next }
inrec && state == "subj" { subj = $0; state = "body"; next }
inrec && $0 != "" && index($0, m) == length($0) { line = substr($0, 1, length($0) - 1); if (line ~ /[^ \t]/) body++; inrec = 0; next }
inrec { if ($0 ~ /[^ \t]/) body++; next }
NF == 3 { lines += ($1 == "-" ? 0 : $1) + ($2 == "-" ? 0 : $2) }
END { done_one(); printf "checked %d commit(s)\n", n; exit f > 0 }')
rc=$?
echo "$report since $base"
[ $rc -eq 0 ] && echo "PASS: commit subjects" && exit 0
exit 1
