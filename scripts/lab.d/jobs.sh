# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# shellcheck shell=bash
# `scripts/lab job NODE start|wait|kill NAME ...`: a command that runs
# detached in a guest, outlives the exec that started it, and is waited
# for later, its output and exit status read back (sourced by
# scripts/lab). Its state lives in the guest (/run/lab-jobs/NAME: out,
# rc, pid), so a job keeps running across `scripts/lab migrate` of that
# guest and is found in the new QEMU; a wait goes on through the moment
# the agent is unreachable while the guest moves.
#   job NODE start NAME -- CMD [ARGS...]   start CMD (argv, no shell; a
#                                          job of that name is replaced)
#   job NODE wait NAME SECONDS             wait for it: print its output,
#                                          exit with its status; 255 when
#                                          it did not end in SECONDS (or
#                                          there is no such job)
#   job NODE kill NAME                     end it (its process group)

JOBS=/run/lab-jobs

job_exec() { # job_exec NODEDIR SCRIPT ARGS...: sh -c SCRIPT in the guest
	local nd=$1 script=$2
	shift 2
	timeout -k 5 60 "$PY" "$LABD/labctl.py" exec "$nd" -- sh -c "$script" sh "$@" </dev/null
}

lab_job() {
	local node=$1 op=${2:-} name=${3:-} nd limit t0 rc
	[ -n "$name" ] && [[ $name =~ ^[A-Za-z0-9._-]+$ ]] || die "job: NAME of letters, digits, . _ -"
	lab_load
	nd=$(node_dir "$node") || exit 255
	shift 3
	case $op in
	start)
		[ "${1:-}" = -- ] && [ $# -ge 2 ] || die "job NODE start NAME -- CMD [ARGS...]"
		shift
		# setsid: its own session, so the agent's end of this exec does
		# not end it, and kill reaches all it started.
		job_exec "$nd" 'd='"$JOBS"'/$1; shift
			[ ! -s "$d/pid" ] || kill -- -"$(cat "$d/pid")" 2>/dev/null
			rm -rf "$d" && mkdir -p "$d" || exit 1
			setsid sh -c '\''"$@" >"$0/out" 2>&1; echo $? >"$0/rc.new"; mv "$0/rc.new" "$0/rc"'\'' "$d" "$@" \
				</dev/null >/dev/null 2>&1 &
			echo $! >"$d/pid"' "$name" "$@" ||
			die "job $name: cannot start it on node$node"
		;;
	wait)
		limit=${1:-}
		[[ $limit =~ ^[0-9]+$ ]] || die "job NODE wait NAME SECONDS"
		t0=$(date +%s)
		# 0: ended; 1: running; anything else (the agent gone while the
		# guest moves, a lab failure): ask again.
		until job_exec "$nd" '[ -s '"$JOBS"'/$1/rc ] || { [ -d '"$JOBS"'/$1 ] && exit 1; exit 2; }' "$name" >/dev/null 2>&1; rc=$?; [ $rc = 0 ]; do
			[ $rc != 2 ] || { echo "lab: job $name: no such job on node$node" >&2; exit 255; }
			[ $(($(date +%s) - t0)) -lt "$limit" ] || {
				echo "lab: job $name on node$node still running after $limit s" >&2
				exit 255
			}
			sleep 0.5
		done
		job_exec "$nd" 'cat '"$JOBS"'/$1/out; exit "$(cat '"$JOBS"'/$1/rc)"' "$name"
		;;
	kill)
		job_exec "$nd" 'd='"$JOBS"'/$1; [ ! -s "$d/pid" ] || kill -- -"$(cat "$d/pid")" 2>/dev/null; true' "$name"
		;;
	*) die "job NODE start|wait|kill NAME ..." ;;
	esac
}
