#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# Every cnuas guest has cnuas0 up, bound to cnuas_net, and DKMS reports the
# cnuas package installed for the running guest kernel.
. "$(dirname "$0")/lib.sh"
need_cnuas_nodes 1
need_eth
# dkms status takes ~30 s under TCG: ask every node at once, up front.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ "${DEV:-0}" != 1 ]; then
	for n in $(seq 0 $((NODES - 1))); do
		lsh -t 180 "$n" 'echo "$(uname -r)"; dkms status -k "$(uname -r)"' >"$tmp/dkms$n" 2>&1 &
	done
	wait
fi
for n in $(seq 0 $((NODES - 1))); do
	st=$(lsh "$n" 'cat /sys/class/net/cnuas0/operstate') || fail "node$n: no cnuas0"
	[ "$st" = up ] || fail "node$n: cnuas0 operstate is '$st', want up"
	drv=$(lsh "$n" 'ethtool -i cnuas0 | sed -n "s/^driver: //p"') || fail "node$n: ethtool -i cnuas0 failed"
	[ "$drv" = cnuas_net ] || fail "node$n: ethtool -i says driver '$drv', want cnuas_net"
	if [ "${DEV:-0}" = 1 ]; then
		note "node$n: --dev lab, modules dropped in without DKMS; checking modinfo instead"
		lsh "$n" 'modinfo -F filename cnuas_net | grep -q /updates/' || fail "node$n: cnuas_net not from updates/"
	else
		kver=$(head -1 "$tmp/dkms$n")
		ds=$(tail -n +2 "$tmp/dkms$n")
		echo "$ds" | grep -Eq "^cnuas/[^ ]*, $kver, x86_64: installed" ||
			fail "node$n: dkms status does not show cnuas installed for $kver: $ds"
	fi
	echo "node$n: cnuas0 up, driver $drv${ds:+, dkms: $ds}"
done
