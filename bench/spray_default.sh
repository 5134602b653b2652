#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What spraying costs where there is one path (issue 33):
# two namespaces joined by one veth pair (no ECMP, no router), one RC
# QP's ib_write_bw -s 65536 (Gbit/s) with UROCE_PATHS=1 (its own port)
# and with UROCE_PATHS=8 (8 ports once the peer is known to be uroce),
# alternating, and one iperf3 TCP stream as the peer,
# all in the same run; medians of RUNS with the 1-minute load average.
# RATE (e.g. 300mbit) shapes the link a->b with tbf (burst 32k, latency
# 20 ms); unset, the CPU is the bottleneck. Then the descriptors: the
# client's open files while ib_write_bw runs QPS QPs (-q), both settings.
#   bench/spray_default.sh [RUNS] [QPS]    (root; default 5, 128)
set -uo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-5} QPS=${2:-128} B=build/bin RATE=${RATE:-}
[[ $(id -u) == 0 ]] || { echo "spray_default.sh: needs root (ip netns)" >&2; exit 1; }
a=uroce-spd-$$-a b=uroce-spd-$$-b
tmp=$(mktemp -d)
cleanup() { ip netns del $a 2>/dev/null; ip netns del $b 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
ip netns add $a && ip netns add $b || exit 1
for ns in $a $b; do ip -n $ns link set lo up; done
ip -n $a link add v0a type veth peer name v0b netns $b
ip -n $a addr add 10.97.0.1/24 dev v0a; ip -n $b addr add 10.97.0.2/24 dev v0b
ip -n $a link set v0a up; ip -n $b link set v0b up
[[ -n $RATE ]] && ip netns exec $a tc qdisc add dev v0a root tbf rate "$RATE" burst 32k latency 20ms
for i in $(seq 50); do
	[[ $(ip netns exec $a cat /sys/class/net/v0a/operstate) == up &&
	   $(ip netns exec $b cat /sys/class/net/v0b/operstate) == up ]] && break
	sleep 0.1
done
source bench/lib.sh # median
load() { cut -d' ' -f1 /proc/loadavg; }
port=19800
bw() { # QPS env... -> Gbit/s
	local q=$1 r
	shift
	port=$((port + 1))
	ip netns exec $b env UROCE_IP=10.97.0.2 "$@" timeout 60 $B/uroce-run ib_write_bw -x 0 -q "$q" -s 65536 -n 1500 -F --report_gbits -p $port >"$tmp/server.out" 2>&1 &
	sleep 0.5
	r=$(ip netns exec $a env UROCE_IP=10.97.0.1 "$@" timeout 60 $B/uroce-run ib_write_bw -x 0 -q "$q" -s 65536 -n 1500 -F --report_gbits -p $port 10.97.0.2 2>"$tmp/client.err" |
		awk '$1 == 65536 {print $4}')
	wait
	echo "${r:-nan}"
}
fds() { # env... -> the most descriptors the client held while it ran QPS QPs
	port=$((port + 1))
	ip netns exec $b env UROCE_IP=10.97.0.2 "$@" timeout 60 $B/uroce-run ib_write_bw -x 0 -q "$QPS" -s 65536 -D 3 -F -p $port >/dev/null 2>&1 &
	sleep 0.5
	ip netns exec $a env UROCE_IP=10.97.0.1 "$@" timeout 60 $B/uroce-run ib_write_bw -x 0 -q "$QPS" -s 65536 -D 3 -F -p $port 10.97.0.2 >/dev/null 2>&1 &
	local c=$! max=0 n p
	while kill -0 $c 2>/dev/null; do
		for p in $(ip netns pids $a); do
			n=$(ls /proc/$p/fd 2>/dev/null | wc -l)
			((n > max)) && max=$n
		done
		sleep 0.2
	done
	wait
	echo $max
}
tcp() {
	port=$((port + 1))
	ip netns exec $b iperf3 -s -1 -B 10.97.0.2 -p $port >/dev/null 2>&1 &
	sleep 0.3
	ip netns exec $a iperf3 -c 10.97.0.2 -p $port -t 3 -l 64K -J 2>/dev/null |
		/usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/1e9)'
	wait
}
for ((r = 1; r <= RUNS; r++)); do
	l=$(load); bw 1 UROCE_PATHS=1 >>"$tmp/one"; echo "$l" >>"$tmp/l_one"
	l=$(load); bw 1 UROCE_PATHS=8 >>"$tmp/def"; echo "$l" >>"$tmp/l_def"
	l=$(load); tcp >>"$tmp/tcp"; echo "$l" >>"$tmp/l_tcp"
	echo "run $r: paths=1 $(tail -1 "$tmp/one"); paths=8 $(tail -1 "$tmp/def"); tcp $(tail -1 "$tmp/tcp") (load $l)" >&2
done
f1=$(fds UROCE_PATHS=1); f8=$(fds UROCE_PATHS=8)
m() { median <"$tmp/$1"; }
rng() { sort -g "$tmp/$1" | sed -n '1p;$p' | paste -sd- ; }
echo "| $(lscpu | sed -n 's/^Model name: *//p' | head -n1), $(nproc) CPUs; one veth pair${RATE:+ shaped to $RATE (tbf)}, no ECMP; medians of $RUNS, alternating | Gbit/s | range | load (1 min) |"
echo "|---|---:|---:|---:|"
echo "| uroce, one RC QP, ib_write_bw -s 65536, UROCE_PATHS=1 | $(m one) | $(rng one) | $(m l_one) |"
echo "| uroce, the same, UROCE_PATHS=8 | $(m def) | $(rng def) | $(m l_def) |"
echo "| iperf3, 1 TCP stream, 64 KiB writes | $(m tcp) | $(rng tcp) | $(m l_tcp) |"
echo
echo "Descriptors of the client while ib_write_bw -q $QPS ran: UROCE_PATHS=1 $f1, UROCE_PATHS=8 $f8."
