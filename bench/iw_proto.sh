#!/usr/bin/env bash
# One verbs API, three protocols (issue 36): RC WRITE bandwidth at 64 KiB
# and 1 MiB and 8 B WRITE latency with unmodified perftest (-R: rdma_cm)
# on iWARP (UROCE_IWARP=1: RDMAP/DDP/MPA over the kernel's TCP), RoCEv2
# (UDP) and shared memory (UROCE_SHM=1, RoCEv2 packets through shared
# lanes), each beside its own transport's floor measured in the same round:
# iperf3 TCP with the same write size (iWARP), sockperf TCP and UDP
# ping-pong (latency), and the seeds' "under 5 %" overhead claim read
# against them. Rounds interleave every row (the shared machine drifts);
# medians over rounds. Loopback, server 127.0.0.2, client 127.0.0.3.
#   bench/iw_proto.sh [ROUNDS] [BUILD]   (default 3, build)
# Prints a markdown table; bench/results/2026-12-06-iw-proto.md holds one run.
set -uo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
B=${2:-build}
out=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$out"' EXIT
port=$((30000 + $$ % 10000))
# The next port, in $port, counted in a file: the measurements run in
# $(...) subshells, where a variable's increment is lost, and a TCP server
# on the port of the previous run's TIME_WAIT fails to bind.
echo $port >"$out/port"
np() { port=$(($(cat "$out/port") + 1)); echo $port >"$out/port"; }
median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) {print "nan"; exit} m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; print m}'; }

# perf PROTO TEST SIZE -> Gbit/s (bw) or typical usec (lat)
perf() {
	local proto=$1 t=$2 sz=$3 p env s args
	np; p=$port
	case $proto in
	iwarp) env="UROCE_IWARP=1" ;;
	roce) env="UROCE_SHM=0" ;;
	shm) env="UROCE_SHM=1" ;;
	esac
	if [[ $t == ib_write_bw ]]; then
		args="-R -p $p -s $sz -D 2 --report_gbits"
	else
		args="-R -p $p -s $sz -n 5000"
	fi
	env $env UROCE_IP=127.0.0.2 timeout 60 "$B/bin/uroce-run" $t $args >"$out/srv" 2>&1 &
	s=$!
	pids+=($s)
	sleep 0.5
	env $env UROCE_IP=127.0.0.3 timeout 60 "$B/bin/uroce-run" $t $args 127.0.0.2 >"$out/cli" 2>&1
	wait $s
	if [[ $t == ib_write_bw ]]; then
		awk -v sz=$sz '$1==sz && NF>=5 {print $4}' "$out/cli" | tail -1
	else
		awk -v sz=$sz '$1==sz && NF>=5 {print $5}' "$out/cli" | tail -1
	fi
}
iperf_tcp() { # write size -> Gbit/s, one stream, 3 s
	local p s; np; p=$port
	iperf3 -s -1 -B 127.0.0.1 -p $p >/dev/null 2>&1 &
	s=$!
	pids+=($s)
	sleep 0.3
	iperf3 -c 127.0.0.1 -p $p -t 3 -l "$1" -J 2>/dev/null |
		/usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/1e9)'
	wait $s
}
sockperf_pp() { # extra flags -> median half round trip, usec
	local p s; np; p=$port
	sockperf server -i 127.0.0.1 -p $p $1 >/dev/null 2>&1 &
	s=$!
	pids+=($s)
	sleep 1 # a TCP client needs the server listening (UDP does not)
	sockperf pp -i 127.0.0.1 -p $p -t 3 -m 14 $1 2>/dev/null | awk '/percentile 50.000/ {print $NF}'
	kill $s 2>/dev/null; wait $s 2>/dev/null
}

declare -A R
add() { R[$1]+="${2:-nan} "; }
loads=""
for ((r = 0; r < ROUNDS; r++)); do
	echo "round $((r + 1))/$ROUNDS, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
	loads+="$(cut -d' ' -f1 /proc/loadavg) "
	for proto in iwarp roce shm; do
		add "$proto.w64k" "$(perf $proto ib_write_bw 65536)"
		add "$proto.w1m" "$(perf $proto ib_write_bw 1048576)"
		add "$proto.lat" "$(perf $proto ib_write_lat 8)"
	done
	add tcp64k "$(iperf_tcp 64K)"
	add tcp1m "$(iperf_tcp 1M)"
	add tcplat "$(sockperf_pp --tcp)"
	add udplat "$(sockperf_pp "")"
done
m() { echo ${R[$1]} | tr ' ' '\n' | grep -v -e '^$' -e nan | median; }
all() { echo ${R[$1]}; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0 && a != "nan") printf "%.2f", a / b; else print "n/a" }'; }

echo "load average (1 min) at each round: $loads"
echo
echo "| row | iWARP | RoCEv2 (UDP) | shared memory | floor (same round) | iWARP / floor |"
echo "|---|---|---|---|---|---|"
echo "| WRITE 64 KiB, Gbit/s | $(m iwarp.w64k) | $(m roce.w64k) | $(m shm.w64k) | iperf3 TCP -l 64K: $(m tcp64k) | $(ratio "$(m iwarp.w64k)" "$(m tcp64k)") |"
echo "| WRITE 1 MiB, Gbit/s | $(m iwarp.w1m) | $(m roce.w1m) | $(m shm.w1m) | iperf3 TCP -l 1M: $(m tcp1m) | $(ratio "$(m iwarp.w1m)" "$(m tcp1m)") |"
echo "| WRITE 8 B latency, us (typical) | $(m iwarp.lat) | $(m roce.lat) | $(m shm.lat) | sockperf TCP: $(m tcplat); UDP: $(m udplat) | $(ratio "$(m iwarp.lat)" "$(m tcplat)") |"
echo
echo "every round:"
for k in iwarp.w64k roce.w64k shm.w64k tcp64k iwarp.w1m roce.w1m shm.w1m tcp1m iwarp.lat roce.lat shm.lat tcplat udplat; do
	echo "- $k: $(all $k)"
done
