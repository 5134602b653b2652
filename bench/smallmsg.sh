#!/usr/bin/env bash
# Small messages (issue 37): 64 B RC WRITE message rate and 8 B latency of
# two uroce builds, before and after, with the peers, all interleaved
# round by round (this shared 2-core machine drifts between loaded and
# quiet states for minutes; each round measures every row once).
#   bench/smallmsg.sh BEFORE_DIR [AFTER_DIR] [ROUNDS]
# A build dir holds bin/ (uroce-run), lib/ and bench/lat-1thread, e.g. a
# copy of build/ made before a change (cp -a build/{bin,lib} DIR; and
# build/bench/lat-1thread to DIR/bench). Default AFTER_DIR: build.
# Rows: ib_write_bw -s 64 message rate (one WR per post, and -l 32: 32 per
# post), with the requester's send system calls and the responder's ACKs
# (uroce counters) and the responder's CPU seconds; the same with four QPs
# (-q 4, 4 x 50 000) with the requester's retransmission timeouts
# (tx_timeouts: none are due on loopback); ib_send_lat -s 8;
# ib_write_lat -s 8;
# lat-1thread (one thread, both ends: the CPU path of a message); peers:
# sockperf ping-pong busy-poll UDP, UCX over TCP (ucp_put_bw 64 B message
# rate, tag_lat 8 B), plain UDP in one thread. Medians; loopback only.
# BIG=1 adds ib_write_bw -s 1M (Gbit/s) against iperf3 with 1 MiB writes
# (issue 37's third target), each round.
set -uo pipefail
cd "$(dirname "$0")/.."
A=${1:?before build dir}
B=${2:-build}
ROUNDS=${3:-5}
export UCX_TLS=tcp UCX_NET_DEVICES=lo
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# The next port, counted in a file: np runs in $(...), where a variable's
# increment is lost (every run took the same port, and a server could meet
# the previous run's TIME_WAIT).
echo $((40000 + $$ % 10000)) >"$out/port"
np() { local p=$(($(cat "$out/port") + 1)); echo $p >"$out/port"; echo $p; }
median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) {print "nan"; exit} m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; print m}'; }

# ib_write_bw -s 64 of build $1 (extra perftest args after it):
# "Mmsg/s requester_sends responder_acks responder_cpu_s"
wbw() {
	local d=$1 p s; shift; p=$(np)
	UROCE_STATS=1 UROCE_IP=127.0.0.2 timeout 60 /usr/bin/time -f "CPU %U %S" \
		"$d/bin/uroce-run" ib_write_bw -p $p -x 0 -s 64 -n ${N:-200000} -F "$@" >"$out/srv" 2>&1 &
	s=$!
	sleep 0.5
	UROCE_STATS=1 UROCE_IP=127.0.0.3 timeout 60 "$d/bin/uroce-run" ib_write_bw -p $p -x 0 -s 64 \
		-n ${N:-200000} -F "$@" 127.0.0.2 >"$out/cli" 2>&1
	wait $s
	local rate cc sc cpu
	rate=$(grep -oE '^ 64[[:space:]]+[0-9]+[[:space:]]+[0-9.]+[[:space:]]+[0-9.]+[[:space:]]+[0-9.]+' "$out/cli" | awk '{print $5}')
	cc=$(grep -o 'tx_connected=[0-9]*' "$out/cli" | head -1 | cut -d= -f2)
	sc=$(grep -o 'tx_connected=[0-9]*' "$out/srv" | head -1 | cut -d= -f2)
	cpu=$(awk '/^CPU/ {print $2 + $3}' "$out/srv")
	to=$(grep -o 'tx_timeouts=[0-9]*' "$out/cli" | head -1 | cut -d= -f2)
	echo "${rate:-nan} ${cc:-nan} ${sc:-nan} ${cpu:-nan} ${to:-0}"
}
# perf_lat TOOL BUILD -> typical one-way us of TOOL -s 8 (ib_send_lat,
# ib_write_lat); the client starts once the server listens (a fixed 0.5 s
# was too short at load 15 and above: the row came out empty)
perf_lat() {
	local p s i; p=$(np)
	UROCE_IP=127.0.0.2 timeout 60 "$2/bin/uroce-run" $1 -p $p -x 0 -s 8 -n 20000 -F >/dev/null 2>&1 &
	s=$!
	for i in $(seq 100); do
		ss -Hltn "sport = :$p" 2>/dev/null | grep -q . && break
		sleep 0.05
	done
	UROCE_IP=127.0.0.3 timeout 60 "$2/bin/uroce-run" $1 -p $p -x 0 -s 8 -n 20000 -F 127.0.0.2 2>&1 |
		awk '$1=="8" {print $5}'
	wait $s
}
one() { UROCE_IP=127.0.0.14 timeout 60 "$1/bin/uroce-run" "$1/bench/lat-1thread" | awk '{print $1}'; }
udp_one() { timeout 60 "$B/bench/lat-1thread" --udp -a 127.0.0.14 | awk '{print $1}'; }
sockperf_busy() {
	local p s; p=$(np)
	sockperf server -i 127.0.0.1 -p $p --nonblocked >/dev/null 2>&1 &
	s=$!
	sleep 0.3
	sockperf pp -i 127.0.0.1 -p $p -t 2 -m 14 --nonblocked 2>/dev/null | awk '/percentile 50.000/ {print $NF}'
	kill $s 2>/dev/null; wait $s 2>/dev/null
}
ucx() { # test size iters -> "Final:" line
	local p; p=$(np)
	timeout 60 ucx_perftest -p $p >/dev/null 2>&1 &
	sleep 0.5
	timeout 60 ucx_perftest 127.0.0.1 -p $p -t "$1" -s "$2" -n "$3" 2>/dev/null | awk '/^Final:/'
	wait
}
big() { # build -> Gbit/s of ib_write_bw -s 1M
	local p s; p=$(np)
	UROCE_IP=127.0.0.2 timeout 60 "$1/bin/uroce-run" ib_write_bw -p $p -x 0 -s 1048576 -n 3000 -F >/dev/null 2>&1 &
	s=$!
	sleep 0.5
	UROCE_IP=127.0.0.3 timeout 60 "$1/bin/uroce-run" ib_write_bw -p $p -x 0 -s 1048576 -n 3000 -F --report_gbits 127.0.0.2 2>&1 |
		awk '$1=="1048576" {print $4}'
	wait $s
}
iperf_1m() {
	local p; p=$(np)
	iperf3 -s -1 -B 127.0.0.1 -p $p >/dev/null 2>&1 &
	sleep 0.3
	iperf3 -c 127.0.0.1 -p $p -t 3 -l 1M -J 2>/dev/null |
		python3 -c 'import json,sys; print("%.2f" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/1e9))'
	wait
}
ucx_rate() { ucx ucp_put_bw 64 200000 | awk '{printf "%.4f\n", $9 / 1e6}'; } # msg/s overall -> M
ucx_lat() { ucx tag_lat 8 20000 | awk '{print $3}'; }

