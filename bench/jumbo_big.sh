#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# RC WRITE 1 MiB on loopback (issue 37's third target) with and without
# jumbo packets, against iperf3, interleaved round by round: ib_write_bw -s
# 1M of build BEFORE (defaults), of build AFTER with its defaults, with
# UROCE_JUMBO=0 and with UROCE_SR=0; iperf3 with 1 MiB writes and with its
# default writes (128 KiB). Medians in Gbit/s and the 1-minute load average
# at each round.
#   bench/jumbo_big.sh BEFORE_DIR [AFTER_DIR] [ROUNDS]
set -uo pipefail
cd "$(dirname "$0")/.."
A=${1:?before build dir}
B=${2:-build}
ROUNDS=${3:-5}
port=$((42000 + $$ % 9000))
median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) {print "nan"; exit} m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; print m}'; }
big() { # build [env...] -> Gbit/s of ib_write_bw -s 1M
	local d=$1 s; shift
	port=$((port + 1))
	env "$@" UROCE_IP=127.0.0.2 timeout 60 "$d/bin/uroce-run" ib_write_bw -p $port -x 0 -s 1048576 -n 3000 -F >/dev/null 2>&1 &
	s=$!
	sleep 0.5
	env "$@" UROCE_IP=127.0.0.3 timeout 60 "$d/bin/uroce-run" ib_write_bw -p $port -x 0 -s 1048576 -n 3000 -F --report_gbits 127.0.0.2 2>&1 |
		awk '$1=="1048576" {print $4}'
	wait $s
}
iperf() { # [-l LEN] -> Gbit/s
	port=$((port + 1))
	iperf3 -s -1 -B 127.0.0.1 -p $port >/dev/null 2>&1 &
	sleep 0.3
	iperf3 -c 127.0.0.1 -p $port -t 3 "$@" -J 2>/dev/null |
		python3 -c 'import json,sys; print("%.2f" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/1e9))'
	wait
}
declare -A R
add() { R[$1]+="$2 "; }
for ((r = 0; r < ROUNDS; r++)); do
	add load "$(cut -d' ' -f1 /proc/loadavg)"
	add before "$(big "$A")"
	add after "$(big "$B")"
	add after_j0 "$(big "$B" UROCE_JUMBO=0)"
	add after_sr0 "$(big "$B" UROCE_SR=0)"
	add tcp_1m "$(iperf -l 1M)"
	add tcp_def "$(iperf)"
done
med() { printf '%s\n' ${R[$1]} | grep -E '^[0-9.]+$' | median; }
echo "# ib_write_bw -s 1M, $(date -u +%F), $(git rev-parse --short HEAD); before: $A, after: $B; $ROUNDS rounds; load at each round: ${R[load]}"
echo
echo "| row | Gbit/s (median) | runs |"
echo "|---|---:|---|"
echo "| before (defaults) | $(med before) | ${R[before]} |"
echo "| after (defaults) | $(med after) | ${R[after]} |"
echo "| after, UROCE_JUMBO=0 | $(med after_j0) | ${R[after_j0]} |"
echo "| after, UROCE_SR=0 | $(med after_sr0) | ${R[after_sr0]} |"
echo "| iperf3, 1 MiB writes | $(med tcp_1m) | ${R[tcp_1m]} |"
echo "| iperf3, default writes | $(med tcp_def) | ${R[tcp_def]} |"
