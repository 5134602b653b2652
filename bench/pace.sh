#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Pacing accuracy and small-message batching on loopback, unmodified
# perftest over uroce:
#  * ib_write_bw (64 KiB writes, 4 s) with UROCE_RATE_LIMIT_MBPS = 100, 1000,
#    5000 and none: achieved Gbit/s vs the limit (IB payload; the limit
#    counts whole IB packets: headers add ~0.5 % at MTU 4096);
#  * ib_send_bw and ib_write_bw -s 64, single posts and post lists of 32,
#    with UROCE_GSO=0 (one datagram per sendmmsg entry) vs the default (GSO
#    runs of up to 32 packets per entry).
# perftest refuses --rate_limit_type=PP for anything but raw_ethernet_bw, so
# the device-wide limit is what shapes an unmodified ib_write_bw.
#   bench/pace.sh [BUILDDIR]  -> bench/results/<date>-pace.md
set -uo pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd)
B=$(cd "${1:-$TOP/build}" && pwd)
R=$B/bin/uroce-run
OUT=$TOP/bench/results/$(date +%F)-pace.md
D=${PACE_SECONDS:-4}
PORT=$((21000 + $$ % 1000))

# bw TOOL ENV... -- ARGS: prints the client's average Gbit/s
bw() {
	local tool=$1 e=()
	shift
	while [[ $1 != -- ]]; do e+=("$1"); shift; done
	shift
	PORT=$((20000 + RANDOM % 20000)) # med runs bw in a subshell
	env "${e[@]}" UROCE_IP=127.0.0.2 "$R" "$tool" -x 0 -F -p $PORT -D "$D" \
		--report_gbits "$@" >/dev/null 2>&1 &
	sleep 0.5
	env "${e[@]}" UROCE_IP=127.0.0.3 "$R" "$tool" -x 0 -F -p $PORT -D "$D" \
		--report_gbits "$@" 127.0.0.2 2>/dev/null |
		awk '$1 ~ /^[0-9]+$/ && NF >= 5 { v = $4 } END { print v + 0 }'
	wait
}

RUNS=${PACE_RUNS:-3}
# med CMD...: the median of RUNS runs of CMD (one number each)
med() {
	local i
	for ((i = 0; i < RUNS; i++)); do "$@"; done | sort -g |
		awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] + 0 }'
}

{
	echo "# Pacing and batching, $(date +%F), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
	echo
	echo "Medians of $RUNS runs each."
	echo
	echo "ib_write_bw -s 65536 -D $D over 127.0.0.2/3 (both processes on this host)."
	echo
	echo "| UROCE_RATE_LIMIT_MBPS | Gbit/s | of the limit |"
	echo "|---|---|---|"
	for l in ${PACE_LIMITS:-100 1000 5000 0}; do
		g=$(med bw ib_write_bw UROCE_RATE_LIMIT_MBPS=$l -- -s 65536)
		if [[ $l == 0 ]]; then
			echo "| none | $g | |"
		else
			echo "| $l | $g | $(awk -v g="$g" -v l="$l" 'BEGIN { printf "%.1f %%", 100 * g * 1000 / l }') |"
		fi
	done
	echo
	echo "64-byte messages: several leave in one system call (UDP GSO runs of up"
	echo "to 32 packets per sendmmsg entry) or each alone (UROCE_GSO=0). perftest"
	echo "-l 32 posts lists of 32 work requests; -l 1 posts one at a time."
	echo
	echo "| tool | post list | UROCE_GSO=0 Mmsg/s | batched Mmsg/s | gain |"
	echo "|---|---|---|---|---|"
	for tool in ib_send_bw ib_write_bw; do
		for l in 1 32; do
			a=$(med bw "$tool" UROCE_GSO=0 -- -s 64 -l $l)
			b=$(med bw "$tool" UROCE_GSO=1 -- -s 64 -l $l)
			awk -v t="$tool" -v l="$l" -v a="$a" -v b="$b" 'BEGIN {
				ma = a * 1e9 / 8 / 64 / 1e6; mb = b * 1e9 / 8 / 64 / 1e6
				printf "| %s | %d | %.3f | %.3f | %.2fx |\n", t, l, ma, mb,
				       (ma > 0 ? mb / ma : 0) }'
		done
	done
} | tee "$OUT"
