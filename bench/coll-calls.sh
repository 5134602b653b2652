#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Per-call times of one collective, setting (or build) A against B: RUNS
# alternating runs of each, 40 timed calls after 3 warm-up per run
# (uroce-coll-perf -C, rank 0's clock), then per side the minimum, 10th
# and 25th percentile and median over all calls. On a loaded machine the
# mean of a few calls (bench/coll.sh, bench/coll-ab.sh) carries whichever
# multi-millisecond preemption fell into it; the low quantiles show the
# cost of the call itself.
#   bench/coll-calls.sh OP NP SIZE RUNS "ENV_A" "ENV_B"
#   e.g. BUILD_A=/tmp/old BUILD_B=build bench/coll-calls.sh alltoall 2 4M 5 X=1 X=1
# Env BUILD_A, BUILD_B (default build): the build directories.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OP=$1 NP=$2 S=$3 RUNS=$4 EA=$5 EB=$6
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
for _ in $(seq "$RUNS"); do
	for v in A B; do
		if [ $v = A ]; then d=${BUILD_A:-build} e=$EA; else d=${BUILD_B:-build} e=$EB; fi
		# shellcheck disable=SC2086
		env $e timeout 600 $d/bin/uroce-launch -n "$NP" --no-prefix $d/bin/uroce-coll-perf \
			-b "$S" -e "$S" -n 40 -w 3 -o "$OP" -C 2>&1 | grep "calls of" |
			sed 's/.*timed)://' | tr ' ' '\n' | grep . | tail -n +4 | sed "s/^/$v /" >>"$tmp"
	done
done
echo "# $OP, $NP ranks, $S: A=\"$EA\" ${BUILD_A:-build} B=\"$EB\" ${BUILD_B:-build}, $RUNS runs, load $(cut -d' ' -f1-3 /proc/loadavg)"
for v in A B; do
	awk -v v=$v '$1 == v {print $2}' "$tmp" | sort -n | awk -v v=$v '{a[NR] = $1}
		END {if (NR) printf "%s calls %d: min %d p10 %d p25 %d median %d us\n", v, NR,
			a[1], a[int(NR * 0.1) + 1], a[int(NR * 0.25) + 1], a[int(NR / 2) + 1]}'
done
