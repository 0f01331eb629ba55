# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# shellcheck shell=bash
# Shared helpers of the VM tests (sourced).  The harness runs
# `scripts/lab up --nodes 2 --rxe-nodes 1 --gpu` first and sets LAB to
# scripts/lab; every test is bounded in time.
set -u
VM_TESTS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LAB=${LAB:-$VM_TESTS/../../scripts/lab}
LAB_DIR=$("$LAB" dir)
export CNUAS_LAB_DIR=$LAB_DIR

# shellcheck source=../lib-skip.sh
. "$VM_TESTS/../lib-skip.sh"
# A skip with no declared reason (tests/skip-reasons): by hand on a lab of
# another shape it says why; under tests/run it fails.
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
note() { echo "# $*"; }

if [ ! -f "$LAB_DIR/lab.env" ]; then
	# tests/run booted this lab: its lab.env gone is a broken lab.
	[ -z "${CNUAS_LAB_GROUP:-}" ] || fail "no lab.env in $LAB_DIR: the $CNUAS_LAB_GROUP group's lab went away"
	skip "no lab running in $LAB_DIR (scripts/lab up)"
fi
# shellcheck disable=SC1091
. "$LAB_DIR/lab.env"
# Labs started before these settings existed.
RXE_NODES=${RXE_NODES:-0} MTU=${MTU:-1500}

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
ip6_of() { echo "fd00:198:18::$(($1 + 1))"; }
# The first node with stock virtio-net: a plain virtio node, else an rxe one.
virtio_node() { echo "$NODES"; }

