#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Selective repeat and spraying against go-back-N on a path with a real
# round trip and random loss (issue 33): two namespaces joined by two
# veth links, each shaped to RATE by tbf (burst 32k, latency 20 ms) from
# a to b, the hosts' addresses on lo and one route over both links with
# the kernel hashing UDP ports (bench/multipath.sh's fabric). uroce-nfq
# in a holds every packet that comes back from b for DELAY_US (the round
# trip: only the answers' direction goes through user space, so the data
# direction keeps the kernel's rate), and iptables `statistic` in both
# namespaces drops LOSS % of what arrives on the links, both ways. One
# ur_integrity transfer a -> b (MIB MiB of SEND and WRITE, every byte
# verified) per run with
#   go-back-N            UROCE_SR=0 (one port: what a standard peer sees)
#   SR, one port         UROCE_PATHS=1
#   SR, sprayed          the default (8 ports once the peer is uroce)
# alternating, and one iperf3 TCP stream (64 KiB writes, 3 s) through the
# same links, delay and loss; medians of REPS with the 1-minute load.
#   bench/loss_delay.sh [BINDIR] [MIB] [REPS]    (root; 16, 3)
# RATE (300mbit), DELAY_US (1500), LOSSES ("0 1 5"); LOSS_DEBUG=1 prints
# each uroce run's loss counters (client's, then server's). B2=BINDIR (say
# a copy of main's build/bin) adds its SR one port in the same loop.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BIN=$(cd "${1:-$HERE/../build/bin}" && pwd)
MIB=${2:-16} REPS=${3:-3}
RATE=${RATE:-300mbit} DELAY_US=${DELAY_US:-1500} LOSSES=${LOSSES:-"0 1 5"}
[[ $(id -u) == 0 ]] || { echo "loss_delay.sh: needs root (ip netns)" >&2; exit 1; }
source "$HERE/lib.sh" # median
a=uroce-lsd-$$-a b=uroce-lsd-$$-b
tmp=$(mktemp -d)
nfq=
cleanup() {
	[[ -n $nfq ]] && kill "$nfq" 2>/dev/null && wait "$nfq" 2>/dev/null
	ip netns del $a 2>/dev/null; ip netns del $b 2>/dev/null; rm -rf "$tmp"
}
trap cleanup EXIT
ip netns add $a && ip netns add $b || exit 1
for ns in $a $b; do ip -n $ns link set lo up; ip netns exec $ns sysctl -qw net.ipv4.fib_multipath_hash_policy=1; done
ip -n $a link add p1a type veth peer name p1b netns $b
ip -n $a link add p2a type veth peer name p2b netns $b
ip -n $a addr add 10.98.1.1/30 dev p1a; ip -n $b addr add 10.98.1.2/30 dev p1b
ip -n $a addr add 10.98.2.1/30 dev p2a; ip -n $b addr add 10.98.2.2/30 dev p2b
for l in p1a p2a; do ip -n $a link set $l up; ip netns exec $a tc qdisc add dev $l root tbf rate "$RATE" burst 32k latency 20ms; done
for l in p1b p2b; do ip -n $b link set $l up; done
ip -n $a addr add 10.98.0.1/32 dev lo; ip -n $b addr add 10.98.0.2/32 dev lo
ip -n $a route add 10.98.0.2/32 nexthop via 10.98.1.2 dev p1a nexthop via 10.98.2.2 dev p2a
ip -n $b route add 10.98.0.1/32 nexthop via 10.98.1.1 dev p1b nexthop via 10.98.2.1 dev p2b
for i in $(seq 50); do
	[[ $( (ip netns exec $a cat /sys/class/net/p{1,2}a/operstate
	       ip netns exec $b cat /sys/class/net/p{1,2}b/operstate) | grep -c '^up$') == 4 ]] && break
	sleep 0.1
