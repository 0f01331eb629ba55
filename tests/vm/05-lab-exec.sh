#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# The lab control channel itself: binary-safe stdin/stdout both ways, stderr
# apart from stdout, exit status and 128+signal, a killed client kills its
# command, several execs at once on one node.
. "$(dirname "$0")/lib.sh"
n=$((NODES + VIRTIO_NODES - 1))
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
head -c 3M /dev/urandom >"$tmp/in"
lx "$n" sh -c 'cat >/tmp/copy' <"$tmp/in" || fail "copy to node$n failed"
lx "$n" cat /tmp/copy >"$tmp/back" </dev/null || fail "copy back failed"
cmp -s "$tmp/in" "$tmp/back" || fail "file changed on the round trip"
[ "$(lx "$n" sha256sum /tmp/copy </dev/null | cut -c1-64)" = "$(sha256sum <"$tmp/in" | cut -c1-64)" ] ||
	fail "sha256 differs in the guest"
out=$(lx "$n" sh -c 'echo out; echo err >&2' 2>"$tmp/err" </dev/null)
[ "$out" = out ] && [ "$(cat "$tmp/err")" = err ] || fail "stdout/stderr mixed up: '$out' '$(cat "$tmp/err")'"
lx "$n" sh -c 'exit 42' </dev/null; rc=$?
[ $rc = 42 ] || fail "exit status $rc, want 42"
lx "$n" sh -c 'kill -KILL $$' </dev/null; rc=$?
[ $rc = 137 ] || fail "killed command gave $rc, want 137"
timeout 3 "$LAB" exec "$n" -- sh -c 'exec sleep 777' </dev/null
sleep 1
lsh "$n" '! pgrep -x -f "sleep 777" >/dev/null' </dev/null || fail "command survived its client"
for i in 1 2 3 4 5 6; do lx "$n" sh -c "sleep 1; echo $i" </dev/null >"$tmp/par$i" & done
wait
[ "$(cat "$tmp"/par* | sort | tr -d '\n')" = 123456 ] || fail "parallel execs lost output"
echo "exec: 3 MiB round trip, stderr, status 42/137, client kill, 6 parallel: ok"
