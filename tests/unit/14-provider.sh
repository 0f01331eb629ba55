#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# The libibverbs provider, standalone: it builds against rdma-core's
# private headers (scripts/build-provider, userspace/provider/Makefile)
# as libcnuas.so and libcnuas-rdmav34.so, exports only its ops entry,
# needs only the system libibverbs' IBVERBS_PRIVATE_34, loads into it,
# and its ring and WQE logic pass the host unit test under ASan/UBSan.
set -euo pipefail
cd "$(dirname "$0")/../.."

log=$(mktemp)
trap 'rm -f "$log"' EXIT
rc=0
scripts/build-provider >"$log" 2>&1 || rc=$?
if [ "$rc" -eq 3 ]; then
	echo "SKIP: no-rdma-core: provider cannot be built here: $(grep -E 'build-provider|fetch-rdma-core' "$log" | tail -n1)"
	exit 77
elif [ "$rc" -ne 0 ]; then
	cat "$log"
	echo "FAIL: scripts/build-provider exited $rc"
	exit 1
fi
grep 'provider ABI' "$log"

out=build/provider
lib=$out/libcnuas-rdmav34.so
fail=0
bad() {
	echo "FAIL: $*"
	fail=1
}

[ -f "$out/libcnuas.so" ] || bad "no $out/libcnuas.so"
# The name libibverbs loads is a link to the standalone library.
[ "$(readlink "$lib")" = libcnuas.so ] || bad "$lib is not a link to libcnuas.so"
[ "$(cat "$out/cnuas.driver")" = "driver cnuas" ] || bad "cnuas.driver is not 'driver cnuas'"

# Exports: exactly the provider's ops entry.
exports=$(nm -D --defined-only "$lib" | awk '{ print $3 }' | sort)
[ "$exports" = verbs_provider_cnuas ] || bad "exports are not just verbs_provider_cnuas: $(echo $exports)"

# Imports: libibverbs' private ABI 34, nothing newer.
vers=$(objdump -T "$lib" | grep -oE 'IBVERBS_[A-Z_0-9.]+' | sort -u)
grep -qx IBVERBS_PRIVATE_34 <<<"$vers" || bad "does not depend on IBVERBS_PRIVATE_34"
other=$(grep -E 'IBVERBS_PRIVATE_' <<<"$vers" | grep -vx IBVERBS_PRIVATE_34 || true)
[ -z "$other" ] || bad "depends on other private ABIs: $other"
objdump -p "$lib" | grep -q 'NEEDED *libibverbs.so.1' || bad "not linked to libibverbs.so.1"
# Every private symbol it needs is one the system libibverbs exports.
sys=$(objdump -T /usr/lib/x86_64-linux-gnu/libibverbs.so.1 | awk '/IBVERBS_PRIVATE_34/ { print $NF }' | sort -u)
need=$(objdump -T "$lib" | awk '/\*UND\*.*IBVERBS_PRIVATE_34/ { print $NF }' | sort -u)
missing=$(comm -23 <(echo "$need") <(echo "$sys"))
[ -z "$missing" ] || bad "system libibverbs lacks: $missing"

cflags=(-std=gnu11 -O1 -g -Wall -Wextra -Werror -Iuserspace/provider -I"$out/include")
san=(-fsanitize=address,undefined -fno-sanitize-recover=all)
mkdir -p "$out/test"
gcc "${cflags[@]}" -o "$out/test/load-test" userspace/provider/test/load-test.c -ldl
abi=$(sed -n 's/^#define CNUAS_UVERBS_ABI_VERSION[[:space:]]*\([0-9]*\).*/\1/p' src/include/uapi/cnuas-abi.h)
"$out/test/load-test" "$PWD/$lib" "$abi" || bad "the provider does not load into the system libibverbs"

gcc "${cflags[@]}" "${san[@]}" -pthread -o "$out/test/ring-test" \
	userspace/provider/test/ring-test.c userspace/provider/wqe.c
"$out/test/ring-test" || bad "ring/WQE unit test"

[ "$fail" -eq 0 ] || exit 1
echo "provider: build, symbols, load and ring test passed"