done
# The round trip: what b sends back waits DELAY_US in a.
ip netns exec $a "$BIN/uroce-nfq" --queue 0 --delay-us "$DELAY_US" </dev/null >"$tmp/nfq.log" 2>&1 &
nfq=$!
for i in $(seq 100); do grep -q "^uroce-nfq: ready" "$tmp/nfq.log" && break; sleep 0.05; done
ip netns exec $a iptables -t mangle -A PREROUTING -i p+ -j NFQUEUE --queue-num 0 --queue-bypass
loss() { # PCT: drop on arrival at both ends (raw, before the delay)
	local ns
	for ns in $a $b; do
		ip netns exec $ns iptables -t raw -F PREROUTING
		[[ $1 == 0 ]] || ip netns exec $ns iptables -t raw -A PREROUTING -i p+ \
			-m statistic --mode random --probability "$(awk -v p="$1" 'BEGIN { print p / 100 }')" -j DROP
	done
}
load() { cut -d' ' -f1 /proc/loadavg; }
port=20800
run() { # env... -> Mbit/s retransmits
	port=$((port + 1))
	local B=${RBIN:-$BIN}
	ip netns exec $b env UROCE_IP=10.98.0.2 UROCE_STATS=1 "$@" timeout 300 "$B/uroce-run" "$B/../tests/ur_integrity" -p $port \
		>"$tmp/s" 2>&1 &
	local spid=$! m r
	sleep 0.3
	ip netns exec $a env UROCE_IP=10.98.0.1 UROCE_STATS=1 "$@" timeout 300 "$B/uroce-run" "$B/../tests/ur_integrity" -p $port \
		-m "$MIB" --no-read 10.98.0.2 >"$tmp/c" 2>&1 || kill $spid 2>/dev/null
	wait $spid
	m=$(sed -n 's/.*= \([0-9.]*\) Mbit\/s.*all verified/\1/p' "$tmp/c")
	r=$(grep -o 'tx_retransmit=[0-9]*' "$tmp/c" | cut -d= -f2)
	[[ -n ${LOSS_DEBUG:-} ]] && echo "$* -> ${m:-FAIL}: $(grep -ho "\b\(tx_timeouts\|tx_sr_nak\|tx_sr_hole\|rx_sr_hole\|tx_sr_renak\|rx_sr_nak\|tx_sr_probe\|tx_reask\|rx_sr_spurious\|rx_duplicate\|tx_retransmit\|rx_nak_seq\|tx_nak_seq\|rx_sr_drop\)=[0-9]*" "$tmp/c" "$tmp/s" | tr '\n' ' ')" >&2
	echo "${m:-FAIL} ${r:-0}"
}
tcp() {
	port=$((port + 1))
	ip netns exec $b timeout 20 iperf3 -s -1 -B 10.98.0.2 -p $port >/dev/null 2>&1 &
	local spid=$!
	sleep 0.3
	ip netns exec $a timeout 20 iperf3 -c 10.98.0.2 -B 10.98.0.1 -p $port -t 3 -l 64K -J 2>/dev/null |
		/usr/bin/python3 -c 'import json,sys; print("%.1f" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 1e6))' 2>/dev/null || echo FAIL
	wait $spid # not uroce-nfq
}
echo "uroce under loss with a round trip: two links of $RATE (tbf) a -> b, ECMP on UDP ports, answers held $DELAY_US us (uroce-nfq), loss both ways; $MIB MiB SEND+WRITE per ur_integrity run (all verified), medians of $REPS; $(lscpu | sed -n 's/^Model name: *//p' | head -n1), $(nproc) CPUs"
echo
B2=${B2:+$(cd "$B2" && pwd)}
echo "| loss % | go-back-N Mbit/s | SR one port | SR sprayed (default) | sprayed / go-back-N | SR one port / go-back-N | retransmits GBN / SR1 / spray | TCP 1 stream Mbit/s | load (1 min) |${B2:+ SR one port, B2 | B2 / go-back-N |}"
echo "|---|---:|---:|---:|---:|---:|---|---:|---:|${B2:+---:|---:|}"
for l in $LOSSES; do
	loss "$l"
	for f in g1 r1 g2 r2 g3 r3 g4 t ld; do : >"$tmp/$f"; done
	for ((i = 0; i < REPS; i++)); do
		load >>"$tmp/ld"
		read -r m r < <(run UROCE_SR=0); [[ $m != FAIL ]] && echo "$m" >>"$tmp/g1"; echo "$r" >>"$tmp/r1"
		read -r m r < <(run UROCE_PATHS=1); [[ $m != FAIL ]] && echo "$m" >>"$tmp/g2"; echo "$r" >>"$tmp/r2"
		read -r m r < <(run); [[ $m != FAIL ]] && echo "$m" >>"$tmp/g3"; echo "$r" >>"$tmp/r3"
		[[ -n $B2 ]] && { read -r m r < <(RBIN=$B2 run UROCE_PATHS=1); [[ $m != FAIL ]] && echo "$m" >>"$tmp/g4"; }
		tcp >>"$tmp/t"
		echo "loss $l run $i: gbn $(tail -1 "$tmp/g1") sr1 $(tail -1 "$tmp/g2") spray $(tail -1 "$tmp/g3")${B2:+ B2 sr1 $(tail -1 "$tmp/g4")} tcp $(tail -1 "$tmp/t") load $(tail -1 "$tmp/ld")" >&2
	done
	g1=$(median <"$tmp/g1") g2=$(median <"$tmp/g2") g3=$(median <"$tmp/g3")
	q() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "nan" || b == "nan" || b == 0) print "-"; else printf "%.2f", a / b }'; }
	g4=$( [[ -n $B2 ]] && median <"$tmp/g4")
	echo "| $l | $g1 | $g2 | $g3 | $(q "$g3" "$g1") | $(q "$g2" "$g1") | $(median <"$tmp/r1") / $(median <"$tmp/r2") / $(median <"$tmp/r3") | $(grep -v FAIL "$tmp/t" | median) | $(median <"$tmp/ld") |${B2:+ $g4 | $(q "$g4" "$g1") |}"
done
