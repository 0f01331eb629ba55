#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
#
# A guest kernel without the InfiniBand stack: Debian 12's real dkms 3.0
# builds the cnuas DKMS tree against a copy of the installed kernel
# headers whose configuration lacks CONFIG_INFINIBAND*, in its own DKMS
# and source trees (--dkmstree, --sourcetree, --kernelsourcedir), so the
# host's /var/lib/dkms and /usr/src are not touched. DKMS must skip that
# kernel (exit 77, as apt's postinst and the kernel's DKMS hook take it:
# the package stays installed, other kernels build) and say which options
# are missing and what to do (dkms.conf's line before DKMS's own); dkms
# status shows the package added, not built. A build without DKMS
# against those headers stops at src/Kbuild's check with the same names;
# the unmodified headers get past it (make -n).
# timeout: 120
# Exit: 0 pass, 77 skip (no dkms or no kernel headers), anything else fail.

set -u
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/lib-skip.sh
. "$REPO/tests/lib-skip.sh"
T=$(mktemp -d /tmp/cnuas-dkms-config.XXXXXX)
MOK=/var/lib/dkms/mok
made_mok=0
cleanup() {
    # dkms makes a signing key at its first build; keep the host as it was.
    [ $made_mok = 0 ] || rm -f "$MOK.key" "$MOK.pub"
    rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

command -v dkms >/dev/null || skip_because no-dkms "dkms not installed"
KVER=
for d in /usr/src/linux-headers-*; do
    if [ ! -f "$d/include/config/auto.conf" ] || [ ! -L "$d/scripts" ]; then
        continue
    fi
    KVER=${d#/usr/src/linux-headers-}
done
[ -n "$KVER" ] || skip_because no-kernel-headers "no linux-headers-* with a configuration"
[ -e "$MOK.key" ] || made_mok=1

# The headers without the InfiniBand stack (links made absolute).
H=$T/headers
cp -a "/usr/src/linux-headers-$KVER" "$H"
for l in scripts tools; do
    [ -L "$H/$l" ] && ln -sfn "$(readlink -f "/usr/src/linux-headers-$KVER/$l")" "$H/$l"
done
sed -i '/^CONFIG_INFINIBAND/d' "$H/.config" "$H/include/config/auto.conf"
sed -i '/CONFIG_INFINIBAND/d' "$H/include/generated/autoconf.h"

# The package's tree, as cnuas-dkms installs it in /usr/src.
V=$(cat "$REPO/VERSION")
S=$T/usrsrc/cnuas-$V
make -s -C "$REPO/src" dkms-tree DEST="$S" || fail "make dkms-tree"
sed "s/#MODULE_VERSION#/$V/" "$REPO/dkms.conf" >"$S/dkms.conf"

# A good kernel passes the check: the dry run reaches the module folders.
(cd "$S" && make -n KDIR="/usr/src/linux-headers-$KVER") >"$T/dry.log" 2>&1
grep -q 'lacks' "$T/dry.log" && { cat "$T/dry.log"; fail "the check refused the installed headers"; }
grep -q 'cnuas_ib/main\.o' "$T/dry.log" || { tail -n 20 "$T/dry.log"; fail "the dry run did not reach cnuas_ib"; }
echo "ok   the installed headers ($KVER) pass the kernel option check"

# Without DKMS: src/Kbuild's check names the options too.
(cd "$S" && make KDIR="$H") >"$T/kbuild.log" 2>&1 && fail "the modules built against headers without CONFIG_INFINIBAND"
grep -q "cnuas: kernel $KVER lacks CONFIG_INFINIBAND CONFIG_INFINIBAND_VIRT_DMA" "$T/kbuild.log" ||
    { tail -n 20 "$T/kbuild.log"; fail "src/Kbuild's check does not name the missing options"; }
echo "ok   a build without DKMS stops at src/Kbuild's check, naming the options"

D=(--dkmstree "$T/dkms" --sourcetree "$T/usrsrc")
mkdir -p "$T/dkms"
dkms add -m cnuas -v "$V" "${D[@]}" >"$T/add.log" 2>&1 || { cat "$T/add.log"; fail "dkms add"; }
rc=0
dkms build -m cnuas -v "$V" -k "$KVER" "${D[@]}" --kernelsourcedir "$H" \
    >"$T/build.out" 2>"$T/build.err" || rc=$?
echo "dkms build says (stderr):"
sed 's/^/    /' "$T/build.err"
[ $rc = 77 ] || { cat "$T/build.out"; fail "dkms build exited $rc, not 77 (skipped: BUILD_EXCLUSIVE)"; }
want="cnuas: kernel $KVER lacks CONFIG_INFINIBAND CONFIG_INFINIBAND_VIRT_DMA (the InfiniBand stack the modules need: y or m), so DKMS does not build cnuas for it. Install a kernel built with them and its headers"
grep -qF "$want" "$T/build.err" || fail "dkms build does not name the missing options"
grep -q 'then run dkms autoinstall' "$T/build.err" || fail "dkms build does not say what to do"
grep -q 'BUILD_EXCLUSIVE' "$T/build.err" || fail "DKMS did not skip the kernel through BUILD_EXCLUSIVE"
[ ! -e "$T/dkms/cnuas/$V/build/make.log" ] || fail "DKMS ran make for a kernel it should skip"
echo "ok   DKMS skips the kernel (77) after a line naming CONFIG_INFINIBAND CONFIG_INFINIBAND_VIRT_DMA and the fix"

status=$(dkms status -m cnuas "${D[@]}" 2>&1)
echo "dkms status: $status"
[ "$status" = "cnuas/$V: added" ] || fail "dkms status is not 'cnuas/$V: added'"
echo "PASS: a kernel without the InfiniBand stack is skipped, and DKMS says which options it lacks"
