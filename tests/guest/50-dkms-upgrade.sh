#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# An admin upgrades cnuas-dkms with apt on the Debian 13 guest: DKMS builds
# the new version for the running kernel, and after a reboot the modules
# udev loads are the new ones (module version, dkms status), cnuas_0 comes
# up and talks RDMA to the other guest, which still runs the old version.
# The newer package is built by scripts/build-debs from a copy of this
# tree with a higher version in VERSION and debian/changelog. The module
# version is compiled into a few files only (src/Kbuild), so the guest's
# compiler cache serves the rest of the build.
# timeout: 1800
. "$(dirname "$0")/lib.sh"
need_cnuas_nodes 2
need_eth
ROOT=$(cd "$VM_TESTS/../.." && pwd)
N=1
command -v dpkg-parsechangelog >/dev/null || skip "dpkg-dev is not installed on the host"

old=$(dpkg-parsechangelog -l "$ROOT/debian/changelog" -S Version)
up=${old%%-*}
new_up=$up+upgrade1
new=$new_up
[ "$old" = "$up" ] || new=$new_up-${old#*-}
src=$(mktemp -d /tmp/cnuas-upgrade.XXXXXX)
trap 'rm -rf "$src"' EXIT
(cd "$ROOT" && git ls-files -co --exclude-standard -z |
	while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done | tar -c --null -T -) |
	tar -x -C "$src" || fail "cannot copy the tree"
echo "$new_up" >"$src/VERSION"
{
	printf 'cnuas (%s) unstable; urgency=medium\n\n  * Upgrade test build.\n\n' "$new"
	printf ' -- Cnuas developers <dev@cnuas.invalid>  %s\n\n' "$(date -R)"
	cat "$ROOT/debian/changelog"
} >"$src/debian/changelog"
debs=$("$src/scripts/build-debs" | tail -1) || fail "scripts/build-debs of version $new failed"
deb=$(ls "$debs"/cnuas-dkms_"${new#*:}"_all.deb 2>/dev/null) || fail "no cnuas-dkms $new in $debs"
note "upgrading node$N ($(node_distro $N)) from $old to $new: ${deb##*/}"

before=$(lsh -t 30 $N 'cat /sys/module/cnuas_net/version') || fail "node$N: no cnuas_net loaded"
[ "$before" = "$up" ] || fail "node$N runs cnuas_net $before before the upgrade, expected $up"
lsh $N 'rm -rf /root/upgrade && mkdir -p /root/upgrade' || fail "guest mkdir"
lx $N sh -c "cat >/root/upgrade/${deb##*/}" <"$deb" || fail "copying the package"
out=$(lsh -t 1500 $N "
	export PATH=/usr/local/sbin:/usr/local/bin:\$PATH DEBIAN_KERNEL_USE_CCACHE=1 DEBIAN_FRONTEND=noninteractive
	ccache -z >/dev/null 2>&1
	s=\$(date +%s)
	apt-get install -y -q --no-install-recommends /root/upgrade/${deb##*/} >/root/upgrade/apt.log 2>&1
	rc=\$?
	echo \"apt exit \$rc in \$((\$(date +%s) - s)) s\"
	echo \"ccache: \$(ccache --print-stats 2>/dev/null | grep -E '^(direct_cache_hit|preprocessed_cache_hit|cache_miss)[[:space:]]' | tr -s '\t\n' '= ')\"
	echo \"dkms: \$(dkms status -k \$(uname -r) | xargs)\"
	echo \"modinfo: \$(modinfo -F version cnuas_net)\"
	[ \$rc = 0 ] || tail -n 30 /root/upgrade/apt.log") || { echo "$out"; fail "node$N: apt install of $new failed"; }
echo "$out"
echo "$out" | grep -q "^dkms: .*cnuas/$new_up, .*installed" || fail "dkms did not install cnuas $new_up"
echo "$out" | grep -qx "modinfo: $new_up" || fail "modprobe would not load cnuas_net $new_up"

s=$(reboot_node $N)
note "node$N rebooted in $s s"
check_node_up $N
vers=$(lsh -t 30 $N 'for m in cnuas_net cnuas_ib cnuasgpu; do echo "$m $(cat /sys/module/$m/version)"; done') ||
	fail "node$N: cannot read module versions"
echo "$vers"
stale=$(echo "$vers" | awk -v v="$new_up" '$2 != v')
[ -z "$stale" ] || fail "node$N did not load the new modules: $stale"
guest_pingpong rc-after-upgrade 0 $N "-n 20"
echo "node$N runs cnuas $new_up after apt upgrade and reboot; node0 with $up still talks to it"
