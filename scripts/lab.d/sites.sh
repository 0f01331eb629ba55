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
# --site-bridge linux|ovs[,...] (SITE_BRIDGES; site N takes the N-th, the
# last one the rest): a site's bridge is a Linux bridge with a VXLAN port
# (default), or Open vSwitch with its userspace datapath (datapath_type
# netdev: no kernel module), ovsdb-server and ovs-vswitchd running in the
# site's namespace from $LAB_DIR/siteN-ovs/ (never the host's service):
# bridge br-int holds the TAP and one VXLAN port per other site (OVS's own
# userspace tunnel), bridge br-phy holds the underlay veth and, on its
# internal port, the site's underlay address, from which OVS routes and
# resolves the tunnel's outer packets.
#
# $LAB_DIR/siteN.cmd, .pid, .log, .sock, .ctl   site N's switch (N >= 1)
# $LAB_DIR/siteN-ovs/   an OVS site's database, sockets, pid files and logs

# Short, per-lab names: namespaces and interfaces are host-wide.
lab_tag() { echo "$LAB_DIR" | sha256sum | cut -c1-6; }
site_ns() { echo "cnuas-$(lab_tag)-$1"; }	# site_ns SITE|wan
site_tap() { echo "cn$(lab_tag)t$1"; }
site_of() { echo $(($1 % ${SITES:-1})); }
site_sock() { # site_sock SITE: the socket its guests connect to
	if [ "$1" = 0 ]; then echo "$LAB_DIR/switch.sock"; else echo "$LAB_DIR/site$1.sock"; fi
}

site_stream() { # site_stream SITE: its -netdev stream socket (--virtio-netdev stream)
	if [ "$1" = 0 ]; then echo "$LAB_DIR/switch.stream"; else echo "$LAB_DIR/site$1.stream"; fi
}

