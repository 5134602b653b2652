#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Raw packet QPs on lo (docs/verbs.md "Raw packet QPs"): unmodified
# perftest raw_ethernet_bw, 1518-byte frames for 2 s, the client paced by
# perftest's software limiter at several rates and unpaced. For each rate:
# the client's send rate (perftest's figure) and, from the server's raw port
# counters (UROCE_LOG=debug, printed when it closes), where every frame that
# reached the port went: dropped by the socket buffer, dropped for want of a
# receive posted (as a NIC drops them: no RNR on Ethernet), or delivered.
# Needs root (CAP_NET_RAW, and a network namespace of its own: unshare -n).
#   bench/raw.sh [BUILDDIR]  -> bench/results/<date>-raw.md
set -uo pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd)
B=$(cd "${1:-$TOP/build}" && pwd)
OUT=$TOP/bench/results/$(date +%F)-raw.md
D=${RAW_SECONDS:-2}

if [[ ${RAW_IN_NETNS:-} != 1 ]]; then
	exec unshare -n env RAW_IN_NETNS=1 "$0" "$B"
fi
ip link set lo up

# run PPS: prints "client_Mpps at_port socket_drops no_wqe delivered"
# (PPS 0: unpaced)
run() {
	local a=(-d uroce0 -j 10.0.0.2 -J 10.0.0.1 -K 5000 -k 6000 -D "$D") pace=()
	[[ $1 != 0 ]] && pace=(--rate_limit="$1" --rate_units=p --rate_limit_type=SW)
	UROCE_LOG=debug UROCE_IP=127.0.0.1 "$B/bin/uroce-run" raw_ethernet_bw \
		"${a[@]}" -B 02:00:00:00:00:01 -E 02:00:00:00:00:02 --server \
		>"$tmp/s" 2>&1 &
	sleep 1
	UROCE_IP=127.0.0.1 timeout 60 "$B/bin/uroce-run" raw_ethernet_bw "${a[@]}" \
		-B 02:00:00:00:00:02 -E 02:00:00:00:00:01 --client "${pace[@]}" \
		>"$tmp/c" 2>&1
	wait
	awk '$1 == 1518 && NF >= 5 { v = $NF } END { printf "%s ", v + 0 }' "$tmp/c"
	# "raw port: R frames reached the socket, S of them dropped ..." and
	# "raw port: U frames matched no rule, W found no receive posted, ..."
	sed 's/.*raw port: //' "$tmp/s" | awk '
		/reached the socket/ { r = $1; s = $6 }
		/matched no rule/ { u = $1; w = $6 }
		END { print r + 0, s + 0, w + 0, r - s - u - w }'
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
{
	echo "# Raw packet QPs on lo, $(date +%F), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
	echo
	echo "raw_ethernet_bw, 1518-byte frames, -D $D, one run each; paced by"
	echo "perftest's software limiter (--rate_limit_type=SW). Frame counts over"
	echo "the server's whole run (the client's warm-up included)."
	echo
	echo "| client limit (pps) | client Mpps | frames at the port | socket buffer full | no receive posted | delivered |"
	echo "|---|---|---|---|---|---|"
	for p in ${RAW_RATES:-20000 100000 0}; do
		read -r c n s w d < <(run "$p")
		echo "| $([[ $p == 0 ]] && echo none || echo "$p") | $c | $n | $s | $w | $d |"
	done
} | tee "$OUT"
