#!/usr/bin/env bash
# Spraying on a real two-link ECMP fabric (issue 33): two namespaces, two
# veth links each shaped to RATE by tbf, hosts' addresses on lo, one route
# over both links with the kernel hashing UDP ports. One RC QP's
# ib_write_bw -s 65536 (goodput in Gbit/s) with UROCE_SR=auto
# UROCE_PATHS=8 (selective repeat negotiated, sprayed over 8 ports;
# MP_SPRAY_ENV replaces those settings) against
# the same on its own port with go-back-N (UROCE_SR=0, a standard peer's
# view); iperf3 (one TCP stream, and 8 streams, which ECMP spreads)
# through the same fabric. Medians of RUNS, alternating; bytes per link
# show the split. MP_DEBUG=1 UROCE_STATS=1 prints each uroce run's
# selective-repeat counters. RATE2: link 2's rate (unequal links).
# B2=<bin dir> adds another build's sprayed runs (e.g. main's) in the
# same loop, alternating. The 1-minute load goes with each run.
#   bench/multipath.sh [RUNS] [RATE] [RATE2]   (default 3, 300mbit, RATE)
set -uo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-3} RATE=${2:-300mbit} B=build/bin B2=${B2:-}
RATE2=${3:-$RATE}
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || { echo "multipath.sh: RUNS must be a positive integer" >&2; exit 2; }
[[ $(id -u) == 0 ]] || { echo "multipath.sh: needs root (ip netns)" >&2; exit 1; }
a=uroce-mpb-$$-a b=uroce-mpb-$$-b
tmp=$(mktemp -d)
cleanup() { ip netns del $a 2>/dev/null; ip netns del $b 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
ip netns add $a && ip netns add $b || exit 1
for ns in $a $b; do ip -n $ns link set lo up; ip netns exec $ns sysctl -qw net.ipv4.fib_multipath_hash_policy=1; done
ip -n $a link add p1a type veth peer name p1b netns $b
ip -n $a link add p2a type veth peer name p2b netns $b
ip -n $a addr add 10.94.1.1/30 dev p1a; ip -n $b addr add 10.94.1.2/30 dev p1b
ip -n $a addr add 10.94.2.1/30 dev p2a; ip -n $b addr add 10.94.2.2/30 dev p2b
for l in p1a p2a; do ip -n $a link set $l up; ip -n $a link set $l mtu 1500; done
ip netns exec $a tc qdisc add dev p1a root tbf rate "$RATE" burst 32k latency 20ms
ip netns exec $a tc qdisc add dev p2a root tbf rate "$RATE2" burst 32k latency 20ms
for l in p1b p2b; do ip -n $b link set $l up; done
ip -n $a addr add 10.94.0.1/32 dev lo; ip -n $b addr add 10.94.0.2/32 dev lo
ip -n $a route add 10.94.0.2/32 nexthop via 10.94.1.2 dev p1a nexthop via 10.94.2.2 dev p2a
ip -n $b route add 10.94.0.1/32 nexthop via 10.94.1.1 dev p1b nexthop via 10.94.2.1 dev p2b

median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) {print "nan"; exit} m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; print m}'; }
txb() { ip -n $a -s -j link show "$1" | sed 's/.*"tx":{"bytes":\([0-9]*\).*/\1/'; }
port=18800
uroce_bw() { # bin env... -> "Gbit/s link1-bytes link2-bytes"
	local B=$1; shift
	port=$((port + 1))
	local t1 t2 r
	t1=$(txb p1a) t2=$(txb p2a)
	ip netns exec $b env UROCE_IP=10.94.0.2 "$@" timeout 60 $B/uroce-run ib_write_bw -x 0 -s 65536 -n 1500 -F --report_gbits -p $port >"$tmp/server.out" 2>&1 &
	sleep 0.5
	r=$(ip netns exec $a env UROCE_IP=10.94.0.1 "$@" timeout 60 $B/uroce-run ib_write_bw -x 0 -s 65536 -n 1500 -F --report_gbits -p $port 10.94.0.2 2>"$tmp/client.err" |
		awk '$1 == 65536 {print $4}')
	wait
	[[ -n ${MP_DEBUG:-} ]] && echo -n "[$B] " >&2 && grep -ho "\b\(tx_sr_nak\|rx_sr_spurious\|rx_duplicate\|tx_retransmit\|tx_timeouts\|rx_sr_nak\|rx_nak_seq\|mp_path_out\|mp_path_back\)=[0-9]*" "$tmp/server.out" "$tmp/client.err" | tr "\n" " " >&2
	echo "${r:-nan} $(( $(txb p1a) - t1 )) $(( $(txb p2a) - t2 ))"
}
iperf() { # streams -> Gbit/s
	port=$((port + 1))
	ip netns exec $b iperf3 -s -1 -B 10.94.0.2 -p $port >"$tmp/server.out" 2>&1 &
	sleep 0.3
	ip netns exec $a iperf3 -c 10.94.0.2 -B 10.94.0.1 -p $port -t 4 -P "$1" -l 64K -J 2>/dev/null |
		/usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/1e9)'
	wait
}
SPRAY=${MP_SPRAY_ENV:-UROCE_SR=auto UROCE_PATHS=8}
load() { cut -d" " -f1 /proc/loadavg; }
for ((r = 1; r <= RUNS; r++)); do
	l0=$(load)
	uroce_bw $B UROCE_SR=0 >>"$tmp/one"
	[[ -n $B2 ]] && uroce_bw "$B2" $SPRAY >>"$tmp/spray2"
	uroce_bw $B $SPRAY >>"$tmp/spray"
	iperf 1 >>"$tmp/tcp1"
	iperf 8 >>"$tmp/tcp8"
	echo "run $r (load $l0-$(load)): one $(tail -1 "$tmp/one");${B2:+ B2 spray $(tail -1 "$tmp/spray2");} spray $(tail -1 "$tmp/spray"); tcp1 $(tail -1 "$tmp/tcp1"); tcp8 $(tail -1 "$tmp/tcp8")" >&2
	echo "$l0" >>"$tmp/load"
done
col() { awk -v c=$2 '{print $c}' "$1" | median; }
echo "| $(lscpu | sed -n 's/^Model name: *//p' | head -n1), $(nproc) CPUs; links of $RATE and $RATE2 (tbf), ECMP on UDP ports; medians of $RUNS, load (1 min) at the start $(col "$tmp/load" 1) | Gbit/s | link 1 bytes | link 2 bytes |"
echo "|---|---:|---:|---:|"
echo "| uroce, one RC QP, ib_write_bw -s 65536, UROCE_SR=0 (one port, go-back-N) | $(col "$tmp/one" 1) | $(col "$tmp/one" 2) | $(col "$tmp/one" 3) |"
[[ -n $B2 ]] && echo "| $B2's uroce, $SPRAY | $(col "$tmp/spray2" 1) | $(col "$tmp/spray2" 2) | $(col "$tmp/spray2" 3) |"
echo "| uroce, the same, $SPRAY | $(col "$tmp/spray" 1) | $(col "$tmp/spray" 2) | $(col "$tmp/spray" 3) |"
echo "| iperf3, 1 TCP stream, 64 KiB writes | $(col "$tmp/tcp1" 1) | | |"
echo "| iperf3, 8 TCP streams, 64 KiB writes | $(col "$tmp/tcp8" 1) | | |"
