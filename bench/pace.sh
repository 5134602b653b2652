#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Pacing accuracy and small-message batching on loopback, unmodified
# perftest over uroce:
#  * ib_write_bw (64 KiB writes, 4 s) with UROCE_RATE_LIMIT_MBPS = 100, 1000,
#    5000 and none: achieved Gbit/s vs the limit (IB payload; the limit
#    counts IB packet bytes, headers are ~2 % of a 1024-byte packet);
#  * ib_send_bw -s 64 with UROCE_GSO=0 (one datagram per system call entry)
#    vs the default (GSO runs of up to 32 packets per sendmmsg entry).
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
	PORT=$((PORT + 1))
	env "${e[@]}" UROCE_IP=127.0.0.2 "$R" "$tool" -x 0 -F -p $PORT -D "$D" \
		--report_gbits "$@" >/dev/null 2>&1 &
	sleep 0.5
	env "${e[@]}" UROCE_IP=127.0.0.3 "$R" "$tool" -x 0 -F -p $PORT -D "$D" \
		--report_gbits "$@" 127.0.0.2 2>/dev/null |
		awk '$1 ~ /^[0-9]+$/ && NF >= 5 { v = $4 } END { print v + 0 }'
	wait
}

{
	echo "# Pacing and batching, $(date +%F), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
	echo
	echo "ib_write_bw -s 65536 -D $D over 127.0.0.2/3 (both processes on this host)."
	echo
	echo "| UROCE_RATE_LIMIT_MBPS | Gbit/s | of the limit |"
	echo "|---|---|---|"
	for l in 100 1000 5000 0; do
		g=$(bw ib_write_bw UROCE_RATE_LIMIT_MBPS=$l -- -s 65536)
		if [[ $l == 0 ]]; then
			echo "| none | $g | |"
		else
			echo "| $l | $g | $(awk -v g="$g" -v l="$l" 'BEGIN { printf "%.1f %%", 100 * g * 1000 / l }') |"
		fi
	done
	echo
	echo "ib_send_bw -s 64 -D $D: small messages, batched (GSO) or not."
	echo
	echo "| UROCE_GSO | Gbit/s | Mmsg/s |"
	echo "|---|---|---|"
	for g in 0 1; do
		v=$(bw ib_send_bw UROCE_GSO=$g -- -s 64)
		echo "| $g | $v | $(awk -v v="$v" 'BEGIN { printf "%.3f", v * 1e9 / 8 / 64 / 1e6 }') |"
	done
} | tee "$OUT"
