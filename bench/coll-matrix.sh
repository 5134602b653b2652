#!/bin/sh
# SPDX-License-Identifier: MIT
# The full correctness matrix vs Open MPI (long: minutes; ctest label
# "long" with -DUROCE_LONG_TESTS=ON, or by hand):
#   bench/coll-matrix.sh [BINDIR TESTDIR]
# Env: COLL_NPS (rank counts, default 1..8), COLL_ALGO_NPS (default "3 5 8";
# empty skips the forced-algorithm pass), COLL_SEED.
# Every op x type x redop, counts 0, 1, 3, 17, 1023, 65537, 262147, plus
# 64 MiB allreduce/allgather/alltoall/reduce-scatter/broadcast; ranks 1..8;
# then every algorithm forced at 3, 5 and 8 ranks on the smaller cases.
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-$here/../build/bin} tests=${2:-$here/../build/tests}
cases=$(mktemp)
small=$(mktemp)
trap 'rm -f "$cases" "$small"' EXIT
for op in allreduce reduce reducescatter; do
	for ty in float32 float64 float16 bfloat16 int32 int64 uint8; do
		for ro in sum prod min max avg; do
			for n in 0 1 3 17 1023 65537; do
				echo "$op $ty $ro $n $((n % 3))"
			done
		done
	done
done >"$small"
for op in broadcast allgather alltoall alltoallv; do
	for ty in float32 float64 float16 bfloat16 int32 int64 uint8; do
		for n in 0 1 3 17 1023 65537; do
			echo "$op $ty sum $n $((n % 3))"
		done
	done
done >>"$small"
{
	cat "$small"
	for op in allreduce reduce broadcast; do echo "$op float32 sum 262147 1"; echo "$op int32 max 262147 0"; done
	echo "allreduce float32 sum 16777216 0"      # 64 MiB
	echo "broadcast uint8 sum 67108864 1"        # 64 MiB
	echo "allgather float32 sum 2097152 0"       # 8 MiB per rank
	echo "reducescatter float32 sum 2097152 0"   # 8 MiB per rank
	echo "alltoall float32 sum 2097152 0"        # 8 MiB per peer
	echo "alltoallv int64 sum 1048576 0"
} >"$cases"
fail=0
sh "$here/../tests/coll/coll_vs_mpi.sh" "$bin" "$tests" "$cases" "${COLL_NPS-1 2 3 4 5 6 7 8}" 900 || fail=1
[ -z "${COLL_ALGO_NPS-3 5 8}" ] ||
	COLL_ALGOS="ring rabenseifner recursive_doubling tree bruck recursive_halving" \
	sh "$here/../tests/coll/coll_vs_mpi.sh" "$bin" "$tests" "$small" "${COLL_ALGO_NPS-3 5 8}" 900 || fail=1
exit $fail