declare -A R
add() { R[$1]+="$2 "; }
for ((r = 0; r < ROUNDS; r++)); do
	echo "round $((r + 1))/$ROUNDS, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
	add load "$(cut -d' ' -f1 /proc/loadavg)"
	for side in a b; do
		d=$A; [ $side = b ] && d=$B
		read -r x y z w v <<<"$(wbw "$d")"
		add wbw_$side "$x"; add sends_$side "$y"; add acks_$side "$z"; add cpu_$side "$w"
		read -r x y z w <<<"$(wbw "$d" -l 32)"
		add wbl_$side "$x"
		read -r x y z w v <<<"$(N=50000 wbw "$d" -q 4)"
		add wq4_$side "$x"; add to_$side "$v"
		add lat_$side "$(perf_lat ib_send_lat "$d")"
		add wlat_$side "$(perf_lat ib_write_lat "$d")"
		add one_$side "$(one "$d")"
		[ "${BIG:-0}" = 1 ] && add big_$side "$(big "$d")"
	done
	[ "${BIG:-0}" = 1 ] && add tcp_1m "$(iperf_1m)"
	add ucx_rate "$(ucx_rate)"
	add ucx_lat "$(ucx_lat)"
	add udp_lat "$(sockperf_busy)"
	add udp_one "$(udp_one)"
done
med() { printf '%s\n' ${R[$1]} | grep -E '^[0-9.]+$' | median; }
{
	echo "# small messages, $(date -u +%F), $(git rev-parse --short HEAD)"
	echo
	echo "before: $A, after: $B; $ROUNDS interleaved rounds; load average (1 min) at each round: ${R[load]}"
	echo
	echo "| row | before | after | peer |"
	echo "|---|---:|---:|---:|"
	echo "| ib_write_bw -s 64, M msg/s | $(med wbw_a) | $(med wbw_b) | UCX tcp put_bw 64 B: $(med ucx_rate) |"
	echo "| ib_write_bw -s 64 -l 32, M msg/s | $(med wbl_a) | $(med wbl_b) | |"
	echo "| ib_write_bw -s 64 -q 4, M msg/s | $(med wq4_a) | $(med wq4_b) | |"
	echo "| -q 4: requester tx_timeouts (sum over the rounds) | $(printf '%s\n' ${R[to_a]} | awk '{s+=$1} END {print s+0}') | $(printf '%s\n' ${R[to_b]} | awk '{s+=$1} END {print s+0}') | |"
	echo "| requester send calls per 200k | $(med sends_a) | $(med sends_b) | |"
	echo "| responder ACKs per 200k | $(med acks_a) | $(med acks_b) | |"
	echo "| responder CPU s per 200k | $(med cpu_a) | $(med cpu_b) | |"
	echo "| ib_send_lat -s 8, us | $(med lat_a) | $(med lat_b) | sockperf busy UDP: $(med udp_lat); UCX tag_lat: $(med ucx_lat) |"
	echo "| ib_write_lat -s 8, us | $(med wlat_a) | $(med wlat_b) | |"
	echo "| lat-1thread, us | $(med one_a) | $(med one_b) | UDP 1 thread: $(med udp_one) |"
	[ "${BIG:-0}" = 1 ] &&
		echo "| ib_write_bw -s 1M, Gbit/s | $(med big_a) | $(med big_b) | iperf3 1 MiB writes: $(med tcp_1m) |"
	echo
	echo "raw runs, in round order:"
	echo
	for k in wbw_a wbw_b wbl_a wbl_b wq4_a wq4_b to_a to_b sends_a sends_b acks_a acks_b cpu_a cpu_b lat_a lat_b wlat_a wlat_b one_a one_b ucx_rate ucx_lat udp_lat udp_one big_a big_b tcp_1m; do
		echo "- $k: ${R[$k]:-}"
	done
}
