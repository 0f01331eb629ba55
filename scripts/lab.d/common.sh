# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# shellcheck shell=bash
# Shared state and process handling of scripts/lab (sourced).
#
# $LAB_DIR/lab.env      settings of the running lab (sourced by lab_load)
# $LAB_DIR/nodeN/       agentK.sock, qmp.sock of node N
# $LAB_DIR/*.pid        one file per process we started (its own session)
# $LAB_DIR/switch.cmd   the switch command line, one argument per line
# (sites.sh: the switches of a lab of several sites)

say() { echo "lab: $*" >&2; }
die() { echo "lab: error: $*" >&2; exit 1; }

# shellcheck source=sites.sh
. "$(dirname "${BASH_SOURCE[0]}")/sites.sh"

# lab_dir_private DIR: the lab folder holds the sockets every QEMU and
# the switch trust and the scripts run what its files say, so it must be
# ours alone. Its /tmp name is predictable: refuse one that another user
# (or a symlink) got there first, and keep ours mode 0700.
lab_dir_private() {
	local d=$1 uid
	mkdir -p "$(dirname "$d")"
	mkdir -m 0700 "$d" 2>/dev/null || true
	if [ -L "$d" ] || [ ! -d "$d" ]; then
		die "$d: not a directory of ours (a symlink or a file): remove it or set CNUAS_LAB_DIR"
	fi
	uid=$(stat -c %u "$d")
	[ "$uid" = "$(id -u)" ] ||
		die "$d belongs to uid $uid, not to us ($(id -u)): refusing a lab folder another user made; remove it or set CNUAS_LAB_DIR"
	chmod 0700 "$d" || die "$d: cannot make it private (chmod 0700)"
}

lab_load() {
	[ -f "$LAB_DIR/lab.env" ] || { echo "lab: no lab in $LAB_DIR (scripts/lab up)" >&2; exit 255; }
	# shellcheck disable=SC1091
	. "$LAB_DIR/lab.env"
	# Labs started before these settings existed.
	RXE_NODES=${RXE_NODES:-0} MTU=${MTU:-1500} INIT=${INIT:-shell} DISTROS=${DISTROS:-bookworm}
	SITES=${SITES:-1} VIRTIO_NETDEV=${VIRTIO_NETDEV:-dgram} SHM_RING=${SHM_RING:-}
}

# Node kinds in order: cnuas, then stock virtio-net, then virtio-net + rdma_rxe.
lab_total() { echo $((NODES + VIRTIO_NODES + RXE_NODES)); }
node_kind() {
	if [ "$1" -lt "$NODES" ]; then echo cnuas
	elif [ "$1" -lt $((NODES + VIRTIO_NODES)) ]; then echo virtio
	else echo rxe; fi
}

# The distro of node N: the N-th of $DISTROS, the last one for the rest.
node_distro() {
	local list
	read -r -a list <<<"$DISTROS"
	if [ "$1" -lt ${#list[@]} ]; then echo "${list[$1]}"; else echo "${list[-1]}"; fi
}

node_dir() {
	local n=$1
	case $n in '' | *[!0-9]*) echo "lab: bad node '$n'" >&2; return 1 ;; esac
	if [ "$n" -ge "$(lab_total)" ]; then
		echo "lab: no node $n (lab has $(lab_total))" >&2
		return 1
	fi
	echo "$LAB_DIR/node$n"
}

pid_alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }

pidfile_pid() { cat "$1" 2>/dev/null || true; }

# Stop the process (and its process group) recorded in a pid file.
stop_pidfile() {
	local f=$1 sig=${2:-TERM} pid i
	pid=$(pidfile_pid "$f")
	if pid_alive "$pid"; then
		kill -"$sig" -- -"$pid" 2>/dev/null || kill -"$sig" "$pid" 2>/dev/null || true
		for i in $(seq 50); do
			pid_alive "$pid" || break
			sleep 0.1
		done
		if pid_alive "$pid"; then
			kill -KILL -- -"$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
			for i in $(seq 30); do
				pid_alive "$pid" || break
				sleep 0.1
			done
		fi
	fi
	pid_alive "$pid" && { say "process $pid ($f) does not die"; return 1; }
	rm -f "$f"
}

# Start a command in its own session, stdout/stderr to a log, record its pid.
spawn() {
	local pidfile=$1 log=$2
	shift 2
	setsid "$@" </dev/null >>"$log" 2>&1 &
	echo $! >"$pidfile"
}

# The threads that move frames (the switch, each QEMU's main loop, the
# cnuas-vnic RX threads) run SCHED_FIFO 1, so a frame never waits behind
# a busy-polling vCPU for a host time slice (which EEVDF may not cut
# short even for a niced vCPU): that wait was most of the latency tail,
# for cnuas and rxe guests alike. They only run when a frame or a timer
# needs them, and the kernel's RT throttling keeps 5% of each CPU for
# everything else. CNUAS_LAB_IO_RT=0 turns it off (also where chrt is
# not allowed).
raise_io_priority() {
	local pid=$1 t
	[ "${CNUAS_LAB_IO_RT:-1}" != 0 ] || return 0
	for t in /proc/"$pid"/task/*; do
		[ "${t##*/}" = "$pid" ] || [ "$(cat "$t/comm" 2>/dev/null)" = cnuas-vnic-rx ] || continue
		chrt -f -p 1 "${t##*/}" >/dev/null 2>&1 || return 0
	done
}