need_cnuas_nodes() { [ "$NODES" -ge "$1" ] || skip "needs $1 cnuas nodes, lab has $NODES"; }
need_virtio_node() {
	[ $((VIRTIO_NODES + RXE_NODES)) -ge 1 ] || skip "needs a virtio-net node (--virtio-nodes 1 or --rxe-nodes 1)"
}
need_eth() { [ "$LINK_LAYER" = eth ] || skip "needs an Ethernet lab, this one is $LINK_LAYER"; }
# A verbs test that runs over RoCE and, on an IB lab, over IB by LID (test
# tests/run runs its IB cell there with CNUAS_VERBS_OVER_IB=1, as
# rdma_pair asks).
need_eth_or_verbs_over_ib() {
	[ "$LINK_LAYER" = eth ] || [ "${CNUAS_VERBS_OVER_IB:-0}" = 1 ] ||
		skip "needs an Ethernet lab, or CNUAS_VERBS_OVER_IB=1 on this $LINK_LAYER one"
}
# site_port_kinds N: the kinds of site N's switch ports, sorted (--sites labs).
site_port_kinds() {
	"$LAB" site "$1" -- --json show | /usr/bin/python3 -c '
import json, sys
print(" ".join(sorted(p["kind"] for p in json.load(sys.stdin)["ports"])))'
}
# sites_sub WHERE TEST ENV=VALUE...: another VM test on a --sites lab's
# nodes, with ENV; it must pass across WHERE. A skip is listed as a part
# of this test that did not run (sub_skip), and tests/run holds it to a
# declared reason like any other.
sites_sub() {
	local where=$1 t=$2 log=$PR_DIR.$2.log rc line
	shift 2
	env CNUAS_LOSSY_PATH=1 "$@" timeout -k 10 600 "$VM_TESTS/$t.sh" >"$log" 2>&1
	rc=$?
	case $rc in
	0) echo "PASS $t ($*): $(tail -n 1 "$log")" ;;
	77)
		line=$(grep '^SKIP:' "$log" | tail -n 1)
		sub_skip "${CNUAS_TEST:-$(basename "$0" .sh)}>$t across the $where" \
			"$(skip_line_tag "$line")" "$(skip_line_reason "$line")"
		;;
	*) tail -n 25 "$log"; fail "$t ($*) failed across the $where (rc $rc, log $log)" ;;
	esac
}
# need_ib_sm TOOL...: an IB lab of two cnuas nodes, OpenSM and TOOL on
# node0 (a test with `# link-layers: ib` runs in tests/run's IB lab; by
# hand on an Ethernet lab it skips). Our image has them all: one missing
# there is a failure.
need_ib_sm() {
	[ "$LINK_LAYER" = ib ] || skip "needs an IB lab (tests/run runs it in its IB lab)"
	need_cnuas_nodes 2
	local out
	out=$(lsh -t 30 0 "for t in opensm $*; do command -v \$t >/dev/null || echo \$t; done") ||
		fail "node0: cannot look for opensm $*"
	[ -z "$out" ] || fail "node0's image lacks: $(echo $out)"
}
# rdma_dev_up NODE DEV [MODULE...]: cnuas_ib (for a cnuas device),
# ib_uverbs and MODULE loaded on NODE and DEV registered within 10 s;
# else a failure that shows modprobe's error and the kernel's last words.
rdma_dev_up() {
	local n=$1 dev=$2 out
	shift 2
	out=$(lsh -t 60 "$n" "case $dev in cnuas_*) modprobe cnuas_ib || exit 1 ;; esac
		modprobe -a ib_uverbs $* || exit 1
		i=0
		while [ ! -e /sys/class/infiniband/$dev ] && [ \$i -lt 50 ]; do sleep 0.2; i=\$((i+1)); done
		[ -e /sys/class/infiniband/$dev ] && exit 0
		echo 'no /sys/class/infiniband/$dev after 10 s; there are:' \$(ls /sys/class/infiniband)
		dmesg | tail -n 15; exit 1" 2>&1) || { echo "$out"; fail "node$n: $dev did not register"; }
}
# The IB switch's view (`cnuas-vsctl --json show`), and one field of its
# "ib" object: sw_json; sw_field JSON FIELD.
sw_json() { "$LAB" switch -- --json show; }
sw_field() { /usr/bin/python3 -c 'import json, sys; print(json.loads(sys.argv[1])["ib"][sys.argv[2]])' "$1" "$2"; }
# sm_restart LOG [OPENSM-ARGS...]: node0's OpenSM stopped and started
# again, logging to LOG.
sm_restart() {
	local log=$1
	shift
	lsh -t 60 0 "pkill -x opensm; i=0; while pgrep -x opensm >/dev/null && [ \$i -lt 50 ]; do sleep 0.2; i=\$((i+1)); done
		opensm -B $* -f $log >/dev/null 2>&1" || fail "opensm did not restart"
}

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

# ib_port_back NODE LID WHEN: after a driver reload, rebind or the like,
# wait (3 min at most) until the SM has NODE's IB port ACTIVE with LID
# again and its ib0 exists; else fail, saying what was there WHEN.
ib_port_is() {
	lsh -t 20 "$1" "p=/sys/class/infiniband/cnuas_0/ports/1
		grep -q ACTIVE \$p/state && [ \"\$(cat \$p/lid)\" = $2 ] && [ -e /sys/class/net/ib0 ]"
}
ib_port_back() {
	wait_for 180 ib_port_is "$1" "$2" ||
		fail "node$1 $3: port $(lsh "$1" 'cat /sys/class/infiniband/cnuas_0/ports/1/state /sys/class/infiniband/cnuas_0/ports/1/lid' | tr '\n' ' ')(want ACTIVE, LID $2 and ib0)"
}

# Ping from a node until one reply comes (ARP, FDB learning), bounded.
# side_lab NAME UP-ARGS...: a lab of other nodes than the group's, for one
# test: pause the group's guests (QMP stop), boot `scripts/lab up UP-ARGS`
# in $LAB_DIR-NAME from the same image and QEMU, and from then on point
# the helpers at it (LAB_DIR, CNUAS_LAB_DIR, its lab.env). On any exit it
# goes down and the group's guests resume. Sets SIDE_BOOT (seconds).
side_lab() {
	local name=$1 n t0
	shift
	SIDE_GROUP=$LAB_DIR SIDE_DIR=$LAB_DIR-$name SIDE_PAUSED=()
	mkdir -p "$PR_DIR"
	trap side_lab_down EXIT
	for n in $(seq 0 $((NODES + VIRTIO_NODES + RXE_NODES - 1))); do
		"$LAB" qmp "$n" '{"execute":"stop"}' >/dev/null || fail "cannot pause node$n of the group's lab"
		SIDE_PAUSED+=("$n")
	done
	t0=$SECONDS
	CNUAS_LAB_DIR=$SIDE_DIR CNUAS_LAB_IMAGE=$IMAGE_0 CNUAS_QEMU=$QEMU \
		timeout -k 10 900 "$LAB" up "$@" >"$PR_DIR.lab-up.log" 2>&1 ||
		{ tail -n 20 "$PR_DIR.lab-up.log"; fail "scripts/lab up $* failed"; }
	SIDE_BOOT=$((SECONDS - t0))
	export CNUAS_LAB_DIR=$SIDE_DIR
	LAB_DIR=$SIDE_DIR
	# shellcheck disable=SC1091
	. "$SIDE_DIR/lab.env"
}
side_lab_down() {
	local n rc=$? bad
	# Every console and the switch read before the lab goes: a problem
	# there fails the test, whatever it said.
	bad=$(lab_log_problems "$SIDE_DIR")
	CNUAS_LAB_DIR=$SIDE_DIR "$LAB" down >/dev/null 2>&1
	for n in "${SIDE_PAUSED[@]}"; do
		CNUAS_LAB_DIR=$SIDE_GROUP "$LAB" qmp "$n" '{"execute":"cont"}' >/dev/null ||
			echo "cannot resume node$n of $SIDE_GROUP"
	done
	if [ -n "$bad" ]; then
		echo "$bad" | head -n 20
		echo "FAIL: kernel or switch problems in the logs of the lab in $SIDE_DIR"
		exit 1
	fi
	[ $rc = 0 ] || return
	echo "logs clean: the consoles and switch of the lab in $SIDE_DIR"
}

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
	local n=$1 mtu=${2:-$MTU}
	lsh -t 60 "$n" "i=0; while [ ! -e /sys/class/net/cnuas0 ] && [ \$i -lt 200 ]; do sleep 0.1; i=\$((i+1)); done
		[ -e /sys/class/net/cnuas0 ] || { echo 'no cnuas0'; exit 1; }
		ip addr replace $(ip_of "$n")/24 dev cnuas0 &&
		ip -6 addr replace $(ip6_of "$n")/64 dev cnuas0 nodad &&
		ip link set cnuas0 mtu $mtu up"
}
# ipoib_reconfigure N: node N's ib0 (new after its driver came back) up
# with the lab's addresses.
ipoib_reconfigure() {
	lsh -t 60 "$1" "ip link set ib0 up && ip addr replace $(ip_of "$1")/24 dev ib0 &&
		ip -6 addr replace $(ip6_of "$1")/64 dev ib0 nodad"
}

# A guest kernel's problem on its console: an Oops, BUG (soft lockups
# too), WARNING (lockdep's reports too), panic, GPF, lockdep, a hard
# lockup, a hung task or an RCU stall. The kernel's own GPF reads
# "general protection fault, ..." or "...fault: 0000 [#1]"; a user
# program's is "traps: NAME[PID] general protection fault ip:...", like
# its "segfault at" lines its test's to judge (perftest 4.5's -R retry,
# a named upstream bug that 84 works around, dies that way now and then).
# The switch's log: the same, or a sanitizer's report (its own
# "warning:" lines are about its peers).
CONSOLE_BAD_RE='Oops|BUG:|WARNING:|Kernel panic|general protection fault[,:]|possible (circular|recursive) locking|inconsistent lock state|lockdep|soft lockup|hard LOCKUP|blocked for more than [0-9]+ seconds|hung_task|rcu.*detected stalls|self-detected stall'
SWITCH_BAD_RE="$CONSOLE_BAD_RE|AddressSanitizer|LeakSanitizer|runtime error:"
# Upstream kernel warnings that are not ours, each named and matched by
# the line before its WARNING (its own text) and the WARNING's place, one
# a line: NAME<TAB>ERE of the line before<TAB>ERE of the WARNING line
# (both without the timestamp). Such a WARNING is no problem of the
# console; logs_clean says it saw it ("KNOWN upstream kernel warning
# NAME", which tests/soak counts).
# - iscsi-unbind-pm-flush: "PM: runtime: Fix a race condition related to
#   device removal" (Debian 12's kernel since 6.1.170) makes
#   pm_runtime_remove() flush the device's runtime-PM work on pm_wq,
#   which is not WQ_MEM_RECLAIM; scsi_transport_iscsi removes a session's
#   SCSI target from its per-session workqueue, which is, so the
#   workqueue code warns once a boot (check_flush_dependency). The iSER
#   logout of test 93 in the IB lab hit it in two of four soak runs on
#   6.1.192-3; no fixed version is known (pm_wq has no WQ_MEM_RECLAIM in
#   the later sources read).
CONSOLE_KNOWN='iscsi-unbind-pm-flush	^workqueue: WQ_MEM_RECLAIM iscsi_ctrl_[0-9]+:[0-9]+:__iscsi_unbind_session \[scsi_transport_iscsi\] is flushing !WQ_MEM_RECLAIM pm:pm_runtime_work$	^WARNING: .* at kernel/workqueue\.c:[0-9]+ check_flush_dependency'
export CONSOLE_BAD_RE CONSOLE_KNOWN
# console_bad FILE...: FILE:N:LINE for each console line of a kernel
# problem; with KNOWN=1 instead "KNOWN NAME FILE:N" for each known one.
console_bad() {
	[ $# -gt 0 ] || return 0
	KNOWN=${KNOWN:-0} awk '
		BEGIN {
			bad = ENVIRON["CONSOLE_BAD_RE"]
			n = split(ENVIRON["CONSOLE_KNOWN"], k, "\n")
			for (i = 1; i <= n; i++) {
				split(k[i], f, "\t")
				name[i] = f[1]; before[i] = f[2]; warn[i] = f[3]
			}
		}
		FNR == 1 { prev = "" }
		{
			sub(/\r$/, "")
			line = $0
			sub(/^\[ *[0-9.]+\] /, "", line)
			if ($0 ~ bad) {
				hit = ""
				for (i = 1; i <= n; i++)
					if (prev ~ before[i] && line ~ warn[i])
						hit = name[i]
				if (hit == "" && ENVIRON["KNOWN"] != 1)
					print FILENAME ":" FNR ":" $0
				else if (hit != "" && ENVIRON["KNOWN"] == 1)
					print "KNOWN " hit " " FILENAME ":" FNR
			}
			prev = line
		}' "$@"
}
# lab_log_problems DIR: those lines of the consoles and switch logs
# (switch.log, a --sites lab's siteN.log) of the lab in DIR, by file.
lab_log_problems() {
	console_bad "$1"/node*.console.log 2>/dev/null
	grep -HnE "$SWITCH_BAD_RE" "$1"/switch.log "$1"/site[0-9]*.log 2>/dev/null
	return 0
}
# logs_clean DIR WHAT: fail when lab_log_problems finds anything; else
# say how many logs were read, and each known upstream warning seen.
logs_clean() {
	local bad n
	n=$(ls "$1"/node*.console.log 2>/dev/null | wc -l)
	[ "$n" -gt 0 ] || fail "no console logs under $1 ($2)"
	bad=$(lab_log_problems "$1")
	[ -z "$bad" ] || { echo "$bad" | head -n 20; fail "kernel or switch problems in the logs of $2"; }
	KNOWN=1 console_bad "$1"/node*.console.log | sed 's/^KNOWN /KNOWN upstream kernel warning /'
	echo "logs clean: $n consoles and the switch of $2"
}
# Count of console lines that show a kernel problem.
console_problems() {
	console_bad "$LAB_DIR"/node*.console.log 2>/dev/null | wc -l
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

# ---- RDMA nodes: cnuas_0 on cnuas0 (cnuas nodes), rxe0 on eth0 (rxe nodes) --

node_kind() {
	if [ "$1" -lt "$NODES" ]; then echo cnuas
	elif [ "$1" -lt $((NODES + VIRTIO_NODES)) ]; then echo virtio
	else echo rxe; fi
}
first_rxe_node() { echo $((NODES + VIRTIO_NODES)); }
rdma_dev() { case $(node_kind "$1") in cnuas) echo cnuas_0 ;; rxe) echo rxe0 ;; *) return 1 ;; esac; }
# On an IB lab a cnuas node's IP interface is IPoIB's ib0 (scripts/lab.d/ib.sh).
rdma_netdev() {
	case $(node_kind "$1") in
	cnuas) [ "$LINK_LAYER" = ib ] && echo ib0 || echo cnuas0 ;;
	*) echo eth0 ;;
	esac
}

