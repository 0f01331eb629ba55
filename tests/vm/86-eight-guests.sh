#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# Eight guests, all to all. Its own lab of eight small cnuas guests
# (`scripts/lab up --nodes 8 --mem 512` in $LAB_DIR-eight while the
# group's guests are paused, as test 77 does). Seven rounds: in round k
# every node i sends a verified RC transfer (cnuas-xfer, every byte
# checked) to node (i + k) % 8 while it receives one from node (i - k) % 8,
# so each of the 56 ordered pairs carries one transfer and every node sends
# and receives at once. Then the switch, quiet again, must account for
# every frame: no drop of any kind, nothing held or queued, and
#   sum(tx) = sum(rx) + flood * (ports - 2)
# (a flooded frame is received once and sent to every other port). Per
# round it prints the aggregate rate. CNUAS_EIGHT=0 skips the test;
# EIGHT_MIB sets the size of each transfer (default 8 MiB).
# timeout: 1500
. "$(dirname "$0")/lib.sh"
[ "${CNUAS_EIGHT:-1}" != 0 ] || skip "CNUAS_EIGHT=0"
need_eth
N=8 MIB=${EIGHT_MIB:-8}
side_lab eight --nodes $N --mem 512 --mtu "$MTU"
echo "PASS lab of eight: up in $SIDE_BOOT s (the group's ${#SIDE_PAUSED[@]} guests paused)"
OUT=$LAB_DIR/pair-out/86-eight
mkdir -p "$OUT"

pids=()
for n in $(seq 0 $((N - 1))); do
	(rdma_ready "$n") >"$OUT/ready$n" 2>&1 &
	pids+=($!)
done
for n in $(seq 0 $((N - 1))); do
	wait "${pids[$n]}" || { cat "$OUT/ready$n"; fail "node$n: RDMA device not ready"; }
done

total=0
for k in $(seq 1 $((N - 1))); do
	port=$((18700 + k))
	rx=() tx=()
	for i in $(seq 0 $((N - 1))); do
		lsh -t 300 "$i" "cnuas-xfer -d cnuas_0 -p $port -s $MIB -c 64 -w 8 -T 240" >"$OUT/r$k.rx$i" 2>&1 &
		rx+=($!)
	done
	for i in $(seq 0 $((N - 1))); do
		wait_for 60 lsh -t 10 "$i" "$(listening $port)" ||
			fail "round $k: node$i's receiver is not listening"
	done
	t0=$(date +%s%N)
	for i in $(seq 0 $((N - 1))); do
		lsh -t 300 "$i" "cnuas-xfer -d cnuas_0 -p $port -s $MIB -c 64 -w 8 -T 240 $(ip_of $(((i + k) % N)))" >"$OUT/r$k.tx$i" 2>&1 &
		tx+=($!)
	done
	for i in $(seq 0 $((N - 1))); do
		wait "${tx[$i]}" || { cat "$OUT/r$k.tx$i"; fail "round $k: node$i -> node$(((i + k) % N)) failed"; }
	done
	for i in $(seq 0 $((N - 1))); do
		wait "${rx[$i]}" || { cat "$OUT/r$k.rx$i"; fail "round $k: node$i's receiver failed"; }
		grep -q 'all data verified' "$OUT/r$k.rx$i" ||
			{ cat "$OUT/r$k.rx$i"; fail "round $k: node$i did not verify what node$(((i - k + N) % N)) sent"; }
	done
	ms=$((($(date +%s%N) - t0) / 1000000))
	[ "$ms" -gt 0 ] || ms=1
	total=$((total + N * MIB))
	echo "PASS round $k: 8 transfers of $MIB MiB (node i -> node i+$k), every byte verified, $((N * MIB * 1000 / ms)) MiB/s together"
done
echo "PASS all to all: 56 ordered pairs, $total MiB verified"

# The switch's books, once nothing moves any more.
sleep 2
"$LAB" switch -- --json show >"$OUT/switch.json" || fail "cannot read the switch"
res=$(/usr/bin/python3 - "$OUT/switch.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
ports = [p for p in d["ports"] if p["state"] != "closing"]
s = {}
for p in ports:
    for k, v in p["counters"].items():
        if isinstance(v, int):
            s[k] = s.get(k, 0) + v
drops = {k: v for k, v in s.items() if (k.startswith("drop_") or k.startswith("fault_")) and v}
held = sum(p.get("held", 0) or 0 for p in ports) + sum(p.get("queue", 0) or 0 for p in ports)
want = s["rx_frames"] + s["flood"] * (len(ports) - 2)
print("ports=%d rx=%d tx=%d flood=%d want_tx=%d held=%d bp_paused=%d drops=%s"
      % (len(ports), s["rx_frames"], s["tx_frames"], s["flood"], want, held,
         s.get("bp_paused", 0), drops or "none"))
sys.exit(0 if not drops and not held and s["tx_frames"] == want and len(ports) == 8 else 1)
EOF
) || { echo "$res"; fail "the switch's counters do not add up"; }
echo "PASS switch counters add up: $res"
exit 0
