#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# autopkgtest of our Debian packages inside a real guest (node 0: Debian 12
# booted by systemd, with a cnuas-vnic on the switch): the DKMS test
# autodep8 generates from "Testsuite: autopkgtest-pkg-dkms" and our
# debian/tests/device-smoke must both PASS (not skip). The guest has no
# route to a Debian mirror, so the test dependencies are in the image and
# apt sees only autopkgtest's own repository of the built packages. gcc
# under TCG takes ~100 s per kernel source file, so the image routes gcc-N
# through ccache and fills that cache with its own (native) DKMS build of
# the same sources; the guest still runs the whole dkms build and install.
# The ccache line below shows hits and misses: misses mean an hour-long
# build (and a timeout).
# timeout: 1500
. "$(dirname "$0")/lib.sh"
need_cnuas_nodes 1
need_eth
ROOT=$(cd "$VM_TESTS/../.." && pwd)
lsh 0 'command -v autopkgtest >/dev/null' || skip "autopkgtest is not in the guest image"

debs=$("$ROOT/scripts/build-debs" | tail -1) || fail "scripts/build-debs failed"
note "packages from $debs"

# The unbuilt source tree (what dpkg-source would ship) and the .debs.
lsh 0 'rm -rf /root/apt && mkdir -p /root/apt/src /root/apt/debs' || fail "guest mkdir"
(cd "$ROOT" && git ls-files -co --exclude-standard -z -- VERSION dkms.conf debian src userspace LICENSES scripts/build-provider |
	while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done | tar -c --null -T -) | lx 0 tar -x -C /root/apt/src || fail "copying the source tree"
tar -C "$debs" -c . | lx 0 tar -x -C /root/apt/debs || fail "copying the packages"

# The packages come from a local flat repository, as from an archive, so
# autopkgtest does not reinstall them (one DKMS build under TCG, not
# three). The lab VM is disposable: breaking it and machine isolation
# are what it is for.
out=$(lsh -t 1400 0 '
	set -u
	mkdir -p /root/apt/saved
	mv /etc/apt/sources.list /etc/apt/sources.list.d/* /root/apt/saved/ 2>/dev/null
	(cd /root/apt/debs && dpkg-scanpackages . /dev/null >Packages 2>/dev/null)
	echo "deb [trusted=yes] file:/root/apt/debs ./" >/etc/apt/sources.list
	apt-get update -q >/root/apt/log 2>&1
	export PATH=/usr/local/sbin:/usr/local/bin:$PATH DEBIAN_KERNEL_USE_CCACHE=1
	ccache -z >/dev/null 2>&1
	autopkgtest --no-built-binaries \
		--ignore-restrictions breaks-testbed,isolation-machine \
		--output-dir /root/apt/out /root/apt/src -- null >>/root/apt/log 2>&1
	rc=$?
	mv /root/apt/saved/sources.list /etc/apt/ 2>/dev/null
	mv /root/apt/saved/* /etc/apt/sources.list.d/ 2>/dev/null
	apt-get update -q >/dev/null 2>&1
	echo "autopkgtest exit $rc"
	echo "ccache: $(ccache --print-stats 2>/dev/null | grep -E "^(direct_cache_hit|preprocessed_cache_hit|cache_miss)[[:space:]]" | tr -s "\t\n" "= ")"
	cat /root/apt/out/summary 2>/dev/null
	echo "---- log tail"
	tail -n 40 /root/apt/log') || true
echo "$out"
summary=$(echo "$out" | sed -n '/^autopkgtest exit/,/^---- log tail/p')
echo "$summary" | grep -Eq '^dkms-autopkgtest +PASS' || fail "the DKMS autopkgtest did not pass"
echo "$summary" | grep -Eq '^device-smoke +PASS' || fail "device-smoke did not pass (a SKIP counts as a failure here)"
echo "dkms-autopkgtest and device-smoke passed in the guest"
