#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# The libFuzzer targets of tests/fuzz/: every input of the kept corpus
# runs once, then each target fuzzes briefly (FUZZ_SECONDS, default 3:
# the kept corpus is the regression guard here, `make fuzz` is where
# the targets search for new inputs).
# Any crash, sanitizer report or broken property fails, as does a
# scenario of ib_sm_cases.c that gets the wrong answer.
# timeout: 900
set -euo pipefail
cd "$(dirname "$0")/../.."

probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return d && n; }' >"$probe/p.c"
if ! clang -fsanitize=fuzzer,address,undefined -o "$probe/p" "$probe/p.c" >"$probe/log" 2>&1; then
	echo "SKIP: no-libfuzzer: clang with libFuzzer is missing (apt-get install clang libclang-rt-14-dev): $(head -n1 "$probe/log")"
	exit 77
fi

# The provider's target needs rdma-core's headers: fetched once and
# cached. Without them the target is left out, a skip tests/run lists.
if ! scripts/fetch-rdma-core >"$probe/fetch" 2>&1; then
	. tests/lib-skip.sh
	sub_skip "${CNUAS_TEST:-unit/19-fuzz-corpus}>provider_cq" no-rdma-core \
		"rdma-core's source cannot be had: $(tail -n 1 "$probe/fetch")"
fi

make -s -j"$(nproc)" -C tests/fuzz all
# the responder's scenarios on the same fixture: answers, not just no crash
make -s -j"$(nproc)" -C tests/fuzz cases
targets=$(make -s -C tests/fuzz targets)
echo "targets: $targets"
out=$PWD/build/fuzz
tests/fuzz/run-fuzz replay "$out" 0 $targets
tests/fuzz/run-fuzz brief "$out" "${FUZZ_SECONDS:-3}" $targets
