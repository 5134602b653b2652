#!/bin/sh
# SPDX-License-Identifier: MIT
# liburoce_coll vs Open MPI: for each rank count, coll_ref_mpi under mpirun
# writes the reference results of every case, then coll_check under
# uroce-launch runs the same cases on uroce and compares.
#   coll_vs_mpi.sh BINDIR TESTDIR CASES "NP..." [TIMEOUT_S]
# Env: COLL_ALGOS="auto ring ..." runs the checks once per UROCE_COLL_ALGO.
set -u
bin=$1 tests=$2 cases=$3 nps=$4 to=${5:-60}
command -v mpirun >/dev/null || { echo "SKIP: no mpirun (apt-get install openmpi-bin libopenmpi-dev)"; exit 77; }
[ -x "$tests/coll_ref_mpi" ] || { echo "SKIP: coll_ref_mpi not built (no MPI at configure time)"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
seed=${COLL_SEED:-$(date +%s)}
echo "seed $seed (COLL_SEED=$seed to repeat)"
fail=0
for np in $nps; do
	mkdir -p "$dir/$np"
	t0=$(date +%s.%N)
	# Under ASan (the asan preset) Open MPI's own allocations that it
	# never frees would fail the reference: no leak report for it. The
	# reference ranks are all local: TCP over lo, which Open MPI skips by
	# default (in a network namespace with only lo it found no path).
	if ! ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} timeout "$to" mpirun --allow-run-as-root --oversubscribe --mca btl tcp,self --mca btl_tcp_if_include lo \
		--mca pml ob1 -np "$np" "$tests/coll_ref_mpi" "$cases" "$dir/$np" "$seed" \
		>"$dir/mpi.log" 2>&1; then
		echo "FAIL: mpirun -np $np coll_ref_mpi"; cat "$dir/mpi.log"; fail=1; continue
	fi
	t1=$(date +%s.%N)
	mpit=$(echo "$t1 - $t0" | bc)
	for algo in ${COLL_ALGOS:-auto}; do
		if UROCE_COLL_ALGO=$algo "$bin/uroce-launch" -n "$np" --timeout "$to" \
			"$tests/coll_check" "$cases" "$dir/$np" "$seed" >"$dir/u.log" 2>&1; then
			echo "ok: $np ranks, algo $algo: $(grep coll_check "$dir/u.log" | sed 's/^\[0\] //') (mpi $mpit s, uroce $(echo "$(date +%s.%N) - $t1" | bc) s)"
		else
			echo "FAIL: $np ranks, algo $algo"; cat "$dir/u.log"; fail=1
		fi
		t1=$(date +%s.%N)
	done
done
exit $fail
