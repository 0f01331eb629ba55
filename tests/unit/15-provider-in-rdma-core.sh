#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# The provider in rdma-core's own tree: scripts/build-provider --in-tree
# drops userspace/provider in as providers/cnuas and the uapi header in
# kernel-headers/, and rdma-core's cmake builds it with -Werror. The
# library exports nothing (rdma-core's provider.map), needs only
# IBVERBS_PRIVATE_34 of that tree's libibverbs, and registers itself
# when loaded into it.
# timeout: 1200
set -euo pipefail
cd "$(dirname "$0")/../.."

out=build/provider-in-tree
log=$(mktemp)
trap 'rm -f "$log"' EXIT
rc=0
scripts/build-provider --in-tree "$out" >"$log" 2>&1 || rc=$?
if [ "$rc" -eq 3 ]; then
	echo "SKIP: no-rdma-core: provider cannot be built in rdma-core's tree here: $(grep -E 'build-provider|fetch-rdma-core' "$log" | tail -n1)"
	exit 77
elif [ "$rc" -ne 0 ]; then
	cat "$log"
	echo "FAIL: scripts/build-provider --in-tree exited $rc"
	exit 1
fi
grep 'provider ABI' "$log"

build=$out/src/build
lib=$build/lib/libcnuas-rdmav34.so
verbs=$build/lib/libibverbs.so.1
fail=0
bad() {
	echo "FAIL: $*"
	fail=1
}

[ -f "$lib" ] || { echo "FAIL: no $lib"; exit 1; }
grep -q 'Enabled -Werror' "$out/cmake.log" || bad "rdma-core's cmake did not enable -Werror"
# rdma-core's own driver file for the uninstalled tree.
[ "$(cat "$build/etc/libibverbs.d/cnuas.driver")" = "driver $PWD/$build/lib/libcnuas" ] ||
	bad "cnuas.driver of the tree: $(cat "$build/etc/libibverbs.d/cnuas.driver")"
# The command structs came from the generated header of our uapi one.
grep -q '_STRUCT_cnuas_send_wqe' "$build/include/kernel-abi/cnuas-abi.h" ||
	bad "no generated kernel-abi/cnuas-abi.h"

exports=$(nm -D --defined-only "$lib" | awk '{ print $3 }')
[ -z "$exports" ] || bad "exports symbols: $(echo $exports)"
vers=$(objdump -T "$lib" | grep -oE 'IBVERBS_[A-Z_0-9.]+' | sort -u)
[ "$vers" = IBVERBS_PRIVATE_34 ] || bad "symbol versions are not just IBVERBS_PRIVATE_34: $(echo $vers)"
objdump -p "$lib" | grep -q 'NEEDED *libibverbs.so.1' || bad "not linked to libibverbs.so.1"
sys=$(objdump -T "$verbs" | awk '/IBVERBS_PRIVATE_34/ { print $NF }' | sort -u)
need=$(objdump -T "$lib" | awk '/\*UND\*.*IBVERBS_PRIVATE_34/ { print $NF }' | sort -u)
missing=$(comm -23 <(echo "$need") <(echo "$sys"))
[ -z "$missing" ] || bad "the tree's libibverbs lacks: $missing"

# Loaded into the tree's libibverbs, its constructor registers it.
mkdir -p "$out/test"
echo 'IBVERBS_PRIVATE_34 { global: verbs_register_driver_34; local: *; };' >"$out/test/register-test.map"
gcc -std=gnu11 -O1 -g -Wall -Wextra -Werror -DPABI=34 -rdynamic \
	-Wl,--version-script="$out/test/register-test.map" \
	-o "$out/test/register-test" userspace/provider/test/register-test.c -ldl
abi=$(sed -n 's/^#define CNUAS_UVERBS_ABI_VERSION[[:space:]]*\([0-9]*\).*/\1/p' src/include/uapi/cnuas-abi.h)
LD_LIBRARY_PATH=$PWD/$build/lib "$out/test/register-test" "$PWD/$verbs" "$PWD/$lib" "$abi" ||
	bad "the provider does not register with the tree's libibverbs"

[ "$fail" -eq 0 ] || exit 1
echo "provider in rdma-core: built by its cmake with -Werror, symbols, registration passed"
