#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
#
# The Cnuas QEMU patch series applies to the current Debian qemu source
# package and the patched tree builds.
#  - scripts/package-qemu --source: dpkg-source -x of the archive's qemu,
#    the series scripts/qemu-series makes from qemu-patches/ added to
#    debian/patches and applied with quilt push -a, Debian's rules
#    restricted to qemu-system-x86. Cached per input hash, so
#    a repeated run only re-checks the result below.
#  - scripts/build-qemu --print: the patched tree's build for the current
#    inputs (a no-op when tests/unit/07-qtest-cnuas-vnic.sh already built it).
# The full package build is `make package-qemu`, not part of make check.
# timeout: 2400
# Exit: 0 pass, 77 skip (no qemu source to be had), anything else fail.
# shellcheck disable=SC2015 # `A && ok || bad`: ok() cannot fail

set -u
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
LOG=$(mktemp)
SERIES=$(mktemp -d)
trap 'rm -rf "$LOG" "$SERIES"' EXIT
fail=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fail=1; }

# run SCRIPT ARG: print the script's last stdout line; exit 77 (SKIP) or 1
# (FAIL) when it cannot or does not work. Messages go to stderr because
# stdout is captured; the harness logs both.
run() {
    local rc=0 out
    out=$("$REPO/scripts/$1" "$2" 2>"$LOG") || rc=$?
    case $rc in
    0) tail -n 1 <<<"$out" ;;
    3) echo "SKIP: no-qemu-build: $(grep -m1 'cannot build here' "$LOG" |
                     sed 's/^[a-z-]*: //')" >&2
       exit 77 ;;
    *) cat "$LOG" >&2
       echo "FAIL: scripts/$1 $2 exited with $rc" >&2
       exit 1 ;;
    esac
}

tree=$(run package-qemu --source) || exit $?
[ -d "$tree/debian" ] || { echo "FAIL: no source tree at '$tree'"; exit 1; }
ok "source package prepared in $tree"

# Our patches, in series order, at the end of Debian's series, all applied.
"$REPO/scripts/qemu-series" "$SERIES" ||
    { echo "FAIL: scripts/qemu-series"; exit 1; }
want=$(sed -e 's/#.*//' -e 's/[[:space:]]*$//' "$SERIES/series" |
       grep -v '^$' | sed 's/^/cnuas-/')
n=$(wc -l <<<"$want")
got=$(tail -n "$n" "$tree/debian/patches/series")
[ "$got" = "$want" ] && ok "debian/patches/series ends with the $n cnuas patches" ||
    bad "debian/patches/series ends with: $got"
applied=$(tail -n "$n" "$tree/.pc/applied-patches" 2>/dev/null)
[ "$applied" = "$want" ] && ok "quilt push -a applied all cnuas patches" ||
    bad ".pc/applied-patches ends with: $applied"
differ=
for p in $want; do
    cmp -s "$SERIES/${p#cnuas-}" "$tree/debian/patches/$p" || differ+=" $p"
done
[ -z "$differ" ] && ok "debian/patches/cnuas-* are scripts/qemu-series output" ||
    bad "not as scripts/qemu-series makes them:$differ"
# Every file the manifest adds is in the tree as kept in this repository.
nfiles=0 differ=
while read -r kw path from src; do
    [ "$kw" = add ] || continue
    [ "$from" = from ] || src=qemu-patches/$path
    nfiles=$((nfiles + 1))
    cmp -s "$REPO/$src" "$tree/$path" || differ+=" $path"
done <"$REPO/qemu-patches/manifest"
[ -z "$differ" ] && ok "the $nfiles files qemu-patches/manifest adds match" ||
    bad "in the tree but not as in the repository:$differ"
grep -qi cnuas "$tree/hw/net/meson.build" &&
    ok "hw/net/meson.build builds the device" ||
    bad "hw/net/meson.build does not mention the device"

# Version and the x86-only build profile.
version=$(dpkg-parsechangelog -l "$tree/debian/changelog" -S Version)
[[ $version == *+cnuas1 ]] && ok "version $version" || bad "version $version"
pkgs=$(cd "$tree" && DEB_BUILD_PROFILES=pkg.qemu.cnuas-x86 dh_listpackages 2>&1)
[ "$pkgs" = qemu-system-x86 ] && ok "profile pkg.qemu.cnuas-x86 builds: $pkgs" ||
    bad "profile pkg.qemu.cnuas-x86 builds: $pkgs"
# shellcheck disable=SC2016 # $(...) is make syntax here
vars=$(cd "$tree" && DEB_BUILD_PROFILES=pkg.qemu.cnuas-x86 make -s \
       -f debian/rules --eval 'cnuas-print: ; @echo builds=$(qemu-builds) \
       $(QEMU_CONFIGURE_OPTIONS)' cnuas-print 2>&1)
grep -q -- '--target-list=x86_64-softmmu' <<<"$vars" &&
    grep -q -- '--disable-modules' <<<"$vars" &&
    grep -q -- '^builds=qemu ' <<<"$vars" &&
    ok "debian/rules: one build, x86_64-softmmu, no modules" ||
    bad "debian/rules does not restrict the build: $vars"

# The patched tree builds: build-qemu's cached build for the current inputs.
bin=$(run build-qemu --print) || exit $?
"$bin" -device help 2>&1 | grep -q 'name "cnuas-vnic"' &&
    ok "$bin has -device cnuas-vnic" || bad "$bin lacks cnuas-vnic"

[ $fail = 0 ] && echo "PASS: qemu series applies and builds" && exit 0
exit 1
