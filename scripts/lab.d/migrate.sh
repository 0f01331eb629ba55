# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# shellcheck shell=bash
# `scripts/lab migrate NODE`: live-migrate a guest to a fresh QEMU process
# on the same switch (sourced by scripts/lab).
#
# The new QEMU gets the node's command line (from /proc) plus `-incoming
# defer -S`; it listens under other names first (the old QEMU unlinks its
# socket paths when it quits), which then become the node's own, so every
# other lab command finds it once the old one is gone. The disk is a
# -snapshot overlay of the shared image: block migration sends what the
# guest wrote (mirrored over NBD into the new process's overlay). After `completed` the old QEMU quits; the new one runs
# (`cont`) only once the switch has removed the old port, so the guest's
# first frames find its pinned MAC free. Prints the migration's downtime
# and total time (query-migrate) and the time until the guest ran again.

mig_say() { echo "lab: migrate: $*" >&2; }

# The switch control socket of the node's site.
mig_ctl() {
	local s
	s=$(site_of "$1")
	if [ "$s" = 0 ]; then echo "$LAB_DIR/switch.ctl"; else echo "$LAB_DIR/site$s.ctl"; fi
}

# True while the switch has a port whose peer is process $2.
mig_port_of() {
	"$VSCTL" --ctl "$1" --json show 2>/dev/null | "$PY" -c '
import json, sys
s = json.load(sys.stdin)
sys.exit(0 if any(p.get("peer") == "pid " + sys.argv[1] for p in s["ports"]) else 1)' "$2"
}

mig_ms() { echo $(($(date +%s%N) / 1000000)); }

