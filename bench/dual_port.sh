#!/usr/bin/env bash
# A dual-port device on two rails (issue 45, docs/ports-classes.md
# "Ports"): two namespaces joined by two veth pairs, each shaped to RATE by
# tbf at both ends, a 2-port uroce device on each side (UROCE_PORTS).
# ib_write_bw -i 1 and -i 2 run at once (one RC QP each, 64 KiB writes,
# DUR seconds), each against its rail's rate; then iperf3 (one TCP stream
# per rail, both rails at once) over the same rails in the same run.
# Medians of RUNS; bytes per rail show that each test kept to its rail.
#   bench/dual_port.sh [RUNS] [RATE] [DUR]   (default 3, 300mbit, 5)
set -uo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-3} RATE=${2:-300mbit} DUR=${3:-5} B=build/bin
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || { echo "dual_port.sh: RUNS must be a positive integer" >&2; exit 2; }
[[ $DUR =~ ^[1-9][0-9]*$ ]] || { echo "dual_port.sh: DUR must be a positive integer (seconds)" >&2; exit 2; }
[[ $(id -u) == 0 ]] || { echo "dual_port.sh: needs root (ip netns)" >&2; exit 1; }
. bench/lib.sh
tworail_up dp 10.95 "$RATE" || exit 1
txb() { ip netns exec $b cat /sys/class/net/$1/statistics/tx_bytes; }
inA() { ip netns exec $a env UROCE_PORTS=r1a,r2a "$@"; }
inB() { ip netns exec $b env UROCE_PORTS=r1b,r2b "$@"; }
port=18900
both_bw() { # -> "gbit1 gbit2 rail1-bytes rail2-bytes"
	local t1 t2 p1=$((port + 1)) p2=$((port + 2))
	port=$((port + 2))
	t1=$(txb r1b) t2=$(txb r2b)
	for i in 1 2; do
		p=$((port - 2 + i))
		inA timeout $((DUR + 30)) $B/uroce-run ib_write_bw -i $i -x 0 -s 65536 -D $DUR -F --report_gbits -p $p >"$tmp/s$i" 2>&1 &
	done
	sleep 0.5
	for i in 1 2; do
		p=$((port - 2 + i))
		inB timeout $((DUR + 30)) $B/uroce-run ib_write_bw -i $i -x 0 -s 65536 -D $DUR -F --report_gbits -p $p 10.95.$i.1 >"$tmp/c$i" 2>&1 &
	done
	wait
	r1=$(awk '$1 == 65536 {print $4}' "$tmp/c1") r2=$(awk '$1 == 65536 {print $4}' "$tmp/c2")
	echo "${r1:-nan} ${r2:-nan} $(( $(txb r1b) - t1 )) $(( $(txb r2b) - t2 ))"
}
both_iperf() { # -> "gbit1 gbit2"
	for i in 1 2; do
		ip netns exec $a iperf3 -s -1 -B 10.95.$i.1 -p $((port + i)) >/dev/null 2>&1 &
	done
	sleep 0.3
	for i in 1 2; do
		ip netns exec $b iperf3 -c 10.95.$i.1 -B 10.95.$i.2 -p $((port + i)) -t $DUR -l 64K -J >"$tmp/i$i" 2>/dev/null &
	done
	wait
	port=$((port + 2))
	for i in 1 2; do
		/usr/bin/python3 -c 'import json,sys; print("%.3f" % (json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"]/1e9))' "$tmp/i$i" 2>/dev/null || echo nan
	done | tr '\n' ' '
	echo
}
load0=$(cut -d' ' -f1-3 /proc/loadavg)
for ((r = 1; r <= RUNS; r++)); do
	both_bw >>"$tmp/bw"
	both_iperf >>"$tmp/tcp"
	echo "run $r: uroce rail1 rail2 bytes1 bytes2: $(tail -1 "$tmp/bw"); iperf3 rail1 rail2: $(tail -1 "$tmp/tcp")" >&2
	[[ $(tail -1 "$tmp/bw") == nan* ]] && { echo "--- client 1"; cat "$tmp/c1"; echo "--- server 1"; cat "$tmp/s1"; } >&2
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)
col() { awk -v c=$2 '{print $c}' "$1" | median; }
echo "| $(lscpu | sed -n 's/^Model name: *//p' | head -n1), $(nproc) CPUs, load $load0 → $load1; two rails of $RATE (tbf both ends); medians of $RUNS runs of ${DUR} s | rail 1 Gbit/s | rail 2 Gbit/s | rail 1 bytes | rail 2 bytes |"
echo "|---|---:|---:|---:|---:|"
echo "| uroce, ib_write_bw -i 1 and -i 2 at once, 1 RC QP each, -s 65536 | $(col "$tmp/bw" 1) | $(col "$tmp/bw" 2) | $(col "$tmp/bw" 3) | $(col "$tmp/bw" 4) |"
echo "| iperf3, one TCP stream per rail at once, 64 KiB writes | $(col "$tmp/tcp" 1) | $(col "$tmp/tcp" 2) | | |"
