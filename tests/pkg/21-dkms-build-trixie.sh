#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# The cnuas-dkms .deb builds its modules on Debian 13 (trixie, 6.12): in a
# throwaway trixie chroot with linux-headers-amd64 (scripts/kernel-headers)
# dpkg installs the package, its postinst builds and installs with that
# suite's DKMS and gcc, and each module of dkms.conf must be there with a
# vermagic naming that kernel. 22-dkms-build-sid.sh runs this for sid.
# gcc runs through ccache (scripts/kernel-headers run --ccache): sources
# and headers unchanged since the last run, the objects come from the
# cache; the log's ccache line counts hits and misses.
# Skips only when the suite cannot be fetched; a compile error fails.
# timeout: 1500
set -euo pipefail
cd "$(dirname "$0")/../.."
suite=${CNUAS_DKMS_SUITE:-trixie}
version=$(cat VERSION)
debver=$(dpkg-parsechangelog -l debian/changelog -S Version)
modules=$(sed -n 's/^BUILT_MODULE_NAME\[[0-9]*\]="\(.*\)"/\1/p' dkms.conf)
[ -n "$modules" ] || { echo "FAIL: no BUILT_MODULE_NAME in dkms.conf"; exit 1; }

rc=0
scripts/kernel-headers "$suite" >/dev/null || rc=$?
if [ $rc -eq 75 ]; then
	echo "SKIP: no-debian-mirror: Debian $suite cannot be fetched (mirror unreachable, nothing cached)"
	exit 77
fi
[ $rc -eq 0 ] || { echo "FAIL: scripts/kernel-headers $suite failed ($rc)"; exit 1; }
debs=$(scripts/build-debs | tail -n1)

# Runs inside the chroot: $1 = version, $2 = package version, the rest =
# module names.
# shellcheck disable=SC2016 # expanded by the bash in the chroot
inner='
set -u
version=$1
debver=$2
shift 2
kver=$(ls /lib/modules | sort -V | tail -n1)
[ -e "/lib/modules/$kver/build/Makefile" ] || {
	echo "FAIL: no headers for $kver"; exit 1; }
echo "kernel $kver, $(dkms --version)," \
	"$(sed -n "s/^CONFIG_CC_VERSION_TEXT=//p" "/lib/modules/$kver/build/.config")"
fail=0
ccache -z >/dev/null
# As a user installs it: the postinst adds, builds and installs (AUTOINSTALL).
if ! dpkg -i "/mnt/debs/cnuas-dkms_${debver}_all.deb"; then
	echo "FAIL: dpkg -i cnuas-dkms (postinst) failed"
	fail=1
fi
dkms status -m cnuas -v "$version"
# Not built by the postinst? Build here so the error shows.
if ! ls /var/lib/dkms/cnuas/"$version"/"$kver"/*/module/*.ko* >/dev/null 2>&1 &&
	! dkms build -m cnuas -v "$version" -k "$kver"; then
	echo "FAIL: dkms build failed for kernel $kver; make.log:"
	find /var/lib/dkms/cnuas -name make.log -exec cat {} + 2>/dev/null ||
		echo "(no make.log)"
	exit 1
fi
echo "ccache: $(ccache --print-stats | grep -E "^(direct_cache_hit|preprocessed_cache_hit|cache_miss)[[:space:]]" | tr -s "\t\n" "= ")"
# Compiler warnings are worth seeing on a new kernel, though not fatal.
warnings=$(find /var/lib/dkms/cnuas -name make.log -exec grep -h "warning:" {} + 2>/dev/null)
[ -z "$warnings" ] && echo "ok   no compiler warnings" ||
	printf "note: compiler warnings:\n%s\n" "$warnings"
for m in "$@"; do
	f=$(ls /var/lib/dkms/cnuas/"$version"/"$kver"/*/module/"$m".ko* 2>/dev/null | head -n1)
	if [ -z "$f" ]; then
		echo "FAIL: module $m not built for $kver"; fail=1; continue
	fi
	vermagic=$(modinfo -F vermagic "$f")
	case $vermagic in
	"$kver "*) echo "ok   $m built: $vermagic" ;;
	*) echo "FAIL: $m vermagic \"$vermagic\" is not for $kver"; fail=1 ;;
	esac
	# The postinst also installed it for that kernel (depmod runs only
	# once the kernel image is there: sid headers do not pull it in).
	inst=$(ls /lib/modules/"$kver"/updates/dkms/"$m".ko* 2>/dev/null | head -n1)
	if [ -n "$inst" ] && cmp -s <(modinfo -F vermagic "$inst") <(echo "$vermagic"); then
		echo "ok   $m installed: $inst"
	else
		echo "FAIL: $m not installed in /lib/modules/$kver/updates/dkms"
		fail=1
	fi
done
exit $fail
'
# shellcheck disable=SC2086 # one word per module
scripts/kernel-headers run "$suite" --bind "$debs:/mnt/debs" --ccache -- \
	bash -c "$inner" inner "$version" "$debver" $modules