# rdma_pair VAR DEFAULT: the two nodes a test runs on, "A B", from the
# environment variable VAR (e.g. CNUAS_PAIR="3 4") or DEFAULT.  Sets A and B.
rdma_pair() {
	local p=${!1:-$2}
	read -r A B <<<"$p"
	case "$A$B" in '' | *[!0-9]*) fail "$1='$p': want two node numbers" ;; esac
	[ "$A" != "$B" ] || fail "$1='$p': two different nodes"
	for n in $A $B; do
		[ "$n" -lt $((NODES + VIRTIO_NODES + RXE_NODES)) ] || skip "needs node $n ($1=\"$p\"), lab has $((NODES + VIRTIO_NODES + RXE_NODES))"
		rdma_dev "$n" >/dev/null || skip "node$n is a plain virtio node, no RDMA device"
	done
	[ "$LINK_LAYER" = eth ] || [ "${CNUAS_VERBS_OVER_IB:-0}" = 1 ] ||
		skip "RoCE tests need an Ethernet lab (CNUAS_VERBS_OVER_IB=1: the verbs tests that run over IB)"
}

# rdma_port_active NODE: the device's port 1 is ACTIVE.
rdma_port_active() {
	lsh -t 20 "$1" "rdma link show $(rdma_dev "$1")/1 2>/dev/null | grep -q 'state ACTIVE'"
}

