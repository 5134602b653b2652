#!/bin/sh
# SPDX-License-Identifier: MIT
# The toy 3-D training step (tests/coll/train3d.c) on 8 ranks under
# uroce-launch and under Open MPI's mpirun: every buffer of every rank
# must be the same, byte for byte.
#   train3d.sh BINDIR TESTDIR
set -u
bin=$1 tests=$2
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }
[ -x "$tests/train3d_mpi" ] || { echo "SKIP: train3d_mpi not built (no MPI)"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/uroce" "$dir/mpi"
if ! "$bin/uroce-launch" -n 8 --timeout 90 "$tests/train3d" "$dir/uroce" >"$dir/u.log" 2>&1; then
	echo "FAIL: uroce run"; cat "$dir/u.log"; exit 1
fi
if ! ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} timeout 90 mpirun --allow-run-as-root --oversubscribe \
	--mca btl tcp,self --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo --mca pml ob1 \
	-np 8 "$tests/train3d_mpi" "$dir/mpi" >"$dir/m.log" 2>&1; then
	echo "FAIL: Open MPI run"; cat "$dir/m.log"; exit 1
fi
fail=0
for r in 0 1 2 3 4 5 6 7; do
	if [ ! -s "$dir/mpi/$r" ] || ! cmp "$dir/uroce/$r" "$dir/mpi/$r"; then
		echo "FAIL: rank $r differs from Open MPI"; fail=1
	fi
done
[ $fail = 0 ] && echo "ok: 8 ranks (DP 2 x TP 2 x PP 2, MoE all-to-all in groups of 4): every buffer equals Open MPI's ($(cat "$dir"/mpi/* | wc -c) bytes)"
tail -c 40 "$dir/uroce/5" | tr -d '\0' | tail -1
exit $fail
