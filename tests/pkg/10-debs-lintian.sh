#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# The Debian packages build, lintian reports no errors, and each package
# holds the files it must.
# timeout: 1200
set -euo pipefail
cd "$(dirname "$0")/../.."
version=$(cat VERSION)
rc=0
dir=$(scripts/build-debs | tail -n1) || rc=$?
if [ $rc -eq 3 ]; then
	echo "SKIP: the provider cannot be built here (no rdma-core source, see above)"
	exit 77
fi
[ $rc -eq 0 ] || exit $rc
ls -l "$dir"

dkms_deb=$dir/cnuas-dkms_${version}_all.deb
sw_deb=$(ls "$dir"/cnuas-vswitchd_"${version}"_*.deb)
prov_deb=$(ls "$dir"/cnuas-ibverbs-provider_"${version}"_*.deb)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)

echo "== lintian"
lintian --fail-on error --suppress-tags dir-or-file-in-opt \
	"$dir"/*.changes

fail=0
expect() { # expect DEB PATH...
	local deb=$1 p
	shift
	for p in "$@"; do
		if dpkg-deb -c "$deb" | awk '{print $6}' | grep -qx ".$p"; then
			echo "ok   $(basename "$deb"): $p"
		else
			echo "FAIL $(basename "$deb") lacks $p"
			fail=1
		fi
	done
}
expect "$dkms_deb" /usr/src/cnuas-"$version"/dkms.conf \
	/usr/src/cnuas-"$version"/Makefile \
	/usr/src/cnuas-"$version"/include/cnuas_vnic_hw.h
expect "$sw_deb" /usr/sbin/cnuas-vswitchd /usr/bin/cnuas-vsctl \
	/lib/systemd/system/cnuas-vswitchd.service
# Exactly these files (README's package table), besides /usr/share/doc.
exact() { # exact DEB PATH...
	local deb=$1 want got
	shift
	want=$(printf '%s\n' "$@" | sort)
	got=$(dpkg-deb -c "$deb" | awk '$1 !~ /^d/ {print substr($6, 2)}' |
		grep -v '^/usr/share/doc/' | sort)
	if [ "$got" = "$want" ]; then
		echo "ok   $(basename "$deb"): exactly $(echo "$want" | wc -l) files"
	else
		echo "FAIL $(basename "$deb") files differ (- expected, + packaged):"
		diff <(echo "$want") <(echo "$got") | sed -n 's/^</   -/p; s/^>/   +/p'
		fail=1
	fi
}
exact "$sw_deb" /etc/default/cnuas-vswitchd /lib/systemd/system/cnuas-vswitchd.service \
	/usr/bin/cnuas-vsctl /usr/sbin/cnuas-vswitchd \
	/usr/share/man/man8/cnuas-vsctl.8.gz /usr/share/man/man8/cnuas-vswitchd.8.gz
exact "$prov_deb" /usr/lib/"$multiarch"/libibverbs/libcnuas-rdmav34.so \
	/etc/libibverbs.d/cnuas.driver
# libibverbs loads providers through the .driver file: "driver cnuas".
if dpkg-deb --fsys-tarfile "$prov_deb" | tar -xO ./etc/libibverbs.d/cnuas.driver | grep -qx 'driver cnuas'; then
	echo "ok   cnuas.driver names the provider"
else
	echo "FAIL cnuas.driver does not say 'driver cnuas'"
	fail=1
fi

# The version substituted into dkms.conf comes from VERSION.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dpkg-deb -x "$dkms_deb" "$tmp"
if grep -qx "PACKAGE_VERSION=\"$version\"" "$tmp/usr/src/cnuas-$version/dkms.conf"; then
	echo "ok   dkms.conf PACKAGE_VERSION=$version"
else
	echo "FAIL dkms.conf version:"; grep PACKAGE_VERSION "$tmp"/usr/src/cnuas-*/dkms.conf
	fail=1
fi
chlog=$(dpkg-parsechangelog -l debian/changelog -S Version)
if [ "${chlog%%-*}" = "$version" ]; then
	echo "ok   debian/changelog matches VERSION ($version)"
else
	echo "FAIL debian/changelog $chlog != VERSION $version"
	fail=1
fi
exit $fail
