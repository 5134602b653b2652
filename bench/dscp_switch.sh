#!/usr/bin/env bash
# A switch that queues by DSCP (issue 45): hosts a and b send through a
# switch namespace to host c, whose port is shaped to RATE by htb. a runs
# a latency-critical ping-pong in class EF (ib_write_lat --tclass=184,
# DSCP 46), b a bulk transfer in the default class (ib_write_bw -D BULK).
# c runs both servers, each on an address of its own. Two qdiscs on the
# switch's port towards c, alternating, REPS times each, in one run:
#   fifo  htb, one class at RATE, one pfifo of LIMIT packets: a plain
#         shaped port, everything in one queue
#   dscp  htb, EF (u32 on the TOS byte, DSCP 46 whatever the ECN bits)
#         prio 0 with EF_RATE guaranteed and RATE ceiling, the rest prio 1
#         with RATE - EF_RATE guaranteed; a pfifo of LIMIT packets each
# and, first in each repetition, the ping-pong on an idle port.
# Prints one line per run and the medians; writes OUT.csv.
#   bench/dscp_switch.sh [OUT] (default bench/results/dscp_switch)
# Env: RATE (300mbit), EF_RATE (50mbit), LIMIT (500), REPS (3),
#      BULK (10 s), ITERS (200 ping-pongs under load, 1000 idle)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-bench/results/dscp_switch}
RATE=${RATE:-300mbit} EF_RATE=${EF_RATE:-50mbit} LIMIT=${LIMIT:-500}
REPS=${REPS:-3} BULK=${BULK:-10} ITERS=${ITERS:-200}
B=$PWD/build/bin
[ "$(id -u)" = 0 ] || { echo "dscp_switch.sh: needs root (namespaces)"; exit 1; }
pfx=ur-dscp-$$
tmp=$(mktemp -d)
cleanup() {
	for n in a b c sw; do ip netns del "$pfx-$n" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
for n in a b c sw; do ip netns add "$pfx-$n" || exit 1; ip -n "$pfx-$n" link set lo up; done
ip netns exec "$pfx-sw" sysctl -qw net.ipv4.ip_forward=1
i=1
for n in a b c; do # 10.94.i.2 on host n, 10.94.i.1 on the switch
	ip -n "$pfx-sw" link add "s$n" type veth peer name eth0 netns "$pfx-$n" &&
	ip -n "$pfx-sw" addr add "10.94.$i.1/24" dev "s$n" &&
	ip -n "$pfx-$n" addr add "10.94.$i.2/24" dev eth0 &&
	ip -n "$pfx-sw" link set "s$n" up && ip -n "$pfx-$n" link set eth0 up &&
	ip -n "$pfx-$n" route add default via "10.94.$i.1" || exit 1
	i=$((i + 1))
done
ip -n "$pfx-c" addr add 10.94.3.3/24 dev eth0 # the bulk server's address
A=10.94.1.2 C1=10.94.3.2 C2=10.94.3.3
nsx() { local n=$1; shift; ip netns exec "$pfx-$n" "$@"; }
export UROCE_SHM=0

qdisc() { # fifo|dscp
	nsx sw tc qdisc del dev sc root 2>/dev/null
	nsx sw tc qdisc add dev sc root handle 1: htb default 20 || exit 1
	if [ "$1" = fifo ]; then
		nsx sw tc class add dev sc parent 1: classid 1:20 htb rate "$RATE" ceil "$RATE" quantum 1514
	else
		nsx sw tc class add dev sc parent 1: classid 1:1 htb rate "$RATE" ceil "$RATE" quantum 1514
		nsx sw tc class add dev sc parent 1:1 classid 1:10 htb rate "$EF_RATE" ceil "$RATE" prio 0 quantum 1514
		nsx sw tc class add dev sc parent 1:1 classid 1:20 htb \
			rate "$(( ${RATE%mbit} - ${EF_RATE%mbit} ))mbit" ceil "$RATE" prio 1 quantum 1514
		nsx sw tc qdisc add dev sc parent 1:10 handle 10: pfifo limit "$LIMIT"
		# TOS 0xb8 = DSCP 46 (EF), ECN bits masked off (RFC 3168)
		nsx sw tc filter add dev sc parent 1: protocol ip prio 1 u32 \
			match ip tos 0xb8 0xfc flowid 1:10 || exit 1
	fi
	nsx sw tc qdisc add dev sc parent 1:20 handle 20: pfifo limit "$LIMIT" || exit 1
}

port=19100
lat() { # iters -> "median p99 elapsed_s"
	port=$((port + 1))
	nsx c env UROCE_IP=$C1 timeout 120 "$B/uroce-run" ib_write_lat -p $port -n "$1" --tclass=184 >"$tmp/ls" 2>&1 &
	local s=$! t0 t1
	sleep 0.5
	t0=$(date +%s.%N)
	nsx a env UROCE_IP=$A timeout 120 "$B/uroce-run" ib_write_lat -p $port -n "$1" --tclass=184 $C1 >"$tmp/lc" 2>&1
	t1=$(date +%s.%N)
	wait $s
	# columns: bytes iters min max typical avg stdev 99% 99.9%
	awk -v e="$(echo "$t1 - $t0" | bc)" '$1 == 2 && NF >= 8 {print $5, $8, e; f = 1} END {if (!f) print "fail fail", e}' "$tmp/lc"
}

csv=$OUT.csv
echo "rep,qdisc,median_us,p99_us,lat_s,bulk_gbps,ef_pkts,bulk_drops" >"$csv"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$REPS"); do
	qdisc fifo
	read -r m p e <<<"$(lat 1000)"
	echo "rep $r idle       median $m us  p99 $p us"
	echo "$r,idle,$m,$p,$e,,," >>"$csv"
	for q in fifo dscp; do
		qdisc $q
		port=$((port + 1))
		nsx c env UROCE_IP=$C2 timeout 120 "$B/uroce-run" ib_write_bw -p $port -s 65536 -D "$BULK" --report_gbits >"$tmp/bs" 2>&1 &
		bs=$!
		sleep 0.5
		nsx b env UROCE_IP=10.94.2.2 timeout 120 "$B/uroce-run" ib_write_bw -p $port -s 65536 -D "$BULK" --report_gbits $C2 >"$tmp/bc" 2>&1 &
		bc=$!
		sleep 2 # the queue fills
		read -r m p e <<<"$(lat "$ITERS")"
		wait $bc; wait $bs
		g=$(awk '$1 == 65536 {print $4}' "$tmp/bc")
		ef=$(nsx sw tc -s class show dev sc | awk '/class htb 1:10 /{f = 1} f && /Sent/ {print $2; exit}')
		dr=$(nsx sw tc -s qdisc show dev sc | awk '/qdisc pfifo 20:/{f = 1} f && /dropped/ {gsub(",", "", $7); print $7; exit}')
		echo "rep $r bulk $q median $m us  p99 $p us  (ping-pongs took $e s)  bulk ${g:-fail} Gbit/s  EF bytes ${ef:--}  bulk queue drops ${dr:-?}"
		echo "$r,$q,$m,$p,$e,${g:-fail},${ef:-},${dr:-}" >>"$csv"
	done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
# medians over the repetitions
awk -F, 'NR > 1 { k = $2; M[k] = M[k] " " $3; P[k] = P[k] " " $4; G[k] = G[k] " " $6 }
function med(s,   a, n, i, j, t) { n = split(s, a, " "); for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t } return n ? a[int((n + 1) / 2)] : "-" }
END { for (k in M) printf "median of reps: %-5s latency median %s us, p99 %s us, bulk %s Gbit/s\n", k, med(M[k]), med(P[k]), med(G[k]) }' "$csv"
