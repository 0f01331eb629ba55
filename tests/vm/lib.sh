# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# shellcheck shell=bash
# Shared helpers of the VM tests (sourced).  The harness runs
# `scripts/lab up --nodes 2 --virtio-nodes 1` first and sets LAB to
# scripts/lab; every test is bounded in time.
set -u
VM_TESTS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LAB=${LAB:-$VM_TESTS/../../scripts/lab}
LAB_DIR=${CNUAS_LAB_DIR:-/tmp/cnuas-lab}
export CNUAS_LAB_DIR=$LAB_DIR

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
note() { echo "# $*"; }

[ -f "$LAB_DIR/lab.env" ] || skip "no lab running in $LAB_DIR (scripts/lab up)"
# shellcheck disable=SC1091
. "$LAB_DIR/lab.env"

# lx [-t SECONDS] NODE CMD...: run CMD in a guest, bounded (default 120 s).
lx() {
	local t=120
	if [ "$1" = -t ]; then t=$2; shift 2; fi
	local n=$1
	shift
	timeout -k 5 "$t" "$LAB" exec "$n" -- "$@"
}
# lsh [-t SECONDS] NODE 'shell script'
lsh() {
	local t=120
	if [ "$1" = -t ]; then t=$2; shift 2; fi
	lx -t "$t" "$1" sh -c "$2"
}

ip_of() { echo "198.18.0.$(($1 + 1))"; }
virtio_node() { echo "$NODES"; }

need_cnuas_nodes() { [ "$NODES" -ge "$1" ] || skip "needs $1 cnuas nodes, lab has $NODES"; }
need_virtio_node() { [ "$VIRTIO_NODES" -ge 1 ] || skip "needs a virtio-net node (--virtio-nodes 1)"; }
need_eth() { [ "$LINK_LAYER" = eth ] || skip "needs an Ethernet lab, this one is $LINK_LAYER"; }

# wait_for SECONDS CMD...: retry CMD (on the host) every 0.5 s.
wait_for() {
	local limit=$1 t0
	shift
	t0=$(date +%s)
	until "$@"; do
		[ $(($(date +%s) - t0)) -lt "$limit" ] || return 1
		sleep 0.5
	done
}

# Ping from a node until one reply comes (ARP, FDB learning), bounded.
ping_ok() { lsh -t 30 "$1" "ping -c 1 -W 2 $2 >/dev/null"; }
wait_ping() { wait_for "${3:-30}" ping_ok "$1" "$2"; }

# The cnuas-vnic PCI address in a guest.
cnuas_bdf() {
	lsh -t 30 "$1" 'for d in /sys/bus/pci/devices/*; do
		[ "$(cat $d/vendor):$(cat $d/device)" = 0x1af4:0x10f0 ] && { basename $d; exit 0; }
	done; exit 1' 2>/dev/null
}

# Bring cnuas0 of node N back to its lab configuration (after rebind/reload).
cnuas_reconfigure() {
	local n=$1 mtu=${2:-1500}
	lsh -t 60 "$n" "i=0; while [ ! -e /sys/class/net/cnuas0 ] && [ \$i -lt 200 ]; do sleep 0.1; i=\$((i+1)); done
		[ -e /sys/class/net/cnuas0 ] || { echo 'no cnuas0'; exit 1; }
		ip addr replace $(ip_of "$n")/24 dev cnuas0 && ip link set cnuas0 mtu $mtu up"
}

# Count of console lines that show a kernel problem.
console_problems() {
	grep -E 'Oops|BUG:|WARNING:|Kernel panic|general protection fault' "$LAB_DIR"/node*.console.log 2>/dev/null | wc -l
}

# tcp_transfer FROM TO MIB PORT: send MIB MiB of random data over TCP with
# nc, compare sha256 at both ends; prints "MIB MiB in MS ms (MBPS Mbit/s)".
tcp_transfer() {
	local from=$1 to=$2 mib=$3 port=$4 txsum rxsum ms rxout rpid
	txsum=$(lsh -t 120 "$from" "head -c ${mib}M /dev/urandom >/tmp/tx.bin && sha256sum </tmp/tx.bin") ||
		fail "node$from: cannot make test data"
	rxout=$(mktemp)
	lsh -t 400 "$to" "timeout 360 nc -l $port | sha256sum" </dev/null >"$rxout" 2>&1 &
	rpid=$!
	wait_for 30 lsh -t 10 "$to" "ss -Hltn 'sport = :$port' | grep -q LISTEN" ||
		{ kill $rpid 2>/dev/null; fail "node$to: nc not listening on $port"; }
	ms=$(lsh -t 400 "$from" "s=\$(date +%s%N); timeout 360 nc -N $(ip_of "$to") $port </tmp/tx.bin || exit 1
		e=\$(date +%s%N); rm -f /tmp/tx.bin; echo \$(((e - s) / 1000000))") ||
		{ kill $rpid 2>/dev/null; fail "node$from: nc send failed"; }
	wait $rpid || { cat "$rxout"; rm -f "$rxout"; fail "node$to: receiver failed"; }
	rxsum=$(cat "$rxout")
	rm -f "$rxout"
	[ "${rxsum%% *}" = "${txsum%% *}" ] || fail "sha256 mismatch: sent ${txsum%% *} received ${rxsum%% *}"
	[ "$ms" -gt 0 ] || ms=1
	echo "$mib MiB in $ms ms ($((mib * 8 * 1048576 / 1000 / ms)) Mbit/s)"
}