site_bridge() { # site_bridge SITE: linux or ovs
	local list
	read -r -a list <<<"${SITE_BRIDGES:-linux}"
	if [ "$1" -lt ${#list[@]} ]; then echo "${list[$1]}"; else echo "${list[-1]}"; fi
}
site_ovs_dir() { echo "$LAB_DIR/site$1-ovs"; }
site_ovs_vsctl() { # site_ovs_vsctl SITE ARGS...: ovs-vsctl on site SITE's OVS
	local d
	d=$(site_ovs_dir "$1")
	shift
	ovs-vsctl --timeout=30 --db="unix:$d/db.sock" "$@"
}
site_ovs_appctl() { # site_ovs_appctl SITE ARGS...: ovs-appctl to site SITE's ovs-vswitchd
	local d
	d=$(site_ovs_dir "$1")
	shift
	ovs-appctl --timeout=30 -t "$d/ovs-vswitchd.ctl" "$@"
}
site_ovs_ofctl() { # site_ovs_ofctl SITE CMD BRIDGE [ARGS...]: ovs-ofctl on a bridge of site SITE
	local d cmd=$2 br=$3
	d=$(site_ovs_dir "$1")
	shift 3
	ovs-ofctl "$cmd" "unix:$d/$br.mgmt" "$@"
}

# ovsdb-server and ovs-vswitchd of OVS site SITE, in its namespace, with
# their own files: nothing of the host's Open vSwitch (if any) is touched.
site_ovs_start() { # site_ovs_start SITE
	local s=$1 d ns
	d=$(site_ovs_dir "$s") ns=$(site_ns "$s")
	command -v ovs-vswitchd >/dev/null && command -v ovsdb-server >/dev/null ||
		die "site $s: --site-bridge ovs needs Open vSwitch (apt-get install openvswitch-switch)"
	mkdir -p "$d"
	ovsdb-tool create "$d/conf.db" /usr/share/openvswitch/vswitch.ovsschema ||
		die "site $s: ovsdb-tool create failed"
	env OVS_RUNDIR="$d" OVS_LOGDIR="$d" OVS_DBDIR="$d" OVS_SYSCONFDIR="$d" \
		ip netns exec "$ns" ovsdb-server "$d/conf.db" --remote="punix:$d/db.sock" -vconsole:off \
		--pidfile="$d/ovsdb-server.pid" --unixctl="$d/ovsdb-server.ctl" \
		--log-file="$d/ovsdb-server.log" --detach --no-chdir ||
		die "site $s: ovsdb-server did not start (log: $d/ovsdb-server.log)"
	site_ovs_vsctl "$s" --no-wait init || die "site $s: ovs-vsctl init failed"
	env OVS_RUNDIR="$d" OVS_LOGDIR="$d" OVS_DBDIR="$d" OVS_SYSCONFDIR="$d" \
		ip netns exec "$ns" ovs-vswitchd "unix:$d/db.sock" -vconsole:off --pidfile="$d/ovs-vswitchd.pid" \
		--unixctl="$d/ovs-vswitchd.ctl" --log-file="$d/ovs-vswitchd.log" --detach --no-chdir ||
		die "site $s: ovs-vswitchd did not start (log: $d/ovs-vswitchd.log)"
}

# Site SITE's OVS bridges: br-phy (underlay, with the site's address on its
# internal port) and br-int (TAP + a VXLAN port to every other site).
site_ovs_wire() { # site_ovs_wire SITE
	local s=$1 t ns
	ns=$(site_ns "$s")
	site_ovs_vsctl "$s" add-br br-phy -- set bridge br-phy datapath_type=netdev \
		-- set interface br-phy mtu_request=$((MTU + 100)) \
		-- add-port br-phy underlay ||
		die "site $s: cannot make OVS bridge br-phy"
	ip -n "$ns" addr flush dev underlay
	ip -n "$ns" addr add "10.77.0.$((s + 1))/24" dev br-phy
	ip -n "$ns" link set br-phy up
	site_ovs_vsctl "$s" add-br br-int -- set bridge br-int datapath_type=netdev ||
		die "site $s: cannot make OVS bridge br-int"
	for t in $(seq 0 $((SITES - 1))); do
		[ "$t" = "$s" ] && continue
		site_ovs_vsctl "$s" add-port br-int "vx$t" -- set interface "vx$t" type=vxlan \
			options:remote_ip="10.77.0.$((t + 1))" options:local_ip="10.77.0.$((s + 1))" \
			options:key=4242 options:dst_port=4789 ||
			die "site $s: cannot add VXLAN port vx$t"
	done
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
		if [[ " ${SITE_BRIDGES:-linux} " = *" ovs "* ]]; then
			# A Linux VXLAN leaves its outer UDP checksum for the NIC to
			# finish; over a veth it arrives unfinished, and OVS's
			# userspace tunnel (reading with AF_PACKET) finds it wrong
			# and drops the packet. A real NIC finishes it: so does
			# the kernel here, with checksum offload off.
			ip netns exec "$ns" ethtool -K underlay tx off >/dev/null ||
				die "site $s: ethtool -K underlay tx off failed (ethtool installed?)"
		fi
		if [ "$(site_bridge "$s")" = ovs ]; then
			site_ovs_start "$s"
			site_ovs_wire "$s"
			site_attach_tap "$s"
			continue
		fi
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
	if [ "$(site_bridge "$1")" = ovs ]; then
		ip -n "$ns" link set "$tap" up
		# The switch's TAP is new after a restart: drop the old port first,
		# in a transaction of its own (in one with add-port, ovs-vswitchd
		# sees the same name and keeps reading the interface that is gone).
		site_ovs_vsctl "$1" --if-exists del-port br-int "$tap" &&
			site_ovs_vsctl "$1" add-port br-int "$tap" ||
			die "site $1: cannot add TAP $tap to OVS bridge br-int"
		return
	fi
	ip -n "$ns" link set "$tap" master br0
	ip -n "$ns" link set "$tap" up
}

# Namespaces of this lab, whatever its lab.env says (a failed start too).
sites_down() {
	local ns f pid
	# the OVS daemons of OVS sites, by their pid files
	for f in "$LAB_DIR"/site*-ovs/ovs-vswitchd.pid "$LAB_DIR"/site*-ovs/ovsdb-server.pid; do
		[ -e "$f" ] || continue
		pid=$(pidfile_pid "$f")
		if pid_alive "$pid"; then
			kill -TERM "$pid" 2>/dev/null || true
			for _ in $(seq 50); do pid_alive "$pid" || break; sleep 0.1; done
			pid_alive "$pid" && kill -KILL "$pid" 2>/dev/null || true
		fi
	done
	for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^cnuas-$(lab_tag)-" || true); do
		ip netns del "$ns" || true
	done
}
