#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# DKMS builds the modules of the cnuas-dkms package against the guest
# kernel's headers (Debian 12's linux-headers-amd64), in a private DKMS
# tree so the host's DKMS state is untouched.
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
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
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
