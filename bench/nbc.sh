#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Overlap of non-blocking collectives with computation (OSU's definition,
# bench/nbc_overlap.c): uroce's uroce_iallreduce/uroce_ialltoall against
# Open MPI's MPI_Iallreduce/MPI_Ialltoall in the same run, 2 and 4 ranks,
# 64 KiB .. 64 MiB (x4), compute sleeping and spinning. REPS runs of each
# (default 3), uroce and MPI alternating; per size the median overlap and
# the median pure time.
# With OLD_LIB=path/to/an/older/liburoce_coll.so.0 it also measures the
# blocking calls (uroce-coll-perf, allreduce and alltoall, 4 KiB..16 MiB)
# with that library (LD_PRELOAD) and with this build, interleaved: the
# blocking path before and after.
#   bench/nbc.sh [ITERS]        (default 10 timed iterations per size)
# Env: REPS, NPS ("2 4"), MIN (smallest size, 64K), COMPUTES ("sleep spin";
# empty: no overlap runs, only the blocking comparison with OLD_LIB).
# Writes bench/results/<date>-nbc.md (env OUT=NAME: bench/results/NAME.md).
# MPI: mpirun --mca btl tcp,self --mca pml ob1, bound like uroce-launch.
set -uo pipefail
cd "$(dirname "$0")/.."
B=build/bin
BB=build/bench
ITERS=${1:-10}
MIN=${MIN:-64K}
COMPUTES=${COMPUTES-"sleep spin"}
REPS=${REPS:-3}
NPS=${NPS:-"2 4"}
for t in $B/uroce-launch $BB/nbc-overlap $BB/nbc-overlap-mpi $B/uroce-coll-perf; do
	[ -x $t ] || { echo "nbc.sh: build $t first"; exit 1; }
done
day=$(date +%F)
md=bench/results/${OUT:-$day-nbc}.md
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
: >"$tmp/failed"
mpi="mpirun --allow-run-as-root --oversubscribe --mca btl tcp,self --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo --mca pml ob1
	--bind-to core:overload-allowed --map-by core"

# med FILE: per size (column 1) the median of each of columns 2..NF
med() {
	sort -k1,1n "$1" | awk '
	function out(   i, j, k, t, m) {
		if (!n) return
		line = s
		for (j = 2; j <= nf; j++) {
			for (i = 1; i <= n; i++) t[i] = v[i, j]
			for (i = 2; i <= n; i++) for (k = i; k > 1 && t[k - 1] > t[k]; k--) { m = t[k]; t[k] = t[k - 1]; t[k - 1] = m }
			line = line " " (n % 2 ? t[(n + 1) / 2] : (t[n / 2] + t[n / 2 + 1]) / 2)
		}
		print line
	}
	$1 != s { out(); s = $1; n = 0 }
	{ n++; nf = NF; for (j = 2; j <= NF; j++) v[n, j] = $j }
	END { out() }'
}

for np in $NPS; do
	for op in allreduce alltoall; do
		for c in $COMPUTES; do
			: >"$tmp/u"; : >"$tmp/m"
			for rep in $(seq "$REPS"); do
				echo "== overlap $op, $np ranks, compute $c, run $rep/$REPS"
				# A failed run gives no figures; it is counted.
				if timeout 900 $B/uroce-launch -n $np --timeout 900 --no-prefix $BB/nbc-overlap \
					-b "$MIN" -n "$ITERS" -o $op -c $c >"$tmp/run" 2>&1; then
					grep -v '^#' "$tmp/run" | grep '^ *[0-9]' >>"$tmp/u"
				else
					echo "uroce $op $np ranks $c run $rep: $(grep -m1 uroce_coll "$tmp/run")" >>"$tmp/failed"
				fi
				cat "$tmp/run"
				if timeout 900 $mpi -np $np $BB/nbc-overlap-mpi -b "$MIN" -n "$ITERS" -o $op -c $c >"$tmp/run" 2>&1; then
					grep -v '^#' "$tmp/run" | grep '^ *[0-9]' >>"$tmp/m"
				else
					echo "Open MPI $op $np ranks $c run $rep failed" >>"$tmp/failed"
				fi
				cat "$tmp/run"
			done
			med "$tmp/u" >"$tmp/u-$op-$np-$c"
			med "$tmp/m" >"$tmp/m-$op-$np-$c"
		done
	done
