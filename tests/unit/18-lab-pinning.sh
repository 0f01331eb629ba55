#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
#
# The lab's thread pinning (scripts/lab.d/common.sh, CNUAS_LAB_IO_CPU) on
# real host processes: a bad value stops `lab up` before anything starts,
# no value pins nothing, a CPU number pins every thread of a process but
# those named like QEMU's vCPUs ("CPU n/TCG").
# Exit: 0 pass, 77 skip (one CPU, or no taskset), anything else fail.

set -u
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
command -v taskset >/dev/null || { echo "SKIP: no-taskset: no taskset (util-linux)"; exit 77; }
[ "$(nproc)" -ge 2 ] || { echo "SKIP: one-cpu: one CPU, nothing to pin"; exit 77; }
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "PASS: $*"; }

# shellcheck source=../../scripts/lab.d/common.sh
. "$REPO/scripts/lab.d/common.sh"
last=$(($(nproc) - 1))
PY=/usr/bin/python3

labdir=$(mktemp -d)
for bad in x -1 1.5 "$((last + 1))"; do
	out=$(CNUAS_LAB_IO_CPU=$bad CNUAS_LAB_DIR=$labdir "$REPO/scripts/lab" up --nodes 1 2>&1) &&
		fail "lab up took CNUAS_LAB_IO_CPU=$bad"
	case $out in
	*"CNUAS_LAB_IO_CPU=$bad"*) ok "CNUAS_LAB_IO_CPU=$bad refused: ${out##*error: }" ;;
	*) fail "CNUAS_LAB_IO_CPU=$bad: no clear error (got: $out)" ;;
	esac
	case $out in *"starting switch"*) fail "lab up started before refusing $bad" ;; esac
done

# A process with two threads: the main one and one renamed "CPU 0/TCG".
"$PY" -c '
import threading, time, ctypes
def vcpu():
    ctypes.CDLL(None).prctl(15, b"CPU 0/TCG", 0, 0, 0)
    time.sleep(60)
threading.Thread(target=vcpu, daemon=True).start()
time.sleep(60)' &
pid=$!
trap 'kill $pid 2>/dev/null; rm -rf "$labdir"' EXIT
for _ in $(seq 50); do [ "$(ls /proc/$pid/task | wc -l)" -ge 2 ] && break; sleep 0.1; done
allowed() { awk '/^Cpus_allowed_list/ {print $2}' "/proc/$pid/task/$1/status"; }
vtid=
for t in /proc/$pid/task/*; do [ "$(cat "$t/comm")" = "CPU 0/TCG" ] && vtid=${t##*/}; done
[ -n "$vtid" ] || { fail "test process has no vCPU-named thread"; exit 1; }
before=$(allowed "$pid")

unset CNUAS_LAB_IO_CPU
pin_io_threads "$pid"
CNUAS_LAB_IO_CPU='' pin_io_threads "$pid"
[ "$(allowed "$pid")" = "$before" ] && ok "CNUAS_LAB_IO_CPU unset or empty: nothing pinned" ||
	fail "pinned without CNUAS_LAB_IO_CPU: $(allowed "$pid")"
CNUAS_LAB_IO_CPU=none pin_io_threads "$pid"
[ "$(allowed "$pid")" = "$before" ] && ok "CNUAS_LAB_IO_CPU=none: nothing pinned" ||
	fail "pinned with none: $(allowed "$pid")"
CNUAS_LAB_IO_CPU=$last pin_io_threads "$pid"
[ "$(allowed "$pid")" = "$last" ] && ok "CNUAS_LAB_IO_CPU=$last: main thread on CPU $last" ||
	fail "main thread allowed $(allowed "$pid"), want $last"
[ "$(allowed "$vtid")" = "$before" ] && ok "vCPU thread left alone ($before)" ||
	fail "vCPU thread pinned to $(allowed "$vtid")"
[ $fails = 0 ]
