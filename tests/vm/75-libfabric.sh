#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# libfabric (Debian's libfabric-bin) on cnuas: `fi_info -p verbs` lists
# cnuas_0 with FI_EP_MSG (the verbs provider's RC over RDMA CM) and
# FI_EP_RDM (verbs;ofi_rxm), then fi_pingpong with data checks (-c)
# between cnuas nodes 0 and 1 (CNUAS_PAIR="A B" for others), one way (a
# pingpong moves the data both ways, and the two ends are the same
# device): MSG and RDM endpoints, MSG over IPv6, RDM in tagged mode, DGRAM
# (UD). With an rxe node (CNUAS_RXE_PAIR="A B" for others) MSG and RDM
# go between cnuas and Soft-RoCE too, each end as either side. Both ends must exit 0 and print
# the last size's line with every transfer acknowledged.
#
# Soft-RoCE: rdma_rxe's max_cqe is 32767, less than the CQ that ofi_rxm
# asks for with its default universe size of 256 peers (about 64 Ki
# entries), so its CQ create fails (EINVAL, fi_enable) on the rxe end
# before any traffic; the rxe end runs with FI_UNIVERSE_SIZE=64. cnuas
# offers 1 Mi CQEs and needs no setting.
# timeout: 900
# link-layers: eth ib
. "$(dirname "$0")/lib.sh"
rdma_pair CNUAS_PAIR "0 1"
PA=$A PB=$B
rdma_prep "$PA" "$PB"
CDA=$DA CDB=$DB
note "node$PA $DA <-> node$PB $DB, MTU $MTU"
rxe=
if [ -n "${CNUAS_RXE_PAIR:-}" ] || [ "$RXE_NODES" -ge 1 ]; then
	rdma_pair CNUAS_RXE_PAIR "$PA $(first_rxe_node)"
	RA=$A RB=$B
	rdma_prep "$RA" "$RB"
	rxe=1
	note "with Soft-RoCE: node$RA $DA <-> node$RB $DB"
fi

# fi_info: the verbs provider's view of each RDMA node (the first pair's).
for n in $PA $PB; do
	dev=$(rdma_dev "$n")
	out=$(lx -t 60 "$n" fi_info -p verbs 2>&1) || { echo "$out"; fail "node$n: fi_info -p verbs failed"; }
	# provider, domain, type of every entry, one line each.
	ents=$(awk '/^provider:/ { p = $2 } /^ *domain:/ { d = $2 } /^ *type:/ { print p, d, $2 }' <<<"$out" | sort -u)
	grep -qx "verbs $dev FI_EP_MSG" <<<"$ents" || { echo "$ents"; fail "node$n: fi_info -p verbs lists no FI_EP_MSG on $dev"; }
	grep -qx "verbs;ofi_rxm $dev FI_EP_RDM" <<<"$ents" || { echo "$ents"; fail "node$n: fi_info -p verbs lists no FI_EP_RDM (verbs;ofi_rxm) on $dev"; }
	echo "PASS fi_info node$n: $(tr '\n' ',' <<<"$ents" | sed 's/,$//; s/,/, /g')"
done

# One run at a time: fi_pingpong busy-polls its CQ, and two runs on one
# guest's single vCPU only slow each other down.
CNUAS_PAIR_JOBS=${CNUAS_PAIR_JOBS:-1}
# Control ports below the guests' ephemeral range (32768..60999): a port
# in it can still be held by a TIME_WAIT socket of an earlier test's
# client (fi_pingpong's bind() then fails with EADDRINUSE).
port=19600
cases=()
# ping NAME SERVER CLIENT ADDR DOMAIN_S DOMAIN_C ARGS: fi_pingpong ARGS,
# the client towards ADDR of the server, on the given domains, through
# its own control port.
ping_() {
	local name=$1 s=$2 c=$3 addr=$4 ds=$5 dc=$6 args=$7 envs='' envc=''
	[ "$(node_kind "$s")" = rxe ] && envs="env FI_UNIVERSE_SIZE=64"
	[ "$(node_kind "$c")" = rxe ] && envc="env FI_UNIVERSE_SIZE=64"
	cases+=("$name")
	pair_bg "$name" 240 "$s" "$c" "$(listening $port)" \
		"$envs fi_pingpong -B $port -d $ds $args" \
		"$envc fi_pingpong -P $port -d $dc $args $addr"
	port=$((port + 1))
}
# The cnuas pair one way (a pingpong moves the data both ways, and the
# two ends are the same device); with Soft-RoCE each end as either side.
pairs=("$PA $PB")
[ -z "$rxe" ] || pairs+=("$RA $RB" "$RB $RA")
for p in "${pairs[@]}"; do
	read -r s c <<<"$p"
	ds=$(rdma_dev "$s") dc=$(rdma_dev "$c")
	tag=$c-$s
	ping_ "msg.$tag" "$s" "$c" "$(ip_of "$s")" "$ds" "$dc" "-p verbs -e msg -c -I 50"
	ping_ "rdm.$tag" "$s" "$c" "$(ip_of "$s")" "$ds" "$dc" "-p 'verbs;ofi_rxm' -e rdm -c -I 50"
	# The rest on the cnuas pair only.
	[ "$(node_kind "$s")$(node_kind "$c")" = cnuascnuas ] && [ "$p" = "$PA $PB" ] || continue
	ping_ "rdm-tagged.$tag" "$s" "$c" "$(ip_of "$s")" "$ds" "$dc" "-p 'verbs;ofi_rxm' -e rdm -m tagged -c -I 50"
	ping_ "msg6.$tag" "$s" "$c" "$(ip6_of "$s")" "$ds" "$dc" "-6 -p verbs -e msg -c -I 50"
	ping_ "dgram.$tag" "$s" "$c" "$(ip_of "$s")" "$ds-dgram" "$dc-dgram" "-p verbs -e dgram -c -I 50"
done
pair_wait

# summary FILE: the lowest us/xfer of the sizes up to 4 KiB (the first
# size also pays for warming up) and the largest size's MB/s; fails
# unless every size shows #sent = #ack.
summary() {
	awk '$1 == "bytes" { hdr = 1; next }
		hdr && $1 ~ /^[0-9]+[km]?$/ {
			n++; if ($3 != "=" $2) bad = 1
			if (($1 ~ /^[0-9]+$/ || $1 == "1k" || $1 == "4k") && (lat == "" || $7 + 0 < lat + 0)) { lat = $7; ls = $1 }
			last = $1 " B " $6 " MB/s"
		}
		END { if (!n || bad) exit 1; print "best " lat " us/xfer (" ls " B), " last }' "$1"
}
bad=()
for c in "${cases[@]}"; do
	if pair_result "$c"; then
		want=1m
		case $c in dgram.*) want=4k ;; esac
		if line=$(summary "$PR_CLI") && grep -Eq "^$want " "$PR_CLI" && summary "$PR_SRV" >/dev/null; then
			echo "PASS $c: $line"
			continue
		fi
		echo "FAIL $c: not every size acknowledged, or no $want line"
	else
		echo "FAIL $c"
	fi
	pair_show 10
	bad+=("$c")
done
[ ${#bad[@]} -eq 0 ] || fail "${#bad[@]} of ${#cases[@]} fi_pingpong runs failed: ${bad[*]}"
echo "all ${#cases[@]} fi_pingpong runs passed (cnuas node$PA $CDA <-> node$PB $CDB${rxe:+; Soft-RoCE node$RB})"