# rdma_ready NODE: the node's RDMA device is up for tests: cnuas_ib loaded
# (skip only when the image has no cnuas_ib), port ACTIVE, the lab MTU on
# its netdev (an earlier test may have changed it), libibverbs lists it.
# One guest command: every exec costs seconds under TCG.
rdma_ready() {
	local n=$1 dev nd rc out
	dev=$(rdma_dev "$n") nd=$(rdma_netdev "$n")
	out=$(lsh -t 90 "$n" "
		if [ $dev = cnuas_0 ]; then
			modinfo -F filename cnuas_ib >/dev/null 2>&1 || exit 77
			modprobe cnuas_ib || { echo 'modprobe cnuas_ib failed'; exit 1; }
		fi
		# No udev in the lab guests: the user-space access modules by hand.
		modprobe -a ib_uverbs rdma_ucm || { echo 'modprobe ib_uverbs rdma_ucm failed'; exit 1; }
		# IPoIB's MTU comes from the broadcast group, not the lab's.
		[ $nd = ib0 ] || [ \"\$(cat /sys/class/net/$nd/mtu)\" = $MTU ] || ip link set $nd mtu $MTU ||
			{ echo 'cannot set MTU $MTU on $nd'; exit 1; }
		# Earlier tests may have recreated the netdev (module reload).
		ip addr replace $(ip_of "$n")/24 dev $nd &&
			ip -6 addr replace $(ip6_of "$n")/64 dev $nd nodad ||
			{ echo 'cannot set the addresses of $nd'; exit 1; }
		i=0
		until rdma link show $dev/1 2>/dev/null | grep -q 'state ACTIVE'; do
			[ \$i -lt 60 ] || { echo '$dev port 1 not ACTIVE:'; rdma link; dmesg | tail -n 20; exit 1; }
			sleep 0.5; i=\$((i + 1))
		done
		ibv_devices | grep -qw $dev || { echo 'ibv_devices does not list $dev:'; ibv_devices 2>&1; exit 1; }
		" 2>&1)
	rc=$?
	[ $rc = 77 ] && skip "cnuas_ib is not in the guest image"
	[ $rc = 0 ] || { echo "$out"; fail "node$n: RDMA device not ready"; }
}

# roce_mtu NETDEV_MTU: the active MTU ib_core gives a RoCE port on a netdev
# of that MTU: the largest IB MTU that fits with the RoCE v2 headers
# (GRH 40, UDP 8, BTH 12, XRC 4, AtomicETH 28, ICRC 4: 96 bytes).
roce_mtu() {
	local m
	for m in 4096 2048 1024 512 256; do
		[ $(($1 - 96)) -ge $m ] && { echo $m; return; }
	done
	echo 256
}

# gid_index NODE 4|6: index of the RoCE v2 GID of the node's lab IPv4
# address (::ffff:198.18.0.N) or IPv6 address (fd00:198:18::N); 0 on IB.
gid_index() {
	local n=$1 want dev nd a b c d
	# An IB port has one GID, the SM's subnet prefix and the port GUID.
	[ "$LINK_LAYER" = ib ] && [ "$(node_kind "$n")" = cnuas ] && { echo 0; return; }
	dev=$(rdma_dev "$n") nd=$(rdma_netdev "$n")
	if [ "$2" = 6 ]; then
		want=$(printf 'fd00:0198:0018:0000:0000:0000:0000:%04x' $((n + 1)))
	else
		IFS=. read -r a b c d <<<"$(ip_of "$n")"
		want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' "$a" "$b" "$c" "$d")
	fi
	# One grep over the table (1024 entries on rxe: a cat each is slow).
	# ib_core adds a GID shortly after its address: a few tries.
	lsh -t 30 "$n" "p=/sys/class/infiniband/$dev/ports/1
		for try in 1 2 3 4 5 6 7 8 9 10; do
		for f in \$(grep -lx $want \$p/gids/* 2>/dev/null); do
			i=\${f##*/}
			[ \"\$(cat \$p/gid_attrs/types/\$i 2>/dev/null)\" = 'RoCE v2' ] &&
				[ \"\$(cat \$p/gid_attrs/ndevs/\$i 2>/dev/null)\" = $nd ] && { echo \$i; exit 0; }
		done; sleep 0.5; done; exit 1"
}

# rdma_prep A B: rdma_ready on both nodes, then the RoCE v2 GID indexes of
# their IPv4 (GA, GB) and IPv6 (GA6, GB6) lab addresses; DA, DB = devices.
# The nodes are asked in parallel.
rdma_prep() {
	local a=$1 b=$2 d=$PR_DIR/prep n rc pids=() v
	mkdir -p "$d"
	for n in "$a" "$b"; do
		(rdma_ready "$n") >"$d/ready$n" 2>&1 &
		pids+=($!)
	done
	for n in 0 1; do
		wait "${pids[$n]}"
		rc=$?
		[ $rc = 0 ] && continue
		cat "$d/ready$([ $n = 0 ] && echo "$a" || echo "$b")"
		exit $rc
	done
	pids=()
	for n in "$a" "$b"; do
		for v in 4 6; do
			(gid_index "$n" $v >"$d/gid$n.$v") &
			pids+=($!)
		done
	done
	wait "${pids[@]}"
	GA=$(cat "$d/gid$a.4") GB=$(cat "$d/gid$b.4") GA6=$(cat "$d/gid$a.6") GB6=$(cat "$d/gid$b.6")
	# shellcheck disable=SC2034 # for the tests
	DA=$(rdma_dev "$a") DB=$(rdma_dev "$b")
	[ -n "$GA" ] || fail "node$a: no RoCE v2 GID for $(ip_of "$a")"
	[ -n "$GB" ] || fail "node$b: no RoCE v2 GID for $(ip_of "$b")"
	[ -n "$GA6" ] || fail "node$a: no RoCE v2 GID for $(ip6_of "$a")"
	[ -n "$GB6" ] || fail "node$b: no RoCE v2 GID for $(ip6_of "$b")"
}

# ---- a server/client pair of a stock tool -----------------------------------
#
# pair_run NAME SECONDS SRV CLI READY SERVER_CMD CLIENT_CMD
# Starts SERVER_CMD in the background on node SRV; a guest-side loop runs
# the guest command READY (e.g. "$(listening 18515)") until it succeeds and
# then prints a marker the host waits for (30 s at most: no polling execs).
# Then CLIENT_CMD runs on node CLI, and the server is waited for.  Each side
# is killed after SECONDS.  Sets PR_SRV_RC, PR_CLI_RC and the output files
# PR_SRV, PR_CLI (kept in $LAB_DIR/pair-out/TEST until the next lab); returns 0
# when both exit 0.
PR_DIR=$LAB_DIR/pair-out/$(basename "$0" .sh)
PR_MARK=@@cnuas-pair-ready@@
pair_run() {
	local name=$1 t=$2 s=$3 c=$4 ready=$5 scmd=$6 ccmd=$7 spid i
	mkdir -p "$PR_DIR"
	rm -f "$PR_DIR/$name.rc"
	PR_SRV=$PR_DIR/$name.server PR_CLI=$PR_DIR/$name.client
	PR_SRV_RC=255 PR_CLI_RC=255
	: >"$PR_CLI"
	lsh -t $((t + 15)) "$s" "timeout --foreground -k 3 $t stdbuf -oL $scmd & p=\$!
		i=0; until $ready; do kill -0 \$p 2>/dev/null && [ \$i -lt 300 ] || break; sleep 0.1; i=\$((i+1)); done
		echo $PR_MARK >&2; wait \$p" >"$PR_SRV" 2>&1 </dev/null &
	spid=$!
	i=0
	until grep -q "$PR_MARK" "$PR_SRV" 2>/dev/null || ! kill -0 "$spid" 2>/dev/null || [ $i -ge 300 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	if kill -0 "$spid" 2>/dev/null && grep -q "$PR_MARK" "$PR_SRV"; then
		lsh -t $((t + 15)) "$c" "exec timeout --foreground -k 3 $t stdbuf -oL $ccmd" >"$PR_CLI" 2>&1 </dev/null
		PR_CLI_RC=$?
	else
		echo "(server exited or did not get ready: $ready)" >>"$PR_SRV"
	fi
	# The server ends right after its client; after a failed client give it
	# a few seconds, then the agent kills it with its host side.
	i=$((PR_CLI_RC == 0 ? t * 2 : 10))
	while kill -0 "$spid" 2>/dev/null && [ $i -gt 0 ]; do
		sleep 0.5
		i=$((i - 1))
	done
	kill "$spid" 2>/dev/null
	wait "$spid"
	PR_SRV_RC=$?
	sed -i "/$PR_MARK/d" "$PR_SRV"
	echo "$PR_SRV_RC $PR_CLI_RC" >"$PR_DIR/$name.rc"
	[ "$PR_SRV_RC" = 0 ] && [ "$PR_CLI_RC" = 0 ]
}

# pair_bg ARGS...: pair_run in the background, at most CNUAS_PAIR_JOBS (2)
# at once (each guest has one slow vCPU: overlapping hides the latency of
# the control channel and the TCP exchange); pair_wait waits for all;
# pair_result NAME loads the results of one run as pair_run sets them.
PR_JOBS=()
pair_bg() {
	if [ "${CNUAS_PAIR_JOBS:-2}" -le 1 ]; then
		pair_run "$@"
		return 0
	fi
	(pair_run "$@") &
	PR_JOBS+=($!)
	if [ ${#PR_JOBS[@]} -ge "${CNUAS_PAIR_JOBS:-2}" ]; then
		wait "${PR_JOBS[0]}"
		PR_JOBS=("${PR_JOBS[@]:1}")
	fi
	return 0
}
pair_wait() {
	[ ${#PR_JOBS[@]} -eq 0 ] || wait "${PR_JOBS[@]}"
	PR_JOBS=()
}
pair_result() {
	PR_SRV=$PR_DIR/$1.server PR_CLI=$PR_DIR/$1.client
	PR_SRV_RC=255 PR_CLI_RC=255
	[ -f "$PR_DIR/$1.rc" ] && read -r PR_SRV_RC PR_CLI_RC <"$PR_DIR/$1.rc"
	[ "$PR_SRV_RC" = 0 ] && [ "$PR_CLI_RC" = 0 ]
}

# listening PORT: guest command, true when a TCP socket listens on PORT (the
# tools exchange their QP numbers over TCP before any RDMA traffic).
listening() {
	printf "grep -qi ':%04X [0-9A-F]*:0000 0A' /proc/net/tcp /proc/net/tcp6" "$1"
}
# An RDMA CM ID listens (rping -s).
cm_listening() { echo "rdma res show cm_id 2>/dev/null | grep -q LISTEN"; }

# pair_show [LINES]: both outputs, for a failure report.
pair_show() {
	echo "---- server (exit $PR_SRV_RC):"
	tail -n "${1:-15}" "$PR_SRV"
	echo "---- client (exit $PR_CLI_RC):"
	tail -n "${1:-15}" "$PR_CLI"
}

# rping_exit_race: true when, in the last pair, one rping exited 255 after
# a clean DISCONNECT with "rdma_get_cm_event: Bad file descriptor" and the
# other exited 0. That is rping's own teardown race: its CM thread still
# waits in rdma_get_cm_event when the main thread destroys the event
# channel, and the thread exits the process. The pings are then judged by
# their output, as the tool's bug says nothing of the device.
rping_exit_race() {
	local f rc other file
	for f in srv cli; do
		if [ $f = srv ]; then rc=$PR_SRV_RC other=$PR_CLI_RC file=$PR_SRV; else rc=$PR_CLI_RC other=$PR_SRV_RC file=$PR_CLI; fi
		[ "$rc" = 255 ] && [ "$other" = 0 ] || continue
		tail -n 2 "$file" | tr '\n' '|' | grep -q 'DISCONNECT EVENT\.\.\.|rdma_get_cm_event: Bad file descriptor|$' &&
			{ echo "# rping's teardown race hit the $f side (exit 255 after DISCONNECT); judged by its output"; return 0; }
	done
	return 1
}

# rping_killed_midread SERVER-OUT: our SIGINT ended the client while the
# server read its buffer, and the dying process's side answered that READ
# with a remote access error (status 10, IBV_WC_REM_ACCESS_ERR: what the
# IBA has a responder send for an rkey no longer valid, as the kernel
# takes the dead process's verbs objects down), then the disconnect came.
# Seen once with the Soft-RoCE client of rping-rxe (2026-12-07), every
# ping before it checked. Only that exact ending counts: any other
# server error fails.
rping_killed_midread() {
	tail -n 4 "$1" | tr '\n' '|' |
		grep -qx 'cq completion failed status 10|wait for RDMA_READ_COMPLETE state [0-9]*|rping server failed: -1|server DISCONNECT EVENT\.\.\.|' ||
		return 1
	echo "# the stopped client's process died during the server's READ of its buffer (remote access error, then the disconnect); judged by the pings"
}
# pair_check DESC: fail with both outputs unless the last pair_run passed.
pair_check() {
	[ "$PR_SRV_RC" = 0 ] && [ "$PR_CLI_RC" = 0 ] && return 0
	pair_show 15
	fail "$1"
}

# gpu_ready NODE TOOL: cnuasgpu loaded and /dev/cnuasgpu0 present on NODE,
# TOOL in its image; skips the test (with the reason) when either is not.
gpu_ready() {
	local out rc
	out=$(lsh -t 60 "$1" "command -v $2 >/dev/null || { echo 'no $2 in the image'; exit 77; }
		modprobe -q cnuasgpu 2>/dev/null
		i=0; while [ ! -e /dev/cnuasgpu0 ] && [ \$i -lt 50 ]; do sleep 0.2; i=\$((i+1)); done
		[ -e /dev/cnuasgpu0 ] || { echo 'no /dev/cnuasgpu0 (lab without --gpu?)'; exit 77; }" 2>&1)
	rc=$?
	[ $rc = 77 ] && skip "node$1: $out"
	[ $rc = 0 ] || fail "node$1: $out"
}

# ---- NVMe over RDMA with Linux's nvmet-rdma ----------------------------------
#
# nvmet_export NODE NQN IMG PORTID: NODE's nvmet exports a 64 MiB file IMG
# as namespace 1 of subsystem NQN (any host), on RDMA port PORTID at its
# lab address, port 4420.
nvmet_export() {
	local cfg=/sys/kernel/config/nvmet out
	out=$(lsh -t 60 "$1" "set -e
		mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
		truncate -s 64M $3
		mkdir $cfg/subsystems/$2
		echo 1 >$cfg/subsystems/$2/attr_allow_any_host
		mkdir $cfg/subsystems/$2/namespaces/1
		echo -n $3 >$cfg/subsystems/$2/namespaces/1/device_path
		echo 1 >$cfg/subsystems/$2/namespaces/1/buffered_io
		echo 1 >$cfg/subsystems/$2/namespaces/1/enable
		mkdir $cfg/ports/$4
		echo rdma >$cfg/ports/$4/addr_trtype
		echo ipv4 >$cfg/ports/$4/addr_adrfam
		echo $(ip_of "$1") >$cfg/ports/$4/addr_traddr
		echo 4420 >$cfg/ports/$4/addr_trsvcid
		ln -s $cfg/subsystems/$2 $cfg/ports/$4/subsystems/$2
		# the host connects once: wait until the port listens
		i=0
		until rdma res show cm_id 2>/dev/null | grep -qE 'state LISTEN .*:4420( |\$)'; do
			[ \$i -lt 150 ] || { echo 'no RDMA CM listener on port 4420 after 30 s'; exit 1; }
			sleep 0.2; i=\$((i + 1))
		done" 2>&1) ||
		fail "node$1: nvmet setup failed: $out"
}

# ---- ssh between the guests, as on a cluster --------------------------------
#
# ssh_setup NODE...: each node gets a host key and a key of root made for
# this lab (the image's host keys are not used: every guest boots the same
# disk), every node's root key is authorized on every node and every host
# key is known under its name and address, /etc/hosts names the nodes
# nodeN, and sshd listens on each node's lab address. Then every node
# logs in to the next with BatchMode (no password, no prompt).
# ssh_stop NODE...: stop the sshd that ssh_setup started.
ssh_stop() {
	local n
	for n in "$@"; do
		lsh -t 30 "$n" '[ ! -s /run/sshd.pid ] || kill $(cat /run/sshd.pid) 2>/dev/null; rm -f /run/sshd.pid' >/dev/null 2>&1
	done
}
ssh_setup() {
	local d=$PR_DIR/ssh n rc pids=() auth='' known='' hosts='' next
	mkdir -p "$d"
	for n in "$@"; do
		(lsh -t 120 "$n" "set -e
			rm -f /etc/ssh/ssh_host_*
			ssh-keygen -q -t ed25519 -N '' -C node$n -f /etc/ssh/ssh_host_ed25519_key
			mkdir -p -m 700 /root/.ssh
			rm -f /root/.ssh/id_ed25519 /root/.ssh/id_ed25519.pub
			ssh-keygen -q -t ed25519 -N '' -C root@node$n -f /root/.ssh/id_ed25519
			echo host \$(cut -d' ' -f1,2 /etc/ssh/ssh_host_ed25519_key.pub)
			echo user \$(cat /root/.ssh/id_ed25519.pub)") >"$d/keys$n" 2>&1 &
		pids+=($!)
	done
	for n in "$@"; do
		wait "${pids[0]}"
		rc=$?
		pids=("${pids[@]:1}")
		[ $rc = 0 ] || { cat "$d/keys$n"; fail "node$n: cannot make ssh keys"; }
		auth+="$(sed -n 's/^user //p' "$d/keys$n")"$'\n'
		known+="node$n,$(ip_of "$n") $(sed -n 's/^host //p' "$d/keys$n")"$'\n'
		hosts+="$(ip_of "$n") node$n"$'\n'
	done
	printf '%s' "$auth" >"$d/authorized_keys"
	printf '%s' "$known" >"$d/known_hosts"
	for n in "$@"; do
		(lsh -t 120 "$n" "set -e
			printf '%s' '$auth' >/root/.ssh/authorized_keys
			printf '%s' '$known' >/root/.ssh/known_hosts
			chmod 600 /root/.ssh/authorized_keys
			sed -i '/ node[0-9]*\$/d' /etc/hosts
			printf '%s' '$hosts' >>/etc/hosts
			[ ! -s /run/sshd.pid ] || kill \$(cat /run/sshd.pid) 2>/dev/null || true
			mkdir -p -m 755 /run/sshd
			/usr/sbin/sshd -o ListenAddress=$(ip_of "$n") -o PasswordAuthentication=no
			i=0; until $(listening 22); do [ \$i -lt 100 ] || { echo 'sshd does not listen'; exit 1; }; sleep 0.1; i=\$((i+1)); done") \
			>"$d/setup$n" 2>&1 &
		pids+=($!)
	done
	for n in "$@"; do
		wait "${pids[0]}"
		rc=$?
		pids=("${pids[@]:1}")
		[ $rc = 0 ] || { cat "$d/setup$n"; fail "node$n: cannot start sshd"; }
	done
	set -- "$@" "$1"
	while [ $# -ge 2 ]; do
		n=$1 next=$2
		shift
		out=$(lsh -t 60 "$n" "ssh -o BatchMode=yes -o ConnectTimeout=30 node$next hostname" 2>&1)
		[ "$out" = "node$next" ] || { echo "$out"; fail "node$n: ssh node$next does not log in"; }
	done
}
