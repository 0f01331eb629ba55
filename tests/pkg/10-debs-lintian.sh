#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# The Debian packages build (scripts/build-debs: source package first,
# then the binaries from it), lintian reports no errors on the binaries
# and the source package, and each package holds the files it must.
# timeout: 1200
set -euo pipefail
cd "$(dirname "$0")/../.."
version=$(cat VERSION)
debver=$(dpkg-parsechangelog -l debian/changelog -S Version)
rc=0
dir=$(scripts/build-debs | tail -n1) || rc=$?
if [ $rc -eq 3 ]; then
	echo "SKIP: no-rdma-core: the provider cannot be built here (no rdma-core source, see above)"
	exit 77
fi
[ $rc -eq 0 ] || exit $rc
ls -l "$dir"

dkms_deb=$dir/cnuas-dkms_${debver}_all.deb
sw_deb=$(ls "$dir"/cnuas-vswitchd_"${debver}"_*.deb)
prov_deb=$(ls "$dir"/cnuas-ibverbs-provider_"${debver}"_*.deb)
pm_deb=$(ls "$dir"/libcnuaspeermem1_"${debver}"_*.deb)
pmdev_deb=$(ls "$dir"/libcnuaspeermem-dev_"${debver}"_*.deb)
dsc=$dir/cnuas_${debver}.dsc
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "== lintian"
# The package is not in Debian: its first changelog entry has no ITP bug
# to close (initial-upload-closes-no-bugs, one per binary package).
lintian --fail-on error --suppress-tags dir-or-file-in-opt,initial-upload-closes-no-bugs \
	"$dir"/*.changes "$dsc"

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
# Exactly these files (the table in docs/packaging.md), besides /usr/share/doc.
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
# The module sources are the one list of src/Makefile, beside dkms.conf.
mapfile -t dkms_files < <(make -s --no-print-directory -C src dkms-files |
	sed "s|^|/usr/src/cnuas-$version/|")
exact "$dkms_deb" /usr/src/cnuas-"$version"/dkms.conf "${dkms_files[@]}"
exact "$sw_deb" /etc/default/cnuas-vswitchd /lib/systemd/system/cnuas-vswitchd.service \
	/etc/apparmor.d/abstractions/libvirt-qemu.d/cnuas-vswitchd \
	/usr/lib/sysusers.d/cnuas-vswitchd.conf \
	/usr/bin/cnuas-vsctl /usr/sbin/cnuas-vswitchd \
	/usr/share/man/man8/cnuas-vsctl.8.gz /usr/share/man/man8/cnuas-vswitchd.8.gz
exact "$prov_deb" /usr/lib/"$multiarch"/libibverbs/libcnuas-rdmav34.so \
	/etc/libibverbs.d/cnuas.driver
ml=/usr/lib/$multiarch
exact "$pm_deb" "$ml"/libcnuaspeermem.so.1 "$ml"/libcnuaspeermem.so.1.0.0
pm_funcs=(reg dereg ibv_mr dmabuf_fd reg_arena supported strerror)
pm_man=() pm_syms=()
for f in "${pm_funcs[@]}"; do
	pm_man+=("/usr/share/man/man3/cnuas_peermem_$f.3.gz")
	pm_syms+=("cnuas_peermem_$f@CNUASPEERMEM_1.0")
done
exact "$pmdev_deb" /usr/include/cnuaspeermem.h "$ml"/libcnuaspeermem.a \
	"$ml"/libcnuaspeermem.so "$ml"/pkgconfig/libcnuaspeermem.pc \
	"${pm_man[@]}"
# The runtime package carries the SONAME, a symbols file with every
# versioned symbol and the ldconfig trigger; the -dev package's link
# points at the SONAME and its pkg-config file at the multiarch libdir.
ctl() { dpkg-deb --ctrl-tarfile "$1" | tar -xO "./$2" 2>/dev/null || true; }
check() { # check WHAT GOT WANT
	if [ "$2" = "$3" ]; then
		echo "ok   $1"
	else
		printf 'FAIL %s:\n  got:  %s\n  want: %s\n' "$1" "$2" "$3"
		fail=1
	fi
}
# The switch package makes the group its socket belongs to before it
# starts the service, and the service runs with it.
postinst=$(ctl "$sw_deb" postinst)
sysusers_at=$(echo "$postinst" | grep -n 'systemd-sysusers.*cnuas-vswitchd.conf' | head -n1 | cut -d: -f1)
start_at=$(echo "$postinst" | grep -n 'deb-systemd-invoke' | head -n1 | cut -d: -f1)
check "cnuas-vswitchd: postinst creates the group before it starts the service" \
	"$([ -n "$sysusers_at" ] && [ -n "$start_at" ] && [ "$sysusers_at" -lt "$start_at" ] && echo yes)" yes
check "cnuas-vswitchd: the group" \
	"$(dpkg-deb --fsys-tarfile "$sw_deb" | tar -xO ./usr/lib/sysusers.d/cnuas-vswitchd.conf | grep -v '^#')" \
	"g cnuas - -"
check "cnuas-vswitchd: the unit runs with it, its runtime folder closed to others" \
	"$(dpkg-deb --fsys-tarfile "$sw_deb" | tar -xO ./lib/systemd/system/cnuas-vswitchd.service |
		grep -E '^(Group|RuntimeDirectoryMode)=' | xargs)" "Group=cnuas RuntimeDirectoryMode=0750"

dpkg-deb -x "$pm_deb" "$tmp/pm"
so=$tmp/pm$ml/libcnuaspeermem.so.1.0.0
check "libcnuaspeermem1: SONAME" \
	"$(readelf -d "$so" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')" libcnuaspeermem.so.1
syms=$(readelf --dyn-syms -W "$so" |
	awk '$7 != "UND" && $5 == "GLOBAL" && $4 == "FUNC" {sub("@@", "@", $8); print $8}' | sort)
check "libcnuaspeermem1: exported functions" "$(echo "$syms" | xargs)" \
	"$(printf '%s\n' "${pm_syms[@]}" | sort | xargs)"
check "libcnuaspeermem1: symbols file (those and the version node)" \
	"$(ctl "$pm_deb" symbols | awk '/^ / {print $1}' | sort | xargs)" \
	"$(printf '%s\n' CNUASPEERMEM_1.0@CNUASPEERMEM_1.0 "${pm_syms[@]}" | sort | xargs)"
check "libcnuaspeermem1: shlibs" "$(ctl "$pm_deb" shlibs)" \
	"libcnuaspeermem 1 libcnuaspeermem1 (>= $version)"
check "libcnuaspeermem1: ldconfig trigger" \
	"$(ctl "$pm_deb" triggers | grep -v '^#')" "activate-noawait ldconfig"
check "libcnuaspeermem-dev: unversioned link" \
	"$(dpkg-deb -c "$pmdev_deb" | awk -v l=".$ml/libcnuaspeermem.so" '$6 == l {print $8}')" \
	libcnuaspeermem.so.1
check "libcnuaspeermem-dev: depends on the runtime package" \
	"$(dpkg-deb -f "$pmdev_deb" Depends | grep -o "libcnuaspeermem1 ([^)]*)")" \
	"libcnuaspeermem1 (= $debver)"
check "libcnuaspeermem-dev: pkg-config libdir" \
	"$(dpkg-deb --fsys-tarfile "$pmdev_deb" | tar -xO ".$ml/pkgconfig/libcnuaspeermem.pc" |
		sed -n 's/^libdir=//p')" "\${prefix}/lib/$multiarch"

# A program builds from the -dev package with pkg-config alone, shared
# (runs against the runtime package) and static.
dpkg-deb -x "$pmdev_deb" "$tmp/pm"
cat >"$tmp/use.c" <<'EOF'
#include <errno.h>
#include <stdio.h>
#include <cnuaspeermem.h>
int main(void)
{
	struct cnuas_peermem_mr *mr = (void *)1;
	int rc = cnuas_peermem_reg_arena("", 1, NULL, 0, &mr);

	puts(cnuas_peermem_strerror(rc));
	return !(rc == -EOPNOTSUPP && mr == NULL);
}
EOF
pc() { PKG_CONFIG_SYSROOT_DIR=$tmp/pm PKG_CONFIG_PATH=$tmp/pm$ml/pkgconfig pkg-config "$@" libcnuaspeermem; }
# shellcheck disable=SC2046 # pkg-config's output is a list of flags
if cc -o "$tmp/use" "$tmp/use.c" $(pc --cflags --libs) >"$tmp/cc.log" 2>&1 &&
	LD_LIBRARY_PATH=$tmp/pm$ml "$tmp/use" >>"$tmp/cc.log" 2>&1 &&
	readelf -d "$tmp/use" | grep -q 'NEEDED.*\[libcnuaspeermem\.so\.1\]'; then
	echo "ok   libcnuaspeermem-dev: pkg-config build, runs against libcnuaspeermem.so.1"
else
	echo "FAIL libcnuaspeermem-dev: shared build or run:"; sed 's/^/   /' "$tmp/cc.log"
	fail=1
fi
# shellcheck disable=SC2046
if cc -o "$tmp/use-static" "$tmp/use.c" $(pc --cflags) $(pc --libs-only-L) \
	-Wl,-Bstatic -lcnuaspeermem -Wl,-Bdynamic $(pc --static --libs-only-l |
		sed 's/-lcnuaspeermem//') >"$tmp/cc.log" 2>&1 &&
	"$tmp/use-static" >>"$tmp/cc.log" 2>&1 &&
	! readelf -d "$tmp/use-static" | grep -q 'libcnuaspeermem'; then
	echo "ok   libcnuaspeermem-dev: links the static library"
else
	echo "FAIL libcnuaspeermem-dev: static build or run:"; sed 's/^/   /' "$tmp/cc.log"
	fail=1
fi

# libibverbs loads providers through the .driver file: "driver cnuas".
if dpkg-deb --fsys-tarfile "$prov_deb" | tar -xO ./etc/libibverbs.d/cnuas.driver | grep -qx 'driver cnuas'; then
	echo "ok   cnuas.driver names the provider"
else
	echo "FAIL cnuas.driver does not say 'driver cnuas'"
	fail=1
fi

# The version substituted into dkms.conf comes from VERSION.
dpkg-deb -x "$dkms_deb" "$tmp"
if grep -qx "PACKAGE_VERSION=\"$version\"" "$tmp/usr/src/cnuas-$version/dkms.conf"; then
	echo "ok   dkms.conf PACKAGE_VERSION=$version"
else
	echo "FAIL dkms.conf version:"; grep PACKAGE_VERSION "$tmp"/usr/src/cnuas-*/dkms.conf
	fail=1
