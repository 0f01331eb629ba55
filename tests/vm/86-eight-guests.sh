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
# (a flooded frame is received once and sent to every other port). It
# prints the aggregate rate of all rounds. CNUAS_EIGHT=0 opts out of the test;
# EIGHT_MIB sets the size of each transfer (default 4 MiB: 1,024 frames
# of 4 KiB each, a window (-w 8) many times over).
# timeout: 1500
. "$(dirname "$0")/lib.sh"
[ "${CNUAS_EIGHT:-1}" != 0 ] || skip_because opt-out "CNUAS_EIGHT=0"
need_eth
N=8 MIB=${EIGHT_MIB:-4}
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

# One agent call per node runs its seven rounds: a receiver, then its
# sender, which retries until the peer's receiver of that round listens,
# so the nodes keep in step without a call per transfer (spawning 24 agent
# calls a round under TCG took ten times longer than the data).
t0=$(date +%s%N)
pids=()
for i in $(seq 0 $((N - 1))); do
	peers=
	for k in $(seq 1 $((N - 1))); do peers+=" $(ip_of $(((i + k) % N)))"; done
	lsh -t 900 "$i" "rm -f /tmp/86.*; k=0
		for peer in$peers; do
			k=\$((k + 1)); port=\$((18700 + k))
			cnuas-xfer -d cnuas_0 -p \$port -s $MIB -c 64 -w 8 -T 240 >/tmp/86.r\$k.rx 2>&1 &
			rx=\$!
			cnuas-xfer -d cnuas_0 -p \$port -s $MIB -c 64 -w 8 -T 240 \$peer >/tmp/86.r\$k.tx 2>&1
			echo \$? >/tmp/86.r\$k.txrc
			wait \$rx; echo \$? >/tmp/86.r\$k.rxrc
		done" >"$OUT/node$i" 2>&1 &
	pids+=($!)
done
for i in $(seq 0 $((N - 1))); do
	wait "${pids[$i]}" || { cat "$OUT/node$i"; fail "node$i: its rounds did not finish"; }
done
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$ms" -gt 0 ] || ms=1
total=0
for i in $(seq 0 $((N - 1))); do
	lsh -t 60 "$i" 'for f in /tmp/86.r*; do echo "== $f"; cat "$f"; done' >"$OUT/results$i" ||
		fail "node$i: cannot read its results"
done
for k in $(seq 1 $((N - 1))); do
	for i in $(seq 0 $((N - 1))); do
		res() { sed -n "/^== \/tmp\/86.r$k.$1\$/,/^== /p" "$OUT/results$i"; }
		[ "$(res txrc | sed -n 2p)" = 0 ] ||
			{ res tx; fail "round $k: node$i -> node$(((i + k) % N)) failed"; }
		[ "$(res rxrc | sed -n 2p)" = 0 ] && res rx | grep -q 'all data verified' ||
			{ res rx; fail "round $k: node$i did not verify what node$(((i - k + N) % N)) sent"; }
	done
	total=$((total + N * MIB))
	echo "PASS round $k: 8 transfers of $MIB MiB (node i -> node i+$k), every byte verified"
done
echo "# all rounds in $ms ms: $((total * 1000 / ms)) MiB/s together"
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
