#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# The Debian source package builds on its own, as on a buildd.
# scripts/build-debs makes it with `dpkg-source -b` (the .dsc,
# cnuas_V.orig.tar.xz and the component cnuas_V.orig-rdma-core.tar.*).
# In a clean Debian 12 chroot (mmdebstrap --variant=buildd: the essential
# packages and build-essential) the unpacked .dsc gets its Build-Depends
# from `apt-get build-dep`, then `dpkg-buildpackage -us -uc -b` runs as an
# unprivileged user without network and must make the five .debs, with
# the provider inside, holding the same files as the host's build.
# The chroot with the Build-Depends installed is cached under
# $CNUAS_CACHE/srcpkg-chroot/, keyed by the Build-Depends and the
# archive; each run builds in a throwaway overlay of it.
# timeout: 2400
set -euo pipefail
cd "$(dirname "$0")/../.."
skip() { echo "SKIP: $*"; exit 77; } # skip TAG: REASON (tests/skip-reasons)
[ "$(id -u)" = 0 ] || skip "not-root: needs root (mmdebstrap, chroot, mounts)"
command -v mmdebstrap >/dev/null || skip "no-mmdebstrap: no mmdebstrap (apt-get install mmdebstrap)"
suite=bookworm
cache=${CNUAS_CACHE:-$HOME/.cache/cnuas}/srcpkg-chroot
mirror=$(scripts/apt-mirror) || skip "no-debian-mirror: no Debian archive in the host's apt sources"
security=$(scripts/apt-mirror --security)
version=$(cat VERSION)
debver=$(dpkg-parsechangelog -l debian/changelog -S Version)
start=$SECONDS
fail=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fail=1; }

rc=0
dir=$(scripts/build-debs | tail -n1) || rc=$?
[ $rc -ne 3 ] || skip "no-rdma-core: no rdma-core source tarball for the source package (see above)"
[ $rc -eq 0 ] || exit $rc
dsc=$dir/cnuas_$debver.dsc
[ -f "$dsc" ] || { echo "FAIL: scripts/build-debs made no $(basename "$dsc")"; exit 1; }
mapfile -t files < <(sed -n '/^Files:/,/^[^ ]/s/^ [0-9a-f]\{32\} [0-9]* //p' "$dsc")
ok "dpkg-source -b made $(basename "$dsc"): ${files[*]}"
printf '%s\n' "${files[@]}" | grep -qx "cnuas_$version.orig-rdma-core.tar.[a-z0-9]*" ||
	bad "no cnuas_$version.orig-rdma-core tarball in $(basename "$dsc")"
bdeps=$(sed -n 's/^Build-Depends: //p' "$dsc")
[ -n "$bdeps" ] || { echo "FAIL: no Build-Depends in $(basename "$dsc")"; exit 1; }

mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9
key=$(printf '%s\n' v1 "$suite" "$mirror" "$security" "$bdeps" | sha256sum | cut -c1-12)
root=$cache/$suite-$key
if [ -d "$root" ]; then
	ok "cached chroot $(basename "$root") (Build-Depends: $bdeps)"
else
	curl -fsS --max-time 20 -r 0-1023 "$mirror/dists/$suite/InRelease" >/dev/null 2>&1 ||
		skip "no-debian-mirror: cannot reach $mirror and no chroot is cached"
	echo "== building the $suite buildd chroot with the Build-Depends (a few minutes)"
	stage=$(mktemp -d)
	cp "$dsc" "${files[@]/#/$dir/}" "$stage"/
	rm -rf "$root.tmp"
	# The package lists stay: `apt-get build-dep` in each run reads them.
	# shellcheck disable=SC2016 # $1 is mmdebstrap's chroot
	if ! nice mmdebstrap --mode=root --format=directory --variant=buildd \
		--skip=cleanup/apt/lists \
		--customize-hook='mkdir "$1/tmp/cnuas-src"' \
		--customize-hook="sync-in $stage /tmp/cnuas-src" \
		--customize-hook='chroot "$1" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
			DEBIAN_FRONTEND=noninteractive sh -ec "cd /tmp/cnuas-src
			dpkg-source -x cnuas_*.dsc cnuas
			apt-get build-dep -y --no-install-recommends ./cnuas"' \
		--customize-hook='rm -rf "$1/tmp/cnuas-src"' \
		--customize-hook='chroot "$1" useradd --create-home --home-dir /build builder' \
		"$suite" "$root.tmp" "deb $mirror $suite main" \
		"deb $mirror $suite-updates main" "deb $security $suite-security main" \
		>"$cache/mmdebstrap.log" 2>&1; then
		tail -n 40 "$cache/mmdebstrap.log"
		rm -rf "$stage" "$root.tmp"
		echo "FAIL: mmdebstrap failed (log: $cache/mmdebstrap.log)"
		exit 1
	fi
	rm -rf "$stage"
	mv "$root.tmp" "$root"
	# Chroots of other Build-Depends or archives: keep the newest two.
	find "$cache" -mindepth 1 -maxdepth 1 -type d -name "$suite-????????????" \
		-printf '%T@ %p\n' | sort -n | head -n -2 | cut -d' ' -f2- |
		while read -r old; do rm -rf "$old"; done
	ok "chroot $(basename "$root") built in $((SECONDS - start)) s"