fi
# A non-native version: VERSION plus a Debian revision.
if [ "${debver%-*}" = "$version" ] && [ "$debver" != "$version" ]; then
	echo "ok   debian/changelog $debver is VERSION ($version) plus a Debian revision"
else
	echo "FAIL debian/changelog $debver is not VERSION $version plus a Debian revision"
	fail=1
fi
# The source package carries rdma-core as its component tarball, and
# the provider was built against the rdma-core/ unpacked from it.
comp=$(sed -n 's/^ [0-9a-f]\{64\} [0-9]* \(cnuas_.*\.orig-rdma-core\.tar\..*\)/\1/p' "$dsc")
if [ -n "$comp" ] && [ -f "$dir/$comp" ] && grep -qx 'Format: 3.0 (quilt)' "$dsc"; then
	echo "ok   $(basename "$dsc"): 3.0 (quilt) with $comp"
else
	echo "FAIL $(basename "$dsc") is not 3.0 (quilt) with an orig-rdma-core tarball"
	fail=1
fi
if grep -q "^scripts/build-provider --rdma-core \".*/cnuas-$version/rdma-core\"$" "$dir/build.log"; then
	echo "ok   the provider was built against the package's rdma-core/"
else
	echo "FAIL build.log does not show the provider built against rdma-core/:"
	grep 'build-provider' "$dir/build.log" | sed 's/^/   /'
	fail=1
fi
exit $fail
