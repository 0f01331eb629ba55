#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# A process scribbles over its own SQ, RQ, SRQ and CQ rings (indices, opcodes,
# SGE counts, inline lengths, keys) while it rings the SQ doorbell itself and
# loopback partners keep the victim QPs' receive queues busy (cnuas-scribble).
# The guest runs with panic_on_warn=1 meanwhile: a kernel warning is a crash,
# and so a failure here. Afterwards every object is destroyed cleanly, a fresh
# pair moves data correctly, and the console shows no Oops, BUG or WARNING.
. "$(dirname "$0")/lib.sh"
need_cnuas_nodes 1
N=${SCRIBBLE_NODE:-0}
DEV=${VERBS_DEV:-cnuas_0}
SECS=${SCRIBBLE_SECONDS:-20}
rdma_dev_up "$N" "$DEV"
console=$LAB_DIR/node$N.console.log
before=$(wc -l <"$console")
restore() { lsh -t 30 "$N" 'sysctl -qw kernel.panic_on_warn=0' >/dev/null 2>&1 || true; }
trap restore EXIT
lsh -t 30 "$N" 'sysctl -qw kernel.panic_on_warn=1' || fail "node$N: cannot set panic_on_warn"
for seed in 1 2; do
	out=$(lsh -t $((SECS + 240)) "$N" "cnuas-scribble -d $DEV -s $SECS -S $seed" 2>&1) && rc=0 || rc=$?
	echo "seed $seed: $out"
	[ $rc = 0 ] || fail "cnuas-scribble seed $seed: rc $rc"
	# It really scribbled and the kernel really read the rings.
	echo "$out" | grep -Eq 'victim_rings=([4-9]|[1-9][0-9]) scribbles=[1-9][0-9]* kicks=[1-9]' ||
		fail "cnuas-scribble seed $seed did not run its attack"
done
restore
trap - EXIT
bad=$(tail -n +"$((before + 1))" "$console" | grep -E 'Oops|BUG:|WARNING:|Kernel panic' || true)
[ -z "$bad" ] || { echo "$bad" | head -20; fail "node$N: kernel problems while its rings were scribbled"; }
lsh -t 30 "$N" true || fail "node$N does not answer"
echo "node$N survived ${SECS}s x 2 of ring scribbling with panic_on_warn=1; console clean"
