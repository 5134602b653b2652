#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Collectives over two rails vs one (issue 45, docs/collectives.md
# "Rails"): two namespaces joined by two veth pairs, each shaped to RATE by
# tbf at both ends, a 2-port uroce device on each side (UROCE_PORTS), one
# rank per namespace. uroce-coll-perf allreduce and alltoall (float32,
# SIZE bytes, 5 timed iterations after 1 warm-up) with UROCE_COLL_RAILS=one
# and =auto (both ports), alternating in each run; then iperf3 with one TCP
# stream per rail at once over the same rails, the line rate's peer.
# Medians of RUNS; the bytes each rail carried in the two-rail runs.
#   bench/rails_coll.sh [RUNS] [RATE] [SIZE]   (default 3, 300mbit, 8M)
set -uo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-3} RATE=${2:-300mbit} SIZE=${3:-8M} B=build/bin
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || { echo "rails_coll.sh: RUNS must be a positive integer" >&2; exit 2; }
[[ $(id -u) == 0 ]] || { echo "rails_coll.sh: needs root (ip netns)" >&2; exit 1; }
. bench/lib.sh
tworail_up rc 10.96 "$RATE" || exit 1
txb() { ip netns exec $a cat /sys/class/net/$1/statistics/tx_bytes; }
port=29800
coll() { # RAILS OP -> "busbw_GBps rail1_bytes rail2_bytes"
	local t1 t2
	port=$((port + 1))
	t1=$(txb r1a) t2=$(txb r2a)
	ip netns exec $a env UROCE_PORTS=r1a,r2a UROCE_COLL_RAILS=$1 RANK=0 WORLD_SIZE=2 \
		MASTER_ADDR=10.96.1.1 MASTER_PORT=$port timeout 300 $B/uroce-run $B/uroce-coll-perf \
		-o $2 -b $SIZE -e $SIZE -n 5 -w 1 >"$tmp/c0" 2>&1 &
	ip netns exec $b env UROCE_PORTS=r1b,r2b UROCE_COLL_RAILS=$1 RANK=1 WORLD_SIZE=2 \
		MASTER_ADDR=10.96.1.1 MASTER_PORT=$port timeout 300 $B/uroce-run $B/uroce-coll-perf \
		-o $2 -b $SIZE -e $SIZE -n 5 -w 1 >"$tmp/c1" 2>&1
	wait
	bw=$(awk '!/^#/ && NF >= 8 {print $8}' "$tmp/c0" | tail -1)
	echo "${bw:-nan} $(( $(txb r1a) - t1 )) $(( $(txb r2a) - t2 ))"
	[ -n "$bw" ] || { echo "--- rank 0"; cat "$tmp/c0"; echo "--- rank 1"; cat "$tmp/c1"; } >&2
}
iperf_both() { # -> sum of both rails, Gbit/s
	for i in 1 2; do
		ip netns exec $a iperf3 -s -1 -B 10.96.$i.1 -p $((port + i)) >/dev/null 2>&1 &
	done
	sleep 0.3
	for i in 1 2; do
		ip netns exec $b iperf3 -c 10.96.$i.1 -B 10.96.$i.2 -p $((port + i)) -t 5 -l 64K -J >"$tmp/i$i" 2>/dev/null &
	done
	wait
	port=$((port + 2))
	/usr/bin/python3 -c 'import json,sys; print("%.4f" % (sum(json.load(open(f))["end"]["sum_received"]["bits_per_second"] for f in sys.argv[1:])/1e9))' "$tmp/i1" "$tmp/i2" 2>/dev/null || echo nan
}
load0=$(cut -d' ' -f1-3 /proc/loadavg)
for ((r = 1; r <= RUNS; r++)); do
	for op in allreduce alltoall; do
		for rails in one auto; do
			coll $rails $op >>"$tmp/$op-$rails"
			echo "run $r: $op rails=$rails: busbw GB/s, rail1 B, rail2 B: $(tail -1 "$tmp/$op-$rails")" >&2
		done
	done
	iperf_both >>"$tmp/tcp"
	echo "run $r: iperf3 both rails: $(tail -1 "$tmp/tcp") Gbit/s" >&2
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)
col() { awk -v c=$2 '{print $c}' "$1" | median; }
gbit() { awk -v x="$1" 'BEGIN { if (x == "nan") print "nan"; else printf "%.3f", x * 8 }'; }
echo "| $(lscpu | sed -n 's/^Model name: *//p' | head -n1), $(nproc) CPUs (KVM VM), load $load0 → $load1; two rails of $RATE (tbf both ends); 2 ranks, float32, $SIZE; medians of $RUNS runs | busbw one rail (Gbit/s) | busbw two rails (Gbit/s) | two / one | rail 1 bytes | rail 2 bytes |"
echo "|---|---:|---:|---:|---:|---:|"
for op in allreduce alltoall; do
	o=$(col "$tmp/$op-one" 1) t=$(col "$tmp/$op-auto" 1)
	echo "| $op | $(gbit $o) | $(gbit $t) | $(awk -v o=$o -v t=$t 'BEGIN { if (o > 0) printf "%.2f", t / o; else print "nan" }') | $(col "$tmp/$op-auto" 2) | $(col "$tmp/$op-auto" 3) |"
done
echo "| iperf3, one TCP stream per rail at once (sum), 64 KiB writes | | $(col "$tmp/tcp" 1) | | | |"
