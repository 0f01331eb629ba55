#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# DKMS builds the modules of the cnuas-dkms package against the guest
# kernel's headers (Debian 12's linux-headers-amd64), in a private DKMS
# tree so the host's DKMS state is untouched. gcc runs through ccache
# (the headers' DEBIAN_KERNEL_USE_CCACHE) into ~/.cache/cnuas/ccache-host:
# sources and headers unchanged since the last run, the objects come
# from the cache (the log's ccache line counts hits and misses). The tree
# has a fixed path under ~/.cache/cnuas/work, as the compiler's arguments
# name it; a lock keeps two runs out of each other's way.
# timeout: 900
set -euo pipefail
cd "$(dirname "$0")/../.."
version=$(cat VERSION)
kdir=$(ls -d /usr/src/linux-headers-6.1.*-amd64 2>/dev/null | sort -V | tail -n1)
if [ -z "$kdir" ]; then
	echo "SKIP: no-kernel-headers: no Debian 12 kernel headers (linux-headers-amd64) installed"
	exit 77
fi
kver=${kdir#/usr/src/linux-headers-}
dir=$(scripts/build-debs | tail -n1)
cache=${CNUAS_CACHE:-$HOME/.cache/cnuas}
tmp=$cache/work/pkg-dkms-host
mkdir -p "$cache/work" "$cache/ccache-host"
exec 9>"$tmp.lock"
flock 9
rm -rf "$tmp"
mkdir "$tmp"
trap 'rm -rf "$tmp"' EXIT
export DEBIAN_KERNEL_USE_CCACHE=1 CCACHE_DIR=$cache/ccache-host CCACHE_MAXSIZE=400M
ccache -z >/dev/null
dpkg-deb -x "$dir/cnuas-dkms_$(dpkg-parsechangelog -l debian/changelog -S Version)_all.deb" "$tmp/root"
mkdir -p "$tmp/dkms" "$tmp/mods"
# dkms wants /lib/modules/KVER/build; point it at the installed headers.
args=(--dkmstree "$tmp/dkms" --sourcetree "$tmp/root/usr/src" -k "$kver")
dkms add "${args[@]}" -m cnuas -v "$version"
if ! dkms build "${args[@]}" -m cnuas -v "$version"; then
	echo "dkms build failed for kernel $kver; make log:"
	cat "$tmp"/dkms/cnuas/"$version"/build/make.log || true
	exit 1
fi
echo "ccache: $(ccache --print-stats | grep -E "^(direct_cache_hit|preprocessed_cache_hit|cache_miss)[[:space:]]" | tr -s "\t\n" "= ")"
mods=$(find "$tmp/dkms/cnuas/$version/$kver" -name '*.ko*')
echo "$mods"
for m in $(sed -n 's/^BUILT_MODULE_NAME\[[0-9]*\]="\(.*\)"/\1/p' dkms.conf); do
	f=$(echo "$mods" | grep "/$m\.ko" | head -n1)
	[ -n "$f" ] || { echo "FAIL: module $m not built"; exit 1; }
	vermagic=$(modinfo -F vermagic "$f")
	case $vermagic in
	"$kver "*) echo "ok   $m vermagic: $vermagic" ;;
	*) echo "FAIL: $m vermagic '$vermagic' is not for $kver"; exit 1 ;;
	esac
done
