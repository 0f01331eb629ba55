#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# The AppArmor snippet of the cnuas-vswitchd .deb (docs/libvirt.md) in the
# profile libvirt gives a domain: libvirt's own virt-aa-helper makes the
# profile of docs/libvirt.md's first domain from Debian's TEMPLATE.qemu
# and "loads" it, in a mount namespace where /etc/apparmor.d is a private
# copy of the host's with the .deb's snippet in it and apparmor_parser
# compiles without loading (--skip-kernel-load). Then, from the parser's
# own compiled rules (-D rule-exprs):
#  - the domain's profile has the snippet's rules, as installed by the
#    package alone where libvirt's abstractions/libvirt-qemu reads
#    abstractions/libvirt-qemu.d/ (later libvirt releases); on Debian 12's
#    libvirt 9.0, which does not, with the one line docs/libvirt.md has
#    the administrator add to local/abstractions/libvirt-qemu;
#  - what the snippet adds is exactly r on /run/cnuas/ and rw on
#    /run/cnuas/switch.sock: nothing else of ours (the control socket,
#    /var/lib/cnuas-vswitchd, /etc/default/cnuas-vswitchd, the binaries);
#  - a snippet with a syntax error fails virt-aa-helper's load, so the
#    snippet is compiled and this test can fail.
# Nothing is loaded into a kernel: enforcement is not tested here (this
# host's kernel has no AppArmor). The host's /etc/apparmor.d and libvirt
# state are not touched.
# timeout: 300
set -uo pipefail
export LC_ALL=C
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 2
# shellcheck source=../lib-skip.sh
. "$top/tests/lib-skip.sh"
fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok   $*"; }

HELPER=/usr/lib/libvirt/virt-aa-helper
SNIPPET=abstractions/libvirt-qemu.d/cnuas-vswitchd
# What the snippet may grant, as rules; compiled below for comparison.
WANT='/run/cnuas/ r,
/run/cnuas/switch.sock rw,'
# Debian's pinned policy features (/etc/apparmor/parser.conf): what an
# AppArmor host compiles against. Without them the parser picks a default.
FEATURES=/usr/share/apparmor-features/features

[ "$(id -u)" = 0 ] || skip_because not-root "a mount namespace for virt-aa-helper"
need() { # need COMMAND PACKAGE TAG
	[ -x "$1" ] && return 0
	echo "# installing $2"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$2" >/dev/null ||
		skip_because "$3" "apt-get install $2 failed"
	[ -x "$1" ] || fail "$2 installed, but no $1"
}
need /sbin/apparmor_parser apparmor no-apparmor
need "$HELPER" libvirt-daemon-system no-libvirt
[ -f /etc/apparmor.d/libvirt/TEMPLATE.qemu ] || fail "no /etc/apparmor.d/libvirt/TEMPLATE.qemu"

rc=0
debs=$(scripts/build-debs | tail -n1) || rc=$?
[ $rc -eq 3 ] && skip_because no-rdma-core "the packages cannot be built here (no rdma-core source, see above)"
[ $rc -eq 0 ] || fail "scripts/build-debs failed"
debfiles=("$debs"/cnuas-vswitchd_*_amd64.deb)
deb=${debfiles[-1]}
[ -f "$deb" ] || fail "no cnuas-vswitchd .deb in $debs"

T=$(mktemp -d) || exit 2
trap 'rm -rf "$T"' EXIT
dpkg-deb -x "$deb" "$T/pkg" || fail "cannot unpack $deb"
[ -f "$T/pkg/etc/apparmor.d/$SNIPPET" ] || fail "$(basename "$deb") has no /etc/apparmor.d/$SNIPPET"
AA=$T/apparmor.d
cp -a /etc/apparmor.d "$AA"
rm -f "$AA"/libvirt/libvirt-*   # the host's domains
install -D -m 0644 "$T/pkg/etc/apparmor.d/$SNIPPET" "$AA/$SNIPPET"

# The parser virt-aa-helper runs (/sbin/apparmor_parser -a PROFILE):
# compiles with the pinned features, loads nothing, logs what it says
# (virt-aa-helper keeps only its exit status).
mflag=()
[ -f "$FEATURES" ] && mflag=(-M "$FEATURES")
install -m 0755 /sbin/apparmor_parser "$T/apparmor_parser"
cat >"$T/parser-no-load" <<EOF
#!/bin/sh
echo "\$*" >>"$T/parser-calls"
exec "$T/apparmor_parser" --skip-kernel-load --skip-cache ${mflag[*]} "\$@" 2>>"$T/parser.log"
EOF
chmod 0755 "$T/parser-no-load"

# The docs' first domain, with a UUID (libvirt adds one at define) and its
# disk a placeholder file.
uuid=$(cat /proc/sys/kernel/random/uuid)
: >"$T/vm1.qcow2"
/usr/bin/python3 - docs/libvirt.md "$uuid" "$T/vm1.qcow2" >"$T/vm1.xml" <<'PY' || fail "no domain XML from docs/libvirt.md"
import re, sys, xml.etree.ElementTree as ET
md, uuid, disk = sys.argv[1:]
m = re.search(r"<!-- libvirt-test: vnic -->\s*```xml\n(.*?)```", open(md).read(), re.S)
if not m:
    sys.exit("docs/libvirt.md has no domain marked vnic")
