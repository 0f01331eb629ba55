#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# An admin upgrades cnuas-dkms with apt on the Debian 13 guest: DKMS builds
# the new package's modules for the running kernel, and after a reboot the
# modules udev loads are the new ones, the RDMA device comes up and talks RDMA to
# the other guest, which still runs the old ones. The newer package is
# built by scripts/build-debs from a copy of this tree with a higher
# Debian revision and a marker (modinfo field cnuas_build) in each
# module: one more object, upgrade-mark.o, whose source is only that
# .modinfo string (no #include). The DKMS version stays, so DKMS builds in
# the same folder and the guest's compiler cache (filled when the image
# was built) serves every file but those three and the .mod.c files. A
# kernel source file takes about 10 s to compile in the TCG guest (55
# files: 546 s uncached, 91 s all cached, measured 2026-12-07; a minute
# on slower hosts): the marker went into each main.c before, three
# such compiles in the apt install.
# The new sources still change each module's srcversion.
# Its reboot is also the group's reboot test (one boot fewer): after
# `systemctl reboot` the Debian 13 guest comes back by itself, drivers
# loaded from their aliases, cnuas0 configured, the RDMA device ACTIVE
# (check_node_up), and RDMA with the other guest works again.
# timeout: 1800
. "$(dirname "$0")/lib.sh"
need_cnuas_nodes 2
need_eth
ROOT=$(cd "$VM_TESTS/../.." && pwd)
N=1
command -v dpkg-parsechangelog >/dev/null || skip_because no-dpkg-dev "dpkg-dev is not installed on the host"

old=$(dpkg-parsechangelog -l "$ROOT/debian/changelog" -S Version)
up=${old%-*}
new=$old+upgrade1
mark="upgrade-test-$(date +%s)"
src=$(mktemp -d /tmp/cnuas-upgrade.XXXXXX)
trap 'rm -rf "$src"' EXIT
(cd "$ROOT" && git ls-files -co --exclude-standard -z |
	while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done | tar -c --null -T -) |
	tar -x -C "$src" || fail "cannot copy the tree"
# What MODULE_INFO(cnuas_build, ...) puts into a module (the kernel's
# __MODULE_INFO without its headers).
for m in cnuas_net cnuas_ib cnuasgpu; do
	printf '%s\n' "// SPDX-License-Identifier: GPL-2.0" \
		"static const char cnuas_build_mark[] __attribute__((used, section(\".modinfo\"), aligned(1))) =" \
		"	\"cnuas_build=$mark\";" >"$src/src/$m/upgrade-mark.c"
	echo "$m-y += upgrade-mark.o" >>"$src/src/$m/Kbuild"
done
{
	printf 'cnuas (%s) unstable; urgency=medium\n\n  * Upgrade test build.\n\n' "$new"
	printf ' -- Cnuas developers <dev@cnuas.invalid>  %s\n\n' "$(date -R)"
	cat "$ROOT/debian/changelog"
} >"$src/debian/changelog"
debs=$("$src/scripts/build-debs" | tail -1) || fail "scripts/build-debs of version $new failed"
deb=$(ls "$debs"/cnuas-dkms_"${new#*:}"_all.deb 2>/dev/null) || fail "no cnuas-dkms $new in $debs"
note "upgrading node$N ($(node_distro $N)) from cnuas-dkms $old to $new: ${deb##*/}"

before=$(lsh -t 30 $N 'cat /sys/module/cnuas_net/srcversion /sys/module/cnuas_ib/srcversion /sys/module/cnuasgpu/srcversion | xargs') ||
	fail "node$N: our modules are not loaded"
note "srcversions before: $before"
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
	echo \"package: \$(dpkg-query -W -f='\${Version}' cnuas-dkms)\"
	echo \"marker: \$(modinfo -F cnuas_build cnuas_net)\"
	[ \$rc = 0 ] || tail -n 30 /root/upgrade/apt.log") || { echo "$out"; fail "node$N: apt install of $new failed"; }
echo "$out"
echo "$out" | grep -q "^apt exit 0 " || fail "apt install of $new failed"
echo "$out" | grep -q "^dkms: .*cnuas/$up, .*installed" || fail "dkms did not install cnuas $up again"
echo "$out" | grep -qx "package: $new" || fail "cnuas-dkms $new is not the installed version"
echo "$out" | grep -qx "marker: $mark" || fail "modprobe would not load the new cnuas_net"

s=$(reboot_node $N)
note "node$N rebooted in $s s"
check_node_up $N
# The loaded module is the file on disk (srcversion) and that file is the
# new build (its marker); its sources changed, so its srcversion did too.
vers=$(lsh -t 30 $N 'for m in cnuas_net cnuas_ib cnuasgpu; do
	echo "$m $(cat /sys/module/$m/srcversion) $(modinfo -F srcversion $m) $(modinfo -F cnuas_build $m)"; done') ||
	fail "node$N: cannot read the modules"
echo "$vers"
stale=$(echo "$vers" | awk -v m="$mark" -v old="$before" '$2 != $3 || $4 != m || index(old, $2)')
[ -z "$stale" ] || fail "node$N did not load the new modules: $stale"
guest_pingpong rc-after-upgrade 0 $N "-n 20"
echo "node$N runs the modules of cnuas-dkms $new after an apt upgrade and a reboot; node0 with $old still talks to it"
