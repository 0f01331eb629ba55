# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# shellcheck shell=bash
# The subnet of an InfiniBand lab (`scripts/lab up --link-layer ib`), as an
# IB administrator brings one up: the RDMA modules and IPoIB on every cnuas
# node, Debian's OpenSM on node0 (the subnet manager sweeps the switch and
# every HCA through their SMAs), then a wait until every port is Active
# with a LID. ib0 of node n gets the address cnuas0 has in an Ethernet lab
# (198.18.0.n+1/24, fd00:198:18::n+1/64), so the tests' addressing holds.
# node0's switch port is the only one that may manage the fabric
# (cnuas-vsctl sm-port add name=node0 before OpenSM starts, also with
# CNUAS_LAB_SM=0; the switch keeps it across `scripts/lab switch-restart`
# in $LAB_DIR/ib-state, as it keeps each node's IB port number): the other
# guests send SMP answers and traps only, as a cloud's virtual functions
# (docs/ib-switch.md, "Trust").
# OpenSM protects every port it manages with an M_Key, as a fabric
# administrator would (docs/ib-switch.md, "M_Key"): a key drawn per lab,
# protection level 2 (Gets and Sets without the key go unanswered, the
# port counts the violation and traps 256) and a lease of 60 s (a port
# whose SM is gone for good falls back to no protection; a running SM's
# sweeps present the key and keep the lease). node0's
# /etc/opensm/opensm.conf holds the key for every OpenSM started there
# and /etc/infiniband-diags/ibdiag.conf for the diag tools run there;
# no other guest has it. The key is IB_MKEY in lab.env.
#   CNUAS_LAB_SM=0            no OpenSM (the tests or the user start one)
#   CNUAS_LAB_SM_TIMEOUT      seconds to wait for Active ports (default 300)

ib_exec() { # ib_exec NODE SCRIPT
	timeout 120 "$PY" "$LABD/labctl.py" exec --sync-timeout 20 "$LAB_DIR/node$1" -- sh -c "$2" </dev/null
}

ib_port_active() {
	ib_exec "$1" 'p=/sys/class/infiniband/cnuas_0/ports/1
		grep -q ACTIVE $p/state && [ "$(cat $p/lid)" != 0x0 ]' >/dev/null 2>&1
}

# ib_sm_port_check: node0's IB port on the switch, found by its QEMU's pid
# (`cnuas-vsctl show`: "pid N ... ib P"), is an SM port.
ib_sm_port_check() {
	local pid port
	pid=$(pidfile_pid "$LAB_DIR/node0.pid")
	[ -n "$pid" ] || die "node0: no QEMU pid"
	# (up to 30 s: after a switch restart QEMU reconnects with back-off)
	for _ in $(seq 150); do
		port=$("$VSCTL" --ctl "$LAB_DIR/switch.ctl" --json show | "$PY" -c '
import json, sys
for p in json.load(sys.stdin)["ports"]:
    w = p.get("peer", "").split()
    if w[:2] == ["pid", sys.argv[1]] and "ib" in w:
        print(w[w.index("ib") + 1])' "$pid") && [ -n "$port" ] && break
		sleep 0.2
	done
	[ -n "$port" ] || die "node0 (pid $pid) has no IB port on the switch"
	"$VSCTL" --ctl "$LAB_DIR/switch.ctl" --json sm-port list | "$PY" -c '
import json, sys
sys.exit(int(sys.argv[1]) not in [p["port"] for p in json.load(sys.stdin)["sm_ports"]])' "$port" ||
		die "IB port $port (node0's) is not an SM port: $("$VSCTL" --ctl "$LAB_DIR/switch.ctl" sm-port list)"
	say "IB subnet: switch port $port (node0's) is the SM port, the only one that manages"
}

# ib_sm_port: node0, by its VM name, is the SM's; the switch keeps that in
# its state ($LAB_DIR/ib-state), so a restarted switch knows it too.
ib_sm_port() {
	"$VSCTL" --ctl "$LAB_DIR/switch.ctl" sm-port add name=node0 >/dev/null ||
		die "the switch refused node0 as the SM's VM"
	ib_sm_port_check
}

# ib_mkey_configs: node0's OpenSM and diag tools get the lab's M_Key.
ib_mkey_configs() {
	IB_MKEY=0x$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')
	ib_exec 0 "mkdir -p /etc/opensm /etc/infiniband-diags &&
		printf 'm_key %s\nm_key_protection_level 2\nm_key_lease_period 60\nm_key_lookup TRUE\n' $IB_MKEY >/etc/opensm/opensm.conf &&
		sed -i '/^m_key=/d' /etc/infiniband-diags/ibdiag.conf 2>/dev/null;
		echo m_key=$IB_MKEY >>/etc/infiniband-diags/ibdiag.conf" >/dev/null 2>&1 ||
		die "node0: cannot write the M_Key into opensm.conf and ibdiag.conf"
}

ib_subnet_up() {
	local nodes=$1 n t0 limit=${CNUAS_LAB_SM_TIMEOUT:-300} left
	case $limit in '' | *[!0-9]*) die "CNUAS_LAB_SM_TIMEOUT must be seconds, not '$limit'" ;; esac
	for n in $(seq 0 $((nodes - 1))); do
		ib_exec "$n" "modprobe -a cnuas_ib ib_umad ib_uverbs rdma_ucm ib_ipoib" >/dev/null 2>&1 ||
			die "node$n: cannot load the RDMA modules"
	done
	ib_sm_port
	if [ "${CNUAS_LAB_SM:-1}" = 0 ]; then
		say "IB subnet: no OpenSM (CNUAS_LAB_SM=0); ports stay Init until an SM runs"
		return 0
	fi
	ib_exec 0 'command -v opensm' >/dev/null 2>&1 ||
		die "the guest image has no opensm (tests/lab/packages.list)"
	ib_mkey_configs
	ib_exec 0 'pgrep -x opensm >/dev/null || opensm -B -f /var/log/opensm.log >/dev/null 2>&1' ||
		die "node0: opensm did not start"
	t0=$(date +%s)
	for n in $(seq 0 $((nodes - 1))); do
		until ib_port_active "$n"; do
			left=$((limit - ($(date +%s) - t0)))
			[ "$left" -gt 0 ] || die "node$n: port not Active with a LID after $limit s (node0:/var/log/opensm.log)"
			sleep 1
		done
	done
	for n in $(seq 0 $((nodes - 1))); do
		ib_exec "$n" "ip link set ib0 up &&
			ip addr replace 198.18.0.$((n + 1))/24 dev ib0 &&
			ip -6 addr replace fd00:198:18::$((n + 1))/64 dev ib0 nodad" >/dev/null 2>&1 ||
			die "node$n: cannot set up ib0"
	done
	say "IB subnet up in $(($(date +%s) - t0)) s: OpenSM on node0, $nodes port(s) Active, IPoIB ib0 addressed"
}
