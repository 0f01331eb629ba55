#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# The shared library has its SONAME, exports exactly the public functions,
# each with version CNUASPEERMEM_1.0; the static library has them too.
set -e
so=$1 a=$2 soname=$3
want="cnuas_peermem_dereg cnuas_peermem_dmabuf_fd cnuas_peermem_ibv_mr cnuas_peermem_reg cnuas_peermem_reg_arena cnuas_peermem_strerror cnuas_peermem_supported"
readelf -d "$so" | grep -q "Library soname: \[$soname\]" || { echo "FAIL: SONAME"; exit 1; }
got=$(readelf --dyn-syms -W "$so" | awk '$7 != "UND" && $5 == "GLOBAL" && $4 == "FUNC" {print $8}' | sort | tr '\n' ' ')
exp=$(for s in $want; do echo "$s@@CNUASPEERMEM_1.0"; done | sort | tr '\n' ' ')
[ "$got" = "$exp" ] || { echo "FAIL: exported: $got"; echo "      expected: $exp"; exit 1; }
for s in $want; do
	nm "$a" | grep -q " T $s\$" || { echo "FAIL: $s missing in $a"; exit 1; }
done
echo "PASS: $soname: SONAME, 7 versioned symbols, static library"