done

if [ -n "${OLD_LIB:-}" ]; then
	for np in $NPS; do
		for op in allreduce alltoall; do
			: >"$tmp/old"; : >"$tmp/new"
			for rep in $(seq "${BREPS:-$REPS}"); do
				echo "== blocking $op, $np ranks, run $rep/$REPS (old, then new)"
				timeout 900 env LD_PRELOAD="$OLD_LIB" $B/uroce-launch -n $np --timeout 900 --no-prefix \
					$B/uroce-coll-perf -b 4K -e 16M -f 4 -n 20 -w 5 -o $op |
					awk '!/^#/ && NF >= 9 {print $1, $6, $8}' >>"$tmp/old"
				timeout 900 $B/uroce-launch -n $np --timeout 900 --no-prefix \
					$B/uroce-coll-perf -b 4K -e 16M -f 4 -n 20 -w 5 -o $op |
					awk '!/^#/ && NF >= 9 {print $1, $6, $8}' >>"$tmp/new"
			done
			med "$tmp/old" >"$tmp/old-$op-$np"
			med "$tmp/new" >"$tmp/new-$op-$np"
		done
	done
fi

{
	echo "# Non-blocking collectives: overlap, uroce vs Open MPI ($day)"
	echo
	echo "\`bench/nbc.sh $ITERS\` at $(git rev-parse --short HEAD), $(getconf _NPROCESSORS_ONLN) cores ($(uname -r)),"
	echo "$(mpirun --version | head -1). Overlap as OSU's osu_iallreduce defines it"
	echo "(bench/nbc_overlap.c): t_pure = issue + wait; compute set to t_pure;"
	echo "t_total = issue + compute + wait; overlap = 100 (1 - (t_total - t_cpu) / t_pure),"
	echo "clamped to 0..100; times averaged over $ITERS iterations and over ranks."
	echo "*sleep*: the compute is a nanosleep (a thread waiting on a GPU); *spin*: a"
	echo "loop on the calling thread's core. Medians of $REPS runs, uroce and Open MPI"
	echo "alternating. uroce: uroce-launch (shared memory between the ranks' devices,"
	echo "one CPU per rank, round robin; the progress thread and the engine thread"
	echo "share the rank's CPU). Open MPI: TCP BTL, ob1, bound the same way."
	for np in $NPS; do
		for op in allreduce alltoall; do
			for c in $COMPUTES; do
				echo
				echo "## $op, $np ranks, compute $c"
				echo
				echo "| size (B) | uroce pure (us) | uroce total (us) | uroce overlap % | MPI pure (us) | MPI total (us) | MPI overlap % |"
				echo "|---:|---:|---:|---:|---:|---:|---:|"
				join "$tmp/u-$op-$np-$c" "$tmp/m-$op-$np-$c" |
					awk '{printf "| %s | %.0f | %.0f | %.1f | %.0f | %.0f | %.1f |\n", $1, $2, $4, $5, $6, $8, $9}'
			done
		done
	done
	if [ -n "${OLD_LIB:-}" ]; then
		echo
		echo "## Blocking calls before and after"
		echo
		echo "uroce-coll-perf (-n 20 -w 5, float32 sum) with the library before this change"
		echo "(\`LD_PRELOAD\` of $(basename "$OLD_LIB\`") built at ${OLD_REV:-?}) and with this build,"
		echo "interleaved; medians of ${BREPS:-$REPS} runs, time per call (slowest rank) and busbw."
		for np in $NPS; do
			for op in allreduce alltoall; do
				echo
				echo "### $op, $np ranks"
				echo
				echo "| size (B) | before (us) | after (us) | before busbw | after busbw | after/before busbw |"
				echo "|---:|---:|---:|---:|---:|---:|"
				join "$tmp/old-$op-$np" "$tmp/new-$op-$np" |
					awk '{printf "| %s | %.1f | %.1f | %.3f | %.3f | %.2f |\n", $1, $2, $4, $3, $5, ($3 > 0 ? $5 / $3 : 0)}'
			done
		done
	fi
	echo
	if [ -s "$tmp/failed" ]; then
		echo "Failed runs (no figures from them; the medians are over the others):"
		echo
		sed 's/^/    /' "$tmp/failed"
	else
		echo "No run failed."
	fi
} >"$md"
echo "wrote $md"
