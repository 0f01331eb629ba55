# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# shellcheck shell=bash
# `scripts/lab migrate NODE`: live-migrate a guest to a fresh QEMU process
# on the same switch (sourced by scripts/lab).
#
# The new QEMU gets the node's command line (from /proc) plus `-incoming
# defer -S`; it listens under other names first (the old QEMU holds the
# node's paths until the migration is over), which then become the node's
# own, so every other lab command finds it once the old one is ended.
# The disk is a -snapshot overlay of the shared image: what the guest
# wrote is mirrored over NBD into the new process's overlay (drive-mirror
# sync=top), RAM and devices go over a unix socket. After `completed` the switch drops the
# old QEMU's port (cnuas-vsctl handover), so the guest's pinned MAC is free
# for the new port and, on an IB switch, the new port takes the old one's
# IB port over, Active; then the new QEMU runs (`cont`) and the old one is
# ended (SIGKILL: it is stopped and its disk overlay is an unlinked
# temporary file; its exit, a second or more here, is not waited for).
# labctl.py migrate does these steps on open QMP connections. Prints the
# migration's downtime and total time (query-migrate) and the time until
# the guest ran again. CNUAS_LAB_HANDOVER_HOLD=S waits S seconds between
# the hand-over and `cont` (a slow destination: VM test 97 reconnects
# another guest in that window).

mig_say() { echo "lab: migrate: $*" >&2; }

# The switch control socket of the node's site.
mig_ctl() {
	local s
	s=$(site_of "$1")
	if [ "$s" = 0 ]; then echo "$LAB_DIR/switch.ctl"; else echo "$LAB_DIR/site$s.ctl"; fi
}

mig_ms() { echo $(($(date +%s%N) / 1000000)); }

lab_migrate() {
	local n=$1 nd old new args=() a i ctl out t0 blk=--blk k moved=() tag
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
	# A node migrated before runs with what an earlier migration added:
	# take it out (-incoming defer, -S, the temporary socket names).
	local kept=()
	for i in "${!args[@]}"; do
		case ${args[$i]} in
		-S) continue ;;
		-incoming) [ "${args[$((i + 1))]}" = defer ] || die "node$n: unexpected -incoming ${args[$((i + 1))]}" ;;
		defer) [ "${args[$((i - 1))]}" = -incoming ] && continue ;;
		esac
		[ "${args[$i]}" = -incoming ] && continue
		kept+=("$(printf '%s' "${args[$i]}" | sed -E 's#/incoming-[0-9]+\.#/#g')")
	done
	args=("${kept[@]}")
	# The console log is a file: append to it, do not truncate.
	for i in "${!args[@]}"; do
		case ${args[$i]} in
		file,id=con,*) [[ ${args[$i]} == *append=on* ]] || args[i]=${args[$i]},append=on ;;
		esac
	done
	# A disk without snapshot=on is shared by both processes: no block migration.
	printf '%s\n' "${args[@]}" | grep -q 'snapshot=on' || blk=

	t0=$(mig_ms)
	# The new QEMU listens (QMP, agent ports, a CnuasLink listener) under
	# names of its own: the old one unlinks the paths it was started with
	# when it exits. They take the node's own names once it is gone.
	tag=incoming-$(date +%s%N)
	moved=()
	for i in "${!args[@]}"; do
		a=${args[$i]}
		for k in "$nd/qmp.sock" "$nd"/agent*.sock "$LAB_DIR"/gpulink*.sock; do
			case $a in
			*"$k,"*)
				args[i]=${a/"$k,"/"${k%/*}/$tag.${k##*/},"}
				moved+=("$k")
				;;
			esac
		done
	done
	[ "${moved[0]:-}" = "$nd/qmp.sock" ] || die "node$n: no QMP socket in its command line"
	rm -f "$nd/migrate.sock" "$LAB_DIR/node$n-incoming.pid"
	echo "---- $(date -u +%T) node$n: incoming migration from pid $old" >>"$LAB_DIR/node$n.qemu.log"
	spawn "$LAB_DIR/node$n-incoming.pid" "$LAB_DIR/node$n.qemu.log" "${args[@]}" -incoming defer -S
	new=$(pidfile_pid "$LAB_DIR/node$n-incoming.pid")
	mig_undo() {
		stop_pidfile "$LAB_DIR/node$n-incoming.pid" KILL || true
		local f
		for f in "${moved[@]}"; do rm -f "${f%/*}/$tag.${f##*/}"; done
		"$PY" "$LABD/labctl.py" qmp "$nd/qmp.sock" '{"execute":"cont"}' >/dev/null 2>&1 || true
	}
	for i in $(seq 300); do
		[ -S "$nd/$tag.qmp.sock" ] && break
		pid_alive "$new" || break
		sleep 0.1
	done
	if ! [ -S "$nd/$tag.qmp.sock" ] || ! pid_alive "$new"; then
		tail -n 5 "$LAB_DIR/node$n.qemu.log" >&2
		mig_undo
		die "node$n: the new QEMU did not start"
	fi
	mig_say "node$n: pid $old -> pid $new${blk:+ (RAM and the disk writes)}"
	if ! out=$("$PY" "$LABD/labctl.py" migrate --timeout "${CNUAS_LAB_MIGRATE_TIMEOUT:-600}" \
		${blk:+--blk "$nd/nbd.sock"} --src-pid "$old" --dst-pid "$new" --switch "$VSCTL" "$ctl" \
		${CNUAS_LAB_HANDOVER_HOLD:+--hold "$CNUAS_LAB_HANDOVER_HOLD"} \
		"$nd/qmp.sock" "$nd/$tag.qmp.sock" "unix:$nd/migrate.sock"); then
		echo "$out" >&2
		if pid_alive "$old"; then
			mig_undo
			die "node$n: migration failed; the guest stays in pid $old"
		fi
		die "node$n: the switch-over failed after the migration (new QEMU: pid $new, paused?)"
	fi
	rm -f "$nd/migrate.sock" "$nd/nbd.sock"
	# The old QEMU is killed: the new one's paths take the node's names.
	for k in "${moved[@]}"; do
		mv -f "${k%/*}/$tag.${k##*/}" "$k" || die "node$n: cannot move ${k%/*}/$tag.${k##*/} into place"
	done
	mv "$LAB_DIR/node$n-incoming.pid" "$LAB_DIR/node$n.pid"
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
r = st.get("lab-resume", {})
print("node%s migrated: downtime %s ms, total %s ms (setup %s ms), RAM %.1f MiB sent; guest running again %s ms after the end (disk mirror ended after %s ms, old switch port gone after %s ms; old QEMU killed after %s ms)" % (
    sys.argv[1], st.get("downtime", "?"), st.get("total-time", "?"), st.get("setup-time", "?"),
    ram.get("transferred", 0) / 1048576.0, r.get("cont", "?"), r.get("mirror", "?"), r.get("port", "?"), r.get("quit", "?")))
print("MIGRATE downtime_ms=%s total_ms=%s resume_ms=%s" % (st.get("downtime", -1), st.get("total-time", -1), r.get("cont", -1)))
' "$n"
	echo "---- $(date -u +%T) node$n: running in pid $new after $(($(mig_ms) - t0)) ms" >>"$LAB_DIR/node$n.qemu.log"
}
