#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# One collective setting A against B in the same run: uroce-coll-perf under
# uroce-launch with env A, then env B, alternating RUNS times; per size
# the median busbw of each and the paired median of B/A (run i of A and
# of B ran back to back, so a machine drifting between states skews
# neither).
#   bench/coll-ab.sh "ENV_A" "ENV_B" OP NP [RUNS] [LAUNCH_OPTS]
#   e.g. bench/coll-ab.sh UROCE_COLL_CMA=0 UROCE_COLL_CMA=1 alltoall 4 5
# Env SIZES (default "-b 64K -e 64M -f 4"), ITERS (5), WARMUP (5),
# BUILD (default build); BUILD_A and BUILD_B (default BUILD) compare two
# builds of the same settings (ENV "X=1"). LAUNCH_OPTS: e.g. --no-shm.
set -uo pipefail
cd "$(dirname "$0")/.."
A=$1 B=$2 OP=$3 NP=$4 RUNS=${5:-5} LOPT=${6:-}
BUILD=${BUILD:-build}
SIZES=${SIZES:-"-b 64K -e 64M -f 4"}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for r in $(seq "$RUNS"); do
	for v in A B; do
		[ $v = A ] && e=$A || e=$B
		[ $v = A ] && d=${BUILD_A:-$BUILD} || d=${BUILD_B:-$BUILD}
		# shellcheck disable=SC2086
		env $e timeout 600 $d/bin/uroce-launch -n "$NP" --no-prefix $LOPT \
			$d/bin/uroce-coll-perf $SIZES -n "${ITERS:-5}" -w "${WARMUP:-5}" -o "$OP" |
			awk -v r="$r" '!/^#/ && NF >= 9 {print $1, r, $8}' >>"$tmp/$v"
	done
done
med() { sort -g | awk '{a[NR]=$1} END {if (!NR) {print "nan"; exit} print (NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2}'; }
echo "# $OP, $NP ranks $LOPT: A=\"$A\" ${BUILD_A:-$BUILD} B=\"$B\" ${BUILD_B:-$BUILD}, $RUNS runs, busbw GB/s, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| size (B) | A busbw | B busbw | B/A paired |"
echo "|---:|---:|---:|---:|"
for s in $(awk '{print $1}' "$tmp/A" | sort -un); do
	a=$(awk -v s="$s" '$1 == s {print $3}' "$tmp/A" | med)
	b=$(awk -v s="$s" '$1 == s {print $3}' "$tmp/B" | med)
	p=$(join <(awk -v s="$s" '$1 == s {print $2, $3}' "$tmp/A" | sort) \
		<(awk -v s="$s" '$1 == s {print $2, $3}' "$tmp/B" | sort) |
		awk '$2 > 0 {print $3 / $2}' | med)
	printf "| %s | %.4f | %.4f | %.2f |\n" "$s" "$a" "$b" "$p"
done
