#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The simulator on the shapes of the real multipath beds (issue 33: "the
# simulator's numbers for the same topologies beside the real ones"):
# bench/multipath.sh's two hosts joined by two paths of RATE (one leaf per
# host, two spines; 10 Gb/s host links, so that the paths are the
# bottleneck as the tbf-shaped router namespaces are), 1024-byte MTU, no
# PFC and no congestion control (the real bed has neither), one RC QP
# moving MIB MiB; and bench/loss_goodput.sh's random loss (every fabric
# link loses LOSS % of its packets in each direction, one path).
# Deterministic (--seed 1): one run per row. Goodput = bytes x 8 /
# completion. The same transport code as the real engine (ur_mp.c,
# ur_sr.c): what differs is the host (no CPU, no jitter) and the queues
# (a 1 MiB shared buffer per switch against tbf's 20 ms).
#   bench/multipath_sim.sh [MIB] [RATE_GBPS]     (default 32, 0.3)
set -uo pipefail
cd "$(dirname "$0")/.."
MIB=${1:-32} RATE=${2:-0.3} SIM=${SIM:-build/bin/uroce-sim}
[[ $MIB =~ ^[1-9][0-9]*$ ]] || { echo "multipath_sim.sh: MIB must be a positive integer" >&2; exit 2; }
[[ -x $SIM ]] || { echo "multipath_sim.sh: $SIM not built (scripts/build.sh release)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "0 0 1 $((MIB << 20))" >"$tmp/one.tr"
half=$(awk -v r="$RATE" 'BEGIN { print r / 2 }')
# run LB [KEY=VALUE...] -> "goodput_gbit retransmits sr_naks timeouts"
run() {
	local lb=$1 args=() kv
	shift
	for kv in "$@"; do args+=(-s "$kv"); done
	$SIM --seed 1 -s topology=leafspine -s leaves=2 -s spines=2 -s hosts_per_leaf=1 \
		-s host_gbps=10 -s fabric_gbps="$RATE" -s mtu=1024 -s cc=none -s pfc=off \
		-s buffer_kb=1024 -s link_delay_ns=20000 -w trace -s trace="$tmp/one.tr" \
		--lb "$lb" "${args[@]}" >"$tmp/out" 2>&1 || { echo "nan - - -"; sed 's/^/  /' "$tmp/out" >&2; return; }
	awk -v b=$((MIB << 20)) '
		/^completion_us/ { c = $2 }
		/^retransmits/ { r = $2; t = $4; n = $10 }
		END { if (c > 0) printf "%.3f %s %s %s\n", b * 8 / c / 1e3, r, n, t; else print "nan - - -" }' "$tmp/out"
}
row() { # label LB [KEY=VALUE...]
	local label=$1
	shift
	set -- $(run "$@")
	echo "| $label | $1 | $2 | $3 | $4 |"
}
echo "| uroce-sim, $MIB MiB, one RC QP, --seed 1 | Gbit/s | retransmits | selective NAKs | timeouts |"
echo "|---|---:|---:|---:|---:|"
row "two paths of $RATE Gb/s, one port (single path)" single
row "two paths of $RATE, spray over 8 ports" spray
row "two paths of $RATE, adaptive over 8 ports" adaptive
row "$RATE + $half Gb/s, one port" single "degrade=e0 c1 $half" "degrade=c1 e1 $half"
row "$RATE + $half, spray" spray "degrade=e0 c1 $half" "degrade=c1 e1 $half"
row "$RATE + $half, adaptive" adaptive "degrade=e0 c1 $half" "degrade=c1 e1 $half"
for loss in 1 5; do
	p=$(awk -v l=$loss 'BEGIN { print l / 100 }')
	for sr in off on; do
		row "one path, $loss % loss on each fabric link, selective repeat $sr" single \
			"sr=$sr" "degrade=e0 c0 $RATE $p" "degrade=c0 e1 $RATE $p" \
			"degrade=e0 c1 $RATE $p" "degrade=c1 e1 $RATE $p"
	done
done