lab_migrate() {
	local n=$1 nd old new args=() a i ctl out t0 t_done t_run blk=--blk k moved=()
	lab_load
	nd=$(node_dir "$n") || exit 255
	old=$(pidfile_pid "$LAB_DIR/node$n.pid")
	pid_alive "$old" || die "node$n is not running"
	ctl=$(mig_ctl "$n")
	# A virtio-net node's dgram port is a socket path the new process
	# cannot bind while the old one holds it.
	[ "$(node_kind "$n")" = cnuas ] || die "node$n is a $(node_kind "$n") node: only cnuas nodes migrate"
	mapfile -d '' args <"/proc/$old/cmdline" || die "cannot read the command line of node$n (pid $old)"
	[ ${#args[@]} -gt 1 ] || die "empty command line of node$n (pid $old)"
	# The console log is a file: append to it, do not truncate.
	for i in "${!args[@]}"; do
		a=${args[$i]}
		case $a in
		file,id=con,*) [[ $a == *append=on* ]] || args[i]=$a,append=on ;;
		-incoming) die "node$n is itself still waiting for a migration" ;;
		esac
	done
	# A disk without snapshot=on is shared by both processes: no block migration.
	printf '%s\n' "${args[@]}" | grep -q 'snapshot=on' || blk=

	t0=$(mig_ms)
	# The new QEMU listens (QMP, agent ports, a CnuasLink listener) under
	# other names: the old one unlinks its paths when it exits. They take
	# the node's own names once it is gone.
	moved=()
	for i in "${!args[@]}"; do
		a=${args[$i]}
		for k in "$nd/qmp.sock" "$nd"/agent*.sock "$LAB_DIR"/gpulink*.sock; do
			case $a in
			*"$k,"*)
				args[i]=${a/"$k,"/"${k%/*}/incoming.${k##*/},"}
				moved+=("$k")
				;;
			esac
		done
	done
	[ "${moved[0]:-}" = "$nd/qmp.sock" ] || die "node$n: no QMP socket in its command line"
	rm -f "$nd/migrate.sock" "$LAB_DIR/node$n.pid.new"
	echo "---- $(date -u +%T) node$n: incoming migration from pid $old" >>"$LAB_DIR/node$n.qemu.log"
	spawn "$LAB_DIR/node$n.pid.new" "$LAB_DIR/node$n.qemu.log" "${args[@]}" -incoming defer -S
	new=$(pidfile_pid "$LAB_DIR/node$n.pid.new")
	mig_undo() {
		stop_pidfile "$LAB_DIR/node$n.pid.new" KILL || true
		local f
		for f in "${moved[@]}"; do rm -f "${f%/*}/incoming.${f##*/}"; done
		"$PY" "$LABD/labctl.py" qmp "$nd/qmp.sock" '{"execute":"cont"}' >/dev/null 2>&1 || true
	}
	for i in $(seq 300); do
		[ -S "$nd/incoming.qmp.sock" ] && break
		pid_alive "$new" || break
		sleep 0.1
	done
	if ! [ -S "$nd/incoming.qmp.sock" ] || ! pid_alive "$new"; then
		tail -n 5 "$LAB_DIR/node$n.qemu.log" >&2
		mig_undo
		die "node$n: the new QEMU did not start"
	fi
	mig_say "node$n: pid $old -> pid $new${blk:+ (RAM and the disk writes)}"
	if ! out=$("$PY" "$LABD/labctl.py" migrate --timeout "${CNUAS_LAB_MIGRATE_TIMEOUT:-600}" \
		${blk:+--blk "$nd/nbd.sock"} "$nd/qmp.sock" "$nd/incoming.qmp.sock" "unix:$nd/migrate.sock"); then
		echo "$out" >&2
		mig_undo
		die "node$n: migration failed; the guest stays in pid $old"
	fi
	t_done=$(mig_ms)
	# The old QEMU was told to quit; make sure it is gone.
	for i in $(seq 100); do
		pid_alive "$old" || break
		sleep 0.05
	done
	pid_alive "$old" && { kill -KILL -- -"$old" 2>/dev/null || kill -KILL "$old" 2>/dev/null || true; }
	for i in $(seq 100); do
		pid_alive "$old" || break
		sleep 0.05
	done
	pid_alive "$old" && die "node$n: old QEMU $old does not exit"
	rm -f "$nd/migrate.sock" "$nd/nbd.sock"
	for k in "${moved[@]}"; do
		mv -f "${k%/*}/incoming.${k##*/}" "$k" || die "node$n: cannot move ${k%/*}/incoming.${k##*/} into place"
	done
	# Its switch port closes with it; the new guest runs once it is gone.
	for i in $(seq 200); do
		mig_port_of "$ctl" "$old" || break
		sleep 0.05
	done
	mig_port_of "$ctl" "$old" && mig_say "node$n: the switch still has the old port of pid $old"
	mv "$LAB_DIR/node$n.pid.new" "$LAB_DIR/node$n.pid"
	"$PY" "$LABD/labctl.py" qmp "$nd/qmp.sock" '{"execute":"cont"}' >/dev/null ||
		die "node$n: cont failed on the new QEMU (pid $new)"
	t_run=$(mig_ms)
	# The scheduling the lab gives every guest (up.sh).
	raise_io_priority "$new"
	pin_io_threads "$new"
	if [ "${CNUAS_LAB_VCPU_NICE:-10}" != 0 ]; then
		for k in /proc/"$new"/task/*; do
			case $(cat "$k/comm" 2>/dev/null) in
			"CPU "*) renice -n "${CNUAS_LAB_VCPU_NICE:-10}" -p "${k##*/}" >/dev/null || true ;;
			esac
		done
	fi
	echo "$out" | "$PY" -c '
import json, sys
st = json.loads(sys.stdin.read())
ram = st.get("ram", {})
blk = st.get("disk", {})
print("node%s migrated: downtime %s ms, total %s ms (setup %s ms), RAM %.1f MiB sent%s; guest running again %s ms after the end" % (
    sys.argv[1], st.get("downtime", "?"), st.get("total-time", "?"), st.get("setup-time", "?"),
    ram.get("transferred", 0) / 1048576.0,
    ", disk %.1f MiB" % (blk.get("transferred", 0) / 1048576.0) if blk else "",
    sys.argv[2]))
print("MIGRATE downtime_ms=%s total_ms=%s resume_ms=%s" % (st.get("downtime", -1), st.get("total-time", -1), sys.argv[2]))
' "$n" $((t_run - t_done))
	echo "---- $(date -u +%T) node$n: running in pid $new after $((t_run - t0)) ms" >>"$LAB_DIR/node$n.qemu.log"
}
