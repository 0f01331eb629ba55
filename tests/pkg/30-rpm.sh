#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# The RPM packages build from rpm/cnuas.spec (scripts/build-rpms, on
# Debian) with a plain `rpmbuild -ba`: the source RPM carries rdma-core's
# release tarball as Source1 and the provider is built against it, no
# rdma-core tree passed in. They hold exactly the files they must, carry
# the right version, licences and DKMS scriptlets, and rpmlint reports no
# errors and no warnings beyond the few listed (and justified) below.
# timeout: 600
# shellcheck disable=SC2015 # `A && ok || bad`: ok() cannot fail
set -euo pipefail
cd "$(dirname "$0")/../.."
for tool in rpmbuild rpmlint rpm2cpio cpio; do
	command -v $tool >/dev/null || {
		echo "FAIL: $tool missing (Debian: apt-get install rpm rpmlint cpio)"
		exit 1
	}
done
version=$(cat VERSION)
rc=0
rpms=$(scripts/build-rpms | tail -n1) || rc=$?
if [ $rc -eq 3 ]; then
	echo "SKIP: no-rdma-core: the provider cannot be built here (no rdma-core source, see above)"
	exit 77
fi
[ $rc -eq 0 ] || exit $rc
srpms=$rpms/../SRPMS
dkms_rpm=$rpms/noarch/cnuas-dkms-$version-1.noarch.rpm
sw_rpm=$(ls "$rpms"/*/cnuas-vswitchd-"$version"-1.*.rpm)
libs_rpm=$(ls "$rpms"/*/cnuas-libs-"$version"-1.*.rpm)
devel_rpm=$(ls "$rpms"/*/cnuas-devel-"$version"-1.*.rpm)
srpm=$srpms/cnuas-$version-1.src.rpm
ls -l "$dkms_rpm" "$sw_rpm" "$libs_rpm" "$devel_rpm" "$srpm"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fail=1; }

# Source files of the tree: what git tracks or would track.
tree_files() {
	if git rev-parse --git-dir >/dev/null 2>&1; then
		git ls-files -co --exclude-standard -- "$@"
	else
		find "$@" -type f
	fi | sort -u
}
# A file list plus every folder leading to its files, below a root.
with_dirs() { # with_dirs ROOT < paths
	awk -v root="$1" '{ print; p = $0
		while ((i = match(p, /\/[^\/]*$/)) > 0) { p = substr(p, 1, i - 1)
			if (length(p) >= length(root)) print p } }' | sort -u
}
compare() { # compare NAME EXPECTED_FILE ACTUAL_FILE
	if diff -u "$2" "$3" >"$tmp/diff"; then
		ok "$1: file list matches ($(wc -l <"$3") paths)"
	else
		bad "$1: file list differs (- expected, + packaged):"
		grep '^[-+]/' "$tmp/diff" | sed 's/^/       /'
	fi
}
# rpm's /usr/lib/.build-id links to our ELF files (Fedora has them too).
packaged() { rpm -qlp "$1" | grep -v '^/usr/lib/\.build-id\(/\|$\)' | sort; }

echo "== file lists"
d=/usr/src/cnuas-$version
{
	echo "/usr/share/doc/cnuas-dkms-$version/README.md"
	echo "$d/dkms.conf"
	make -s --no-print-directory -C src dkms-files | sed "s|^|$d/|"
} | with_dirs /usr/ | grep -vx -e /usr -e /usr/share -e /usr/share/doc -e /usr/src \
	>"$tmp/dkms.expected"
packaged "$dkms_rpm" >"$tmp/dkms.actual"
compare cnuas-dkms "$tmp/dkms.expected" "$tmp/dkms.actual"
# The files DKMS and the build cannot do without, by name.
for f in dkms.conf Makefile Kbuild include/cnuas_vnic_hw.h \
	$(sed -n 's/^BUILT_MODULE_LOCATION\[[0-9]*\]="\(.*\)\/*"/\1Kbuild/p' dkms.conf); do
	grep -qx "$d/$f" "$tmp/dkms.actual" && ok "cnuas-dkms: $d/$f" ||
		bad "cnuas-dkms lacks $d/$f"
done

cat >"$tmp/sw.expected" <<EOF
/etc/default/cnuas-vswitchd
/usr/bin/cnuas-vsctl
/usr/lib/systemd/system/cnuas-vswitchd.service
/usr/lib/sysusers.d/cnuas-vswitchd.conf
/usr/sbin/cnuas-vswitchd
/usr/share/doc/cnuas-vswitchd-$version
/usr/share/doc/cnuas-vswitchd-$version/README.md
/usr/share/man/man8/cnuas-vsctl.8.gz
/usr/share/man/man8/cnuas-vswitchd.8.gz
EOF
packaged "$sw_rpm" >"$tmp/sw.actual"
compare cnuas-vswitchd "$tmp/sw.expected" "$tmp/sw.actual"
[ "$(rpm -qcp "$sw_rpm")" = /etc/default/cnuas-vswitchd ] &&
	ok "cnuas-vswitchd: /etc/default/cnuas-vswitchd is its only %config" ||
	bad "cnuas-vswitchd %config files: $(rpm -qcp "$sw_rpm" | xargs)"

libdir=$(rpm --eval '%{_libdir}')
cat >"$tmp/libs.expected" <<EOF
/etc/libibverbs.d/cnuas.driver
$libdir/libcnuaspeermem.so.1
$libdir/libcnuaspeermem.so.1.0.0
$libdir/libibverbs/libcnuas-rdmav34.so
/usr/share/doc/cnuas-libs-$version
/usr/share/doc/cnuas-libs-$version/README.md
EOF
packaged "$libs_rpm" >"$tmp/libs.actual"
compare cnuas-libs "$tmp/libs.expected" "$tmp/libs.actual"

{
	echo /usr/include/cnuaspeermem.h
	echo "$libdir/libcnuaspeermem.a"
	echo "$libdir/libcnuaspeermem.so"
	echo "$libdir/pkgconfig/libcnuaspeermem.pc"
	echo "/usr/share/doc/cnuas-devel-$version"
	echo "/usr/share/doc/cnuas-devel-$version/README.md"
	for f in reg dereg ibv_mr dmabuf_fd reg_arena supported strerror; do
		echo "/usr/share/man/man3/cnuas_peermem_$f.3.gz"
	done
} | sort >"$tmp/devel.expected"
packaged "$devel_rpm" >"$tmp/devel.actual"
compare cnuas-devel "$tmp/devel.expected" "$tmp/devel.actual"
[ "$(rpm -qcp "$libs_rpm")" = /etc/libibverbs.d/cnuas.driver ] &&
	ok "cnuas-libs: /etc/libibverbs.d/cnuas.driver is its only %config" ||
	bad "cnuas-libs %config files: $(rpm -qcp "$libs_rpm" | xargs)"

echo "== metadata"
meta() { # meta RPM EXPECTED: NAME VERSION ARCH LICENSE
	local got
	got=$(rpm -qp --qf '%{NAME} %{VERSION} %{ARCH} %{LICENSE}' "$1")
	[ "$got" = "$2" ] && ok "$got" || bad "metadata '$got', want '$2'"
}
meta "$dkms_rpm" "cnuas-dkms $version noarch GPL-2.0-only"
meta "$sw_rpm" "cnuas-vswitchd $version $(rpm --eval '%{_arch}') GPL-2.0-or-later OR MIT"
meta "$libs_rpm" "cnuas-libs $version $(rpm --eval '%{_arch}') GPL-2.0-or-later OR MIT"
meta "$devel_rpm" "cnuas-devel $version $(rpm --eval '%{_arch}') GPL-2.0-or-later OR MIT"
got=$(rpm -qp --qf '%{NAME} %{VERSION} %{LICENSE}' "$srpm")
want="cnuas $version GPL-2.0-only AND (GPL-2.0-or-later OR MIT)"
[ "$got" = "$want" ] && ok "source RPM: $got" || bad "source RPM '$got', want '$want'"
rpm -qp --requires "$dkms_rpm" | grep -qx dkms && ok "cnuas-dkms requires dkms" ||
	bad "cnuas-dkms does not require dkms"
# libcnuaspeermem: the SONAME and its symbol version are provided (rpm's
# ELF dependency generator), cnuas-devel pins cnuas-libs of its build.
isa=$(rpm -qp --qf '%{ARCH}' "$libs_rpm" | sed 's/_/-/')
for p in 'libcnuaspeermem.so.1()(64bit)' 'libcnuaspeermem.so.1(CNUASPEERMEM_1.0)(64bit)'; do
	rpm -qp --provides "$libs_rpm" | grep -qxF "$p" && ok "cnuas-libs provides $p" ||
		bad "cnuas-libs does not provide $p"
done
for r in "cnuas-libs($isa) = $version-1" 'pkgconfig(libibverbs)'; do
	rpm -qp --requires "$devel_rpm" | grep -qxF "$r" && ok "cnuas-devel requires $r" ||
		bad "cnuas-devel does not require $r"
done
rpm -qp --provides "$devel_rpm" | grep -qxF 'pkgconfig(libcnuaspeermem) = 1.0.0' &&
	ok "cnuas-devel provides pkgconfig(libcnuaspeermem) = 1.0.0" ||
	bad "cnuas-devel does not provide pkgconfig(libcnuaspeermem) = 1.0.0"
(cd "$tmp" && rpm2cpio "$devel_rpm" | cpio -id --quiet ".$libdir/pkgconfig/libcnuaspeermem.pc")
got=$(sed -n 's/^libdir=//p' "$tmp$libdir/pkgconfig/libcnuaspeermem.pc")
[ "$got" = "\${prefix}/${libdir#/usr/}" ] && ok "libcnuaspeermem.pc: libdir=$got" ||
	bad "libcnuaspeermem.pc: libdir=$got, want \${prefix}/${libdir#/usr/}"

echo "== dkms.conf and scriptlets"
(cd "$tmp" && rpm2cpio "$dkms_rpm" | cpio -id --quiet ".$d/dkms.conf")
if grep -qx "PACKAGE_VERSION=\"$version\"" "$tmp$d/dkms.conf" &&
	! grep -q '#MODULE_VERSION#' "$tmp$d/dkms.conf"; then
	ok "dkms.conf PACKAGE_VERSION=\"$version\""
else
	bad "dkms.conf version: $(grep PACKAGE_VERSION "$tmp$d/dkms.conf")"
fi
rpm -qp --scripts "$dkms_rpm" >"$tmp/scripts"
for want in "postinstall:dkms add -m cnuas -v $version --rpm_safe_upgrade" \
	"postinstall:dkms build -m cnuas -v $version" \
	"postinstall:dkms install -m cnuas -v $version" \
	"preuninstall:dkms remove -m cnuas -v $version --all --rpm_safe_upgrade"; do
	# The command must be in the right scriptlet.
	if awk -v s="${want%%:*}" -v c="${want#*:}" '
		/^[a-z]+ scriptlet/ { cur = $1 }
		cur == s && index($0, c) { found = 1 } END { exit !found }' "$tmp/scripts"; then
		ok "%${want%%:*}: ${want#*:}"
	else
		bad "no '${want#*:}' in %${want%%:*}"
	fi
done

echo "== source RPM"
(cd "$tmp" && rpm2cpio "$srpm" | cpio -id --quiet)
got=$(rpmspec -q --srpm --qf '%{VERSION}' "$tmp/cnuas.spec" 2>&1) &&
	[ "$got" = "$version" ] && ok "its spec parses on its own, version $got" ||
	bad "its spec does not parse on its own: $got"
tar -tzf "$tmp/cnuas-$version.tar.gz" | grep -v '/$' |
	sed "s|^cnuas-$version/||" | sort >"$tmp/tar.actual"
tree_files VERSION dkms.conf src userspace rpm README.md scripts/build-provider \
	scripts/configure-rdma-core |
	while read -r f; do [ -e "$f" ] && echo "$f"; done >"$tmp/tar.expected"
compare "cnuas-$version.tar.gz (source files only, no build output)" \
	"$tmp/tar.expected" "$tmp/tar.actual"
# Source1: rdma-core's release tarball, in the source RPM under its name.
src1=$(rpmspec -P "$tmp/cnuas.spec" 2>/dev/null | sed -n 's/^Source1: *//p')
src1=${src1##*/}
[ -n "$src1" ] && [ -f "$tmp/$src1" ] &&
	tar -tzf "$tmp/$src1" | grep '^rdma-core-[0-9.]*/providers/' >/dev/null &&
	ok "Source1 $src1 (rdma-core) is in the source RPM" ||
	bad "the source RPM lacks Source1 (rdma-core's tarball): '$src1'"
# Built by a plain rpmbuild -ba: no rdma_core_tree defined, the provider
# compiled against the rdma-core/ that %prep unpacked from Source1.
log=$rpms/../build.log
if head -n1 "$log" | grep -q '^+ rpmbuild -ba ' && ! head -n1 "$log" | grep -q rdma_core_tree &&
	grep -q '^+ scripts/configure-rdma-core rdma-core$' "$log" &&
	grep -q "^build-provider: rdma-core [0-9.]* headers, provider ABI" "$log" &&
	grep -q '^+ scripts/build-provider --rdma-core .*/cnuas-[^/]*/rdma-core$' "$log"; then
	ok "rpmbuild -ba without rdma_core_tree: the provider built against Source1's rdma-core/"
else
	bad "build.log does not show the provider built against Source1's rdma-core/:"
	grep -E '^\+ (rpmbuild|scripts/)' "$log" | sed 's/^/       /'
fi

echo "== rpmlint"
# Accepted findings, each with its reason. Everything else fails.
cat >"$tmp/rpmlint.toml" <<'EOF'
# Fedora's values where rpmlint's defaults are openSUSE's.
CompressExtension = "gz"
ValidLicenses = ["GPL-2.0-only", "GPL-2.0-or-later", "MIT"]
Filters = [
    # Packages built locally are unsigned; Fedora signs in its build system.
    ' no-signature',
    # openSUSE rules: Fedora forbids Packager and dropped Group and BuildRoot.
    ' no-packager-tag', ' no-group-tag', ' no-buildroot-tag',
    # Debian's rpm has no debuginfo machinery (find-debuginfo); on Fedora
    # the binaries are stripped into cnuas-debuginfo.
    ' unstripped-binary-or-object ',
    # VERSION is the only place naming the version; the %changelog entry
    # does not repeat it (CHANGELOG in the tree holds the history).
    ' no-version-in-last-changelog',
    # systemd's sysusers.d is /usr/lib/sysusers.d on every architecture
    # (Fedora's systemd-rpm-macros say so; Debian's rpm lacks the macro).
    ' hardcoded-library-path in /usr/lib/sysusers.d',
    # A DKMS package ships C sources and headers by design.
    ' devel-file-in-non-devel-package /usr/src/cnuas-',
    # rpmlint 2.4 bug: FilesCheck collects the man section ("8"), not the
    # page name, so every binary looks undocumented. Both man pages are
    # in the exact file list checked above.
    ' no-manual-page-for-binary cnuas-vs',
    # openSUSE/Mandriva library rules: cnuas-libs holds a dlopen()ed
    # libibverbs plugin and its .driver file, as Fedora's own libibverbs
    # package does with /etc/libibverbs.d/*.driver; no %mklibname on Fedora.
    ' outside-libdir-files /etc/libibverbs.d/cnuas.driver',
    ' lib-package-without-%mklibname',
    # cnuas-libs also holds libcnuaspeermem.so.1 (Fedora's -libs/-devel
    # split), so openSUSE's shared library policy
    # applies to it: one versioned library per package, named after
    # its SONAME (no-major-in-name), with nothing unversioned beside it.
    # Fedora's -libs packages hold configuration and /usr/lib/.build-id
    # (libibverbs itself ships /etc/libibverbs.d there).
    ' non-versioned-file-in-library-package /etc/libibverbs.d/cnuas.driver',
    ' non-versioned-file-in-library-package /usr/lib/.build-id',
    ' no-major-in-name cnuas-devel',
    # Fedora 28+ runs ldconfig from glibc's file triggers, and Fedora's
    # guidelines say not to add ldconfig scriptlets.
    ' library-without-ldconfig-postin /usr/lib64/libcnuaspeermem.so.1.0.0',
    ' library-without-ldconfig-postun /usr/lib64/libcnuaspeermem.so.1.0.0',
    # openSUSE links with --hash-style=both; Fedora's and Debian's
    # toolchains emit only .gnu.hash (present), like glibc's own libraries.
    ' missing-hash-section /usr/lib64/libcnuaspeermem.so.1.0.0',
    # brp-strip-static-archive (Fedora's default as Debian rpm's) strips
    # debug info from every static archive; the debuginfo of the code is
    # that of libcnuaspeermem.so.1 (cnuas-debuginfo on Fedora).
    ' static-library-without-debuginfo /usr/lib64/libcnuaspeermem.a',
    # Fedora's guidelines require -devel to pin its base package exactly:
    # Requires: %{name}-libs%{?_isa} = %{version}-%{release}.
    ' requires-on-release cnuas-libs',
    # Source0 is the tarball scripts/build-rpms makes; no release URL yet.
    ' invalid-url Source0: cnuas-',
]
EOF
rpmlint -c "$tmp/rpmlint.toml" "$dkms_rpm" "$sw_rpm" "$libs_rpm" "$devel_rpm" "$srpm" >"$tmp/lint" 2>&1 || true
cat "$tmp/lint"
if grep -E ': [EW]: ' "$tmp/lint" >/dev/null; then
	bad "rpmlint: errors or unlisted warnings above"
elif grep -q '5 packages and 0 specfiles checked; 0 errors, 0 warnings' "$tmp/lint"; then
	ok "rpmlint: 0 errors, 0 warnings beyond the accepted list"
else
	bad "rpmlint did not report a clean run"
fi

cat <<'EOF'
== scope
Validated here (Debian 12, rpm 4.18, rpmlint 2.4): the spec builds (with
--nodeps: the build dependencies are Debian's), the source RPM's spec parses
on its own, the tarball holds only source files, the file lists, versions,
licences, %config, the DKMS scriptlets, and rpmlint with Fedora's man page
compression and the accepted findings above.
The provider in cnuas-libs is built against the private headers of the
rdma-core in Source1 (56.1, PABI 34), as on Debian; Fedora 41/42 ship rdma-core with the
same PABI, but loading it in Fedora's libibverbs is not tried here.
libcnuaspeermem: its SONAME and symbol version as RPM Provides, the
cnuas-devel pin on cnuas-libs and the pkg-config file's libdir are
checked here; linking against the installed cnuas-devel is not.
Only on Fedora: BuildRequires resolution (cmake, gcc, make, ninja-build,
pkgconfig(libibverbs), rdma-core-devel, pkgconfig(libpcap), pkgconfig(libsystemd),
pkgconfig(zlib), python3, systemd-rpm-macros), fetching Source1 from its URL, Fedora's hardening flags,
debuginfo/debugsource packages, the systemd scriptlets (%systemd_post etc.
are not defined by Debian's rpm, so cnuas-vswitchd has none here),
/usr/sbin merged into /usr/bin (Fedora 42+), Fedora's licence list, and
installing with dnf: dkms add/build/install in %post, remove in %preun.
EOF
exit $fail