ET.register_namespace("qemu", "http://libvirt.org/schemas/domain/qemu/1.0")
d = ET.fromstring(m.group(1))
u = ET.Element("uuid")
u.text = uuid
d.insert(1, u)
d.find("devices/disk/source").set("file", disk)
print(ET.tostring(d, encoding="unicode"))
PY

# aa_helper ARGS...: libvirt's virt-aa-helper on the domain, in a mount
# namespace where /etc/apparmor.d is $AA and apparmor_parser loads nothing.
aa_helper() {
	# shellcheck disable=SC2016 # expanded by that sh
	unshare --mount --propagation private -- sh -c '
		mount --bind "$1" /etc/apparmor.d &&
		mount --bind "$2" /sbin/apparmor_parser || exit 2
		shift 2
		exec "$@"' sh "$AA" "$T/parser-no-load" "$HELPER" "$@" <"$T/vm1.xml"
}
PROFILE=$AA/libvirt/libvirt-$uuid
# make_profile: the domain's profile and .files, afresh, as libvirtd does
# at `virsh start` (virt-aa-helper -c: create from TEMPLATE.qemu, load).
make_profile() {
	rm -f "$PROFILE" "$PROFILE.files" "$T/parser-calls" "$T/parser.log"
	aa_helper -c -u "libvirt-$uuid" >"$T/helper.log" 2>&1
}
helper_failed() { cat "$T/helper.log" "$T/parser.log" 2>/dev/null; fail "$*"; }
# rules FILE: the rules the parser compiles FILE to (regex and permissions).
rules() {
	"$T/apparmor_parser" --skip-kernel-load --skip-cache "${mflag[@]}" --base "$AA" \
		-D rule-exprs "$1" 2>&1 | grep '^rule:' | sort -u
}
# has_socket_rule: the domain's profile grants the switch's socket.
has_socket_rule() { rules "$PROFILE" | grep -qF 'rule: /run/cnuas/switch\.sock '; }

make_profile || helper_failed "virt-aa-helper -c failed"
grep -qx -- "-a /etc/apparmor.d/libvirt/libvirt-$uuid" "$T/parser-calls" ||
	fail "virt-aa-helper did not run apparmor_parser -a on the profile: $(cat "$T/parser-calls" 2>/dev/null)"
grep -q '^profile libvirt-'"$uuid"' ' "$PROFILE" || fail "no profile libvirt-$uuid in $PROFILE"
ok "virt-aa-helper -c made libvirt-$uuid from TEMPLATE.qemu and apparmor_parser compiled it"

if has_socket_rule; then
	ok "libvirt's abstractions/libvirt-qemu reads libvirt-qemu.d/: the package's snippet alone is in the profile"
else
	# Debian 12's libvirt 9.0: docs/libvirt.md's line for local/.
	line=$(sed -n '/<!-- libvirt-test: apparmor-local -->/,/^```$/p' docs/libvirt.md |
		sed -n "s/.*'\(include .*\)'.*/\1/p")
	[ -n "$line" ] || fail "the snippet is not in the profile and docs/libvirt.md has no line marked apparmor-local"
	echo "# libvirt's abstractions/libvirt-qemu does not read libvirt-qemu.d/" \
		"(libvirt-daemon-system $(dpkg-query -W -f='${Version}' libvirt-daemon-system)): the docs' line"
	echo "#   $line >> /etc/apparmor.d/local/abstractions/libvirt-qemu"
	echo "$line" >>"$AA/local/abstractions/libvirt-qemu"
	make_profile || helper_failed "virt-aa-helper -c failed with the docs' line"
	has_socket_rule || fail "the snippet's rules are not in the domain's profile, even with the docs' line"
	ok "with the docs' line in local/abstractions/libvirt-qemu the snippet is in the profile"
fi

# What the snippet adds: the profile's rules less the same profile's
# with the snippet empty; equal to the rules of $WANT.
rules "$PROFILE" >"$T/with"
cp "$AA/$SNIPPET" "$T/snippet"
: >"$AA/$SNIPPET"
rules "$PROFILE" >"$T/without"
cp "$T/snippet" "$AA/$SNIPPET"
# The rules of $WANT alone: a profile of them less an empty one (every
# profile has a few of its own).
printf 'profile want {\n%s\n}\n' "$WANT" >"$T/want"
printf 'profile want {\n}\n' >"$T/empty"
comm -13 <(rules "$T/empty") <(rules "$T/want") >"$T/want.rules"
[ -s "$T/want.rules" ] || fail "the parser compiled no rules from: $WANT"
added=$(comm -13 "$T/without" "$T/with")
if [ "$added" = "$(cat "$T/want.rules")" ]; then
	ok "the snippet grants exactly: $(echo "$WANT" | xargs)"
	mapfile -t lines <<<"$added"
	printf '     %s\n' "${lines[@]}"
else
	echo "FAIL: the snippet's rules differ from $(echo "$WANT" | xargs) (- wanted, + granted):"
	diff <(cat "$T/want.rules") <(echo "$added") | sed -n 's/^</   -/p; s/^>/   +/p'
	exit 1
fi

# A snippet with a syntax error (a rule without its comma) fails the load.
echo '/run/cnuas/switch.sock.ctl rw' >>"$AA/$SNIPPET"
if make_profile; then
	fail "virt-aa-helper loaded a profile whose snippet has a syntax error"
fi
err=$(grep -m1 'AppArmor parser error' "$T/parser.log") ||
	helper_failed "virt-aa-helper failed, but not in the parser"
ok "a snippet with a syntax error fails virt-aa-helper's load: ${err#*: }"