# The CPU the frame movers share (the switch, and every QEMU thread but the
# vCPUs) when CNUAS_LAB_IO_CPU names one; nothing (no pinning) by default
# and on a one-CPU host. A wake-up between threads on one CPU is a
# run-queue insert; across CPUs it is an IPI, which on this nested host
# costs some 10..20 us per frame hop (an RT thread's wake-up goes to the
# CPU running the lowest priority, so our SCHED_FIFO movers wake each
# other across CPUs). Pinned, ib_send_lat went from 80 to 60..65 us here,
# but ib_read_bw and ib_send_bw fell by a fifth to a third: the switch
# and the receiving RX thread then share one CPU. So it is a knob for
# latency work, not the default.
io_cpu() {
	local c=${CNUAS_LAB_IO_CPU:-none} ncpu
	ncpu=$(nproc)
	[ "$c" != none ] && [ "$ncpu" -ge 2 ] || return 1
	case $c in
	*[!0-9]* | '') die "CNUAS_LAB_IO_CPU=$c: want a CPU number or none" ;;
	esac
	[ "$c" -lt "$ncpu" ] || die "CNUAS_LAB_IO_CPU=$c: this host has CPUs 0..$((ncpu - 1))"
	echo "$c"
}

# Pin every thread of a process (not its vCPUs) to the I/O CPU; threads
# it starts later (hot-plugged devices, QEMU's workers) inherit that.
pin_io_threads() {
	local pid=$1 cpu t
	cpu=$(io_cpu) || return 0
	for t in /proc/"$pid"/task/*; do
		case $(cat "$t/comm" 2>/dev/null) in
		"CPU "*) ;;
		*) taskset -p -c "$cpu" "${t##*/}" >/dev/null 2>&1 || return 0 ;;
		esac
	done
}

switch_start() {
	local pid args=()
	pid=$(pidfile_pid "$LAB_DIR/switch.pid")
	pid_alive "$pid" && die "switch already running (pid $pid)"
	mapfile -t args <"$LAB_DIR/switch.cmd"
	rm -f "$LAB_DIR/switch.sock" "$LAB_DIR/switch.ctl"
	echo "---- switch start $(date -u +%T)" >>"$LAB_DIR/switch.log"
	spawn "$LAB_DIR/switch.pid" "$LAB_DIR/switch.log" "${args[@]}"
	for _ in $(seq 100); do
		if [ -S "$LAB_DIR/switch.sock" ] && [ -S "$LAB_DIR/switch.ctl" ]; then
			raise_io_priority "$(pidfile_pid "$LAB_DIR/switch.pid")"
			pin_io_threads "$(pidfile_pid "$LAB_DIR/switch.pid")"
			return 0
		fi
		pid_alive "$(pidfile_pid "$LAB_DIR/switch.pid")" || break
		sleep 0.1
	done
	tail -n 20 "$LAB_DIR/switch.log" >&2
	die "switch did not come up (log: $LAB_DIR/switch.log)"
}

switch_kill() {
	local pid
	pid=$(pidfile_pid "$LAB_DIR/switch.pid")
	pid_alive "$pid" || { say "switch not running"; return 0; }
	echo "---- switch kill $(date -u +%T)" >>"$LAB_DIR/switch.log"
	stop_pidfile "$LAB_DIR/switch.pid" KILL
}

lab_down() {
	local f pid rc=0
	[ -d "$LAB_DIR" ] || { say "nothing to stop"; echo "$LAB_DIR"; return 0; }
	# Guests first (they hold switch connections), then the switch.
	# Signal all guests at once: each QEMU takes a moment to exit.
	for f in "$LAB_DIR"/node*.pid; do
		[ -e "$f" ] || continue
		pid=$(pidfile_pid "$f")
		pid_alive "$pid" && kill -TERM -- -"$pid" 2>/dev/null || true
	done
	for f in "$LAB_DIR"/node*.pid; do
		[ -e "$f" ] || continue
		stop_pidfile "$f" TERM || rc=1
	done
	for f in "$LAB_DIR"/switch.pid "$LAB_DIR"/site*.pid; do
		[ -e "$f" ] || continue
		stop_pidfile "$f" TERM || rc=1
	done
	for f in "$LAB_DIR"/*.pid; do
		[ -e "$f" ] || continue
		stop_pidfile "$f" KILL || rc=1
	done
	sites_down
	rm -f "$LAB_DIR/lab.env"
	rm -rf "$LAB_DIR"/node*/
	say "stopped; logs in $LAB_DIR"
	echo "$LAB_DIR"
	return $rc
}

lab_status() {
	local n pid total img
	lab_load
	total=$(lab_total)
	echo "lab $LAB_DIR: $NODES cnuas + $VIRTIO_NODES virtio + $RXE_NODES rxe node(s), link layer $LINK_LAYER, MTU $MTU, accel $ACCEL, init $INIT, virtio netdev $VIRTIO_NETDEV${SHM_RING:+, shared-memory rings}"
	echo "qemu $QEMU"
	pid=$(pidfile_pid "$LAB_DIR/switch.pid")
	if pid_alive "$pid"; then echo "switch: running (pid $pid)"; else echo "switch: stopped"; fi
	for n in $(seq 0 $((total - 1))); do
		pid=$(pidfile_pid "$LAB_DIR/node$n.pid")
		img=IMAGE_$n
		if pid_alive "$pid"; then
			echo "node$n: running (pid $pid, $(node_kind "$n"), $(node_distro "$n"), ${!img:-})"
		else
			echo "node$n: stopped"
		fi
	done
}
