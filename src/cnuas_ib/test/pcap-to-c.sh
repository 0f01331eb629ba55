#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
#
# Turn RoCEv2 frames of a pcap into C test vectors for wire_test.c, with
# the header fields as tshark decodes them (an independent decoder):
#   test/pcap-to-c.sh FILE.pcap NAME FRAME_NO [NAME FRAME_NO]... >>rxe-frames.h
set -euo pipefail
pcap=$1
shift
fields=(-e infiniband.bth.opcode -e infiniband.bth.p_key -e infiniband.bth.destqp
	-e infiniband.bth.a -e infiniband.bth.psn -e infiniband.bth.padcnt
	-e infiniband.deth.q_key -e infiniband.deth.srcqp -e infiniband.invariant.crc)
while [ $# -ge 2 ]; do
	name=$1 no=$2
	shift 2
	IFS=, read -r op pkey qpn ack psn pad qkey sqpn icrc < <(tshark -r "$pcap" \
		-Y "frame.number == $no" -T fields -E separator=, "${fields[@]}" 2>/dev/null)
	[ -n "$op" ] || { echo "pcap-to-c: frame $no of $pcap is not RoCE" >&2; exit 1; }
	# Only the frame's own bytes: further tabs (reassembled data) follow,
	# each after a "Name (N bytes):" line.
	hex=$(tshark -r "$pcap" -Y "frame.number == $no" -x 2>/dev/null |
		awk '/^[0-9a-f][0-9a-f][0-9a-f][0-9a-f]  / { print; next } NR > 1 { exit }' |
		sed -n 's/^[0-9a-f]\{4\}  \(\([0-9a-f][0-9a-f] \)*\).*/\1/p' | tr -s ' \n' ' ')
	# tshark prints booleans as True/False or 1/0 depending on its version.
	case $ack in True | 1) ack=1 ;; *) ack=0 ;; esac
	echo "static const unsigned char ${name}_bytes[] = {"
	# shellcheck disable=SC2086 # one word per byte
	printf '0x%s,\n' $hex | paste -d' ' - - - - - - - - - - - - | sed 's/^/\t/; s/ *$//'
	printf '};\n\n'
	printf 'static const struct rxe_frame %s = {\n' "$name"
	printf '\t.name = "%s", .bytes = %s_bytes,\n' "$name" "$name"
	printf '\t.len = sizeof(%s_bytes),\n' "$name"
	printf '\t.opcode = %u, .pkey = %u, .qpn = %u, .ackreq = %u, .psn = %u, .pad = %u,\n' \
		"$op" "$pkey" "$((qpn))" "$ack" "$psn" "$pad"
	printf '\t.qkey = %u, .sqpn = %u, .icrc = %u,\n};\n\n' "$((${qkey:-0}))" "$((${sqpn:-0}))" "$((icrc))"
done