fi

# A throwaway overlay of the chroot; the mounts live in a private mount
# namespace and vanish with it, so removing $work never reaches the cache.
work=$(mktemp -d "$cache/run.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/upper/build/src" "$work/work" "$work/root"
cp "$dsc" "${files[@]/#/$dir/}" "$work/upper/build/src/"
t0=$SECONDS
# shellcheck disable=SC2016 # expanded by the inner bash
if ! unshare --mount --propagation private bash -euc '
	lower=$1 r=$2 w=$3
	mount -t overlay overlay -o "lowerdir=$lower,upperdir=$w/upper,workdir=$w/work" "$r"
	mount -t proc proc "$r/proc"
	as_root() { chroot "$@" /usr/bin/env -i HOME=/build LC_ALL=C.UTF-8 \
		PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive; }
	# As root: unpack, install the Build-Depends (none are missing once
	# the cached chroot has them, so no network is needed).
	as_root "$r" sh -ec "cd /build/src
		dpkg-source -x cnuas_*.dsc cnuas
		apt-get build-dep -y --no-install-recommends ./cnuas
		chown -R builder: /build"
	# As a user, with no network at all.
	unshare --net chroot --userspec=builder:builder "$r" /usr/bin/env -i HOME=/build \
		LC_ALL=C.UTF-8 PATH=/usr/sbin:/usr/bin:/sbin:/bin DEB_BUILD_OPTIONS=parallel=2 \
		sh -ec "cd /build/src/cnuas && dpkg-buildpackage -us -uc -b"
' inner "$root" "$work/root" "$work" >"$work/build.log" 2>&1; then
	tail -n 60 "$work/build.log"
	echo "FAIL: build in the chroot failed"
	exit 1
fi
grep -E '^[0-9]+ upgraded, [0-9]+ newly installed' "$work/build.log" | sed 's/^/apt-get build-dep: /'
ok "dpkg-buildpackage -us -uc -b in the chroot: $((SECONDS - t0)) s"

out=$work/upper/build/src
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
contents() { dpkg-deb -c "$1" | awk '{print $1, $6, $8}' | sort; }
for p in cnuas-dkms cnuas-vswitchd cnuas-ibverbs-provider libcnuaspeermem1 libcnuaspeermem-dev; do
	deb=$(ls "$out/${p}_${debver}"_*.deb 2>/dev/null | head -n1)
	if [ -z "$deb" ]; then
		bad "no ${p}_${debver}_*.deb from the chroot build"
		continue
	fi
	host=$dir/$(basename "$deb")
	if [ -f "$host" ] && diff <(contents "$host") <(contents "$deb") >"$work/diff"; then
		ok "$(basename "$deb"): the files of the host's build ($(contents "$deb" | wc -l))"
	else
		bad "$(basename "$deb") differs from the host's build:"
		sed 's/^/   /' "$work/diff"
	fi
done
prov=$(ls "$out"/cnuas-ibverbs-provider_"$debver"_*.deb 2>/dev/null | head -n1)
lib=usr/lib/$multiarch/libibverbs/libcnuas-rdmav34.so
mkdir -p "$work/prov"
if [ -n "$prov" ] && dpkg-deb -x "$prov" "$work/prov" &&
	readelf --dyn-syms -W "$work/prov/$lib" | grep -q ' verbs_provider_cnuas$'; then
	ok "cnuas-ibverbs-provider holds /$lib, exporting verbs_provider_cnuas"
else
	bad "cnuas-ibverbs-provider lacks a provider library at /$lib"
fi
echo "total $((SECONDS - start)) s"
exit $fail
