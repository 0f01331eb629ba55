# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# shellcheck shell=bash
# `scripts/lab up --sites N` (sourced by common.sh): the guests spread over
# N switches as if on N hosts, node n on site n % N. Every site's switch
# has a TAP port, and every site is a network namespace holding that TAP,
# a Linux bridge and a VXLAN port, as docs/multi-host.md sets up a host.
# The sites' underlay is one more namespace, a bridge with a veth to each
# site (the "WAN"), where tests impair the path (tc netem on wan-N, the
# WAN's end of site N's link). Site 0's switch is the lab's usual switch.
#
# $LAB_DIR/siteN.cmd, .pid, .log, .sock, .ctl   site N's switch (N >= 1)

# Short, per-lab names: namespaces and interfaces are host-wide.
lab_tag() { echo "$LAB_DIR" | sha256sum | cut -c1-6; }
site_ns() { echo "cnuas-$(lab_tag)-$1"; }	# site_ns SITE|wan
site_tap() { echo "cn$(lab_tag)t$1"; }
site_of() { echo $(($1 % ${SITES:-1})); }
site_sock() { # site_sock SITE: the socket its guests connect to
	if [ "$1" = 0 ]; then echo "$LAB_DIR/switch.sock"; else echo "$LAB_DIR/site$1.sock"; fi
}

sites_start() { # the switches of sites 1.. (site 0's is switch_start's)
	local s pid args=()
	for s in $(seq 1 $((SITES - 1))); do
		mapfile -t args <"$LAB_DIR/site$s.cmd"
		rm -f "$LAB_DIR/site$s.sock" "$LAB_DIR/site$s.ctl"
		echo "---- switch start $(date -u +%T)" >>"$LAB_DIR/site$s.log"
		spawn "$LAB_DIR/site$s.pid" "$LAB_DIR/site$s.log" "${args[@]}"
		for _ in $(seq 100); do
			[ -S "$LAB_DIR/site$s.ctl" ] && break
			pid=$(pidfile_pid "$LAB_DIR/site$s.pid")
			pid_alive "$pid" || { tail -n 20 "$LAB_DIR/site$s.log" >&2; die "site $s: switch did not start"; }
			sleep 0.1
		done
		[ -S "$LAB_DIR/site$s.ctl" ] || die "site $s: switch did not come up (log: $LAB_DIR/site$s.log)"
		raise_io_priority "$(pidfile_pid "$LAB_DIR/site$s.pid")"
		pin_io_threads "$(pidfile_pid "$LAB_DIR/site$s.pid")"
	done
}

# The namespaces, the WAN and the tunnels. MTU: the guests' MTU on the
# TAPs, bridges and VXLAN ports; VXLAN over IPv4 adds 50 bytes below.
sites_wire() {
	local s t ns wan tap u w
	wan=$(site_ns wan)
	ip netns add "$wan" || die "ip netns add $wan failed (root needed)"
	ip -n "$wan" link add br0 type bridge
	ip -n "$wan" link set br0 up
	for s in $(seq 0 $((SITES - 1))); do
		ns=$(site_ns "$s") tap=$(site_tap "$s")
		u=cn$(lab_tag)u$s w=cn$(lab_tag)w$s
		ip netns add "$ns"
		ip link add name "$u" mtu $((MTU + 100)) type veth peer name "$w" mtu $((MTU + 100))
		ip link set "$u" netns "$ns"
		ip link set "$w" netns "$wan"
		ip -n "$wan" link set "$w" name "wan-$s"
		ip -n "$wan" link set "wan-$s" master br0 up
		ip -n "$ns" link set "$u" name underlay
		ip -n "$ns" addr add "10.77.0.$((s + 1))/24" dev underlay
		ip -n "$ns" link set underlay up
		ip -n "$ns" link add vx0 mtu "$MTU" type vxlan id 4242 local "10.77.0.$((s + 1))" \
			dstport 4789 nolearning
		# head-end replication to every other site; unicast is learned
		for t in $(seq 0 $((SITES - 1))); do
			[ "$t" = "$s" ] || bridge -n "$ns" fdb append 00:00:00:00:00:00 dev vx0 dst "10.77.0.$((t + 1))"
		done
		ip -n "$ns" link add br0 type bridge
		ip -n "$ns" link set vx0 master br0
		ip -n "$ns" link set vx0 up
		ip -n "$ns" link set br0 up
		site_attach_tap "$s"
	done
}

# A site switch's TAP (new after a switch restart) into its site's bridge.
site_attach_tap() { # site_attach_tap SITE
	local ns tap
	ns=$(site_ns "$1") tap=$(site_tap "$1")
	ip link set "$tap" netns "$ns" || die "site $1: no TAP $tap in the host's namespace"
	ip -n "$ns" link set "$tap" mtu "$MTU"
	ip -n "$ns" link set "$tap" master br0
	ip -n "$ns" link set "$tap" up
}

# Namespaces of this lab, whatever its lab.env says (a failed start too).
sites_down() {
	local ns
	for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^cnuas-$(lab_tag)-" || true); do
		ip netns del "$ns" || true
	done
}
