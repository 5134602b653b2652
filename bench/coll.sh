#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# liburoce_coll vs Open MPI (TCP BTL) on this machine: allreduce and
# alltoall bus bandwidth at 2 and 4 ranks, 4 KiB .. 64 MiB (x4): REPS runs
# of each (default 3, env REPS), uroce and MPI alternating, median per size.
# Also, in the same runs: uroce with --no-shm (RoCEv2 in UDP over loopback,
# uroce-launch's default being shared memory) and Open MPI's shared-memory
# BTL (--mca btl vader,self).
#   bench/coll.sh [ITERS]      (default 5 timed iterations; env WARMUP warm-up
#                              calls per size, default 5 as in nccl-tests)
# Env SIZES="-b 64K -e 64M -f 4" narrows the sizes.
#   bench/coll.sh --plot bench/results/<date>-coll.md   (redraw the PNG)
# Writes bench/results/<date>-coll.md and <date>-coll.png (gnuplot); env
# OUT=NAME writes bench/results/NAME.md and NAME.png instead.
# uroce: uroce-launch + uroce-coll-perf (each rank its own loopback address
# and uroce device). MPI: mpirun --mca btl tcp,self --mca pml ob1 +
# coll-mpi-perf (bench/coll_mpi_perf.c), same sizes, type float32 sum.
# Both bind ranks alike, one CPU each, round robin when the ranks outnumber
# the CPUs: uroce-launch's default; mpirun's with --bind-to
# core:overload-allowed --map-by core (its default leaves oversubscribed
# ranks unbound).
set -uo pipefail
[ "${1:-}" = --plot ] && set -- --plot "$(realpath "$2")"
cd "$(dirname "$0")/.."
B=${BUILD:-build}/bin # env BUILD: another build directory

# plot DATDIR PNG DAY: busbw vs size from DATDIR/{uroce,mpi}-OP-NP.dat.
plot() {
	gnuplot <<GP
set terminal pngcairo size 1100,450 font ",10"
set termoption noenhanced
set output "$2"
set multiplot layout 1,2 title "liburoce_coll (shm; dotted: --no-shm) vs Open MPI (tcp; dash-dot: vader): busbw, $3"
set logscale xy 2
set xlabel "size (bytes)"
set ylabel "busbw (GB/s)"
set xtics ("4K" 4096, "16K" 16384, "64K" 65536, "256K" 262144, "1M" 1048576, "4M" 4194304, "16M" 16777216, "64M" 67108864)
set xrange [3000:90000000]
set key left top
set grid
do for [op in "allreduce alltoall"] {
  set title op
  plot "$1/uroce-".op."-2.dat" u 1:3 w lp t "uroce 2 ranks", \\
       "$1/uroce-".op."-4.dat" u 1:3 w lp t "uroce 4 ranks", \\
       "$1/mpi-".op."-2.dat" u 1:3 w lp dt 2 t "Open MPI 2 ranks", \\
       "$1/mpi-".op."-4.dat" u 1:3 w lp dt 2 t "Open MPI 4 ranks", \\
       "$1/udp-".op."-2.dat" u 1:3 w l dt 3 t "uroce --no-shm 2 ranks", \\
       "$1/udp-".op."-4.dat" u 1:3 w l dt 3 t "uroce --no-shm 4 ranks", \\
       "$1/sm-".op."-2.dat" u 1:3 w l dt 4 t "Open MPI vader 2 ranks", \\
       "$1/sm-".op."-4.dat" u 1:3 w l dt 4 t "Open MPI vader 4 ranks"
}
unset multiplot
GP
}

# bench/coll.sh --plot RESULT.md: redraw RESULT.png from its tables.
if [ "${1:-}" = --plot ]; then
	tmp=$(mktemp -d)
	awk -v d="$tmp" '/^## / {op=$2; sub(",", "", op); np=$3; next}
		/^\| [0-9]/ {gsub(/\|/, " "); print $1, $2, $3 > (d "/uroce-" op "-" np ".dat");
			print $1, $4, $5 > (d "/mpi-" op "-" np ".dat");
			if (NF >= 9) { print $1, 0, $8 > (d "/udp-" op "-" np ".dat");
				print $1, 0, $9 > (d "/sm-" op "-" np ".dat") }}' "$2"
	plot "$tmp" "${2%.md}.png" "$(basename "$2" -coll.md)"
	rm -rf "$tmp"
	exit 0
fi
ITERS=${1:-5}
# Untimed calls per size before the timed ones, for both libraries:
# nccl-tests' default. The first calls at a new size are slow in both
# (docs/collectives.md, "Warm-up").
WARMUP=${WARMUP:-5}
for t in uroce-launch uroce-coll-perf ../bench/coll-mpi-perf; do
	[ -x $B/$t ] || { echo "coll.sh: build $B/$t first (cmake --build build)"; exit 1; }
done
command -v mpirun >/dev/null || { echo "coll.sh: apt-get install openmpi-bin libopenmpi-dev"; exit 1; }
day=$(date +%F)
name=${OUT:-$day-coll}
md=bench/results/$name.md
png=bench/results/$name.png
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# env SIZES: uroce-coll-perf size flags (default 4 KiB .. 64 MiB, x4).
sizes=${SIZES:-"-b 4K -e 64M -f 4"}

REPS=${REPS:-3}
# median FILE: per size (column 1), the row with the median time (column 2).
median() {
	sort -k1,1n -k2,2g "$1" | awk '
		function out() { if (n) print row[int((n + 1) / 2)] }
		$1 != s { out(); s = $1; n = 0 }
		{ row[++n] = $0 }
		END { out() }'
}
# paired UREP MREP: per size, the median over runs of uroce's busbw / MPI's
# busbw in the same run (lines "SIZE:RUN BUSBW"): the machine drifts
# between a quiet and a slow state for minutes, and run i of both ran in
# the same minutes.
paired() {
	join <(sort "$1") <(sort "$2") |
		awk '{split($1, k, ":"); if ($3 > 0) print k[1], $2 / $3}' |
		sort -k1,1n -k2,2g | awk '
		function out() { if (n) print s, (n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2) }
		$1 != s { out(); s = $1; n = 0 }
		{ v[++n] = $2 }
		END { out() }'
}
for op in allreduce alltoall; do
	for np in 2 4; do
		: >"$tmp/u.all"
		: >"$tmp/m.all"
		: >"$tmp/u.rep"
		: >"$tmp/m.rep"
		: >"$tmp/udp.all"
		: >"$tmp/sm.all"
		for rep in $(seq "$REPS"); do
			echo "== $op, $np ranks, run $rep/$REPS"
			timeout 1200 $B/uroce-launch -n $np --timeout 1200 --no-prefix $B/uroce-coll-perf \
				$sizes -n "$ITERS" -w "$WARMUP" -o $op | tee "$tmp/u.log"
			awk '!/^#/ && NF >= 9 {print $1, $6, $8}' "$tmp/u.log" >>"$tmp/u.all"
			awk -v r=$rep '!/^#/ && NF >= 9 {print $1 ":" r, $8}' "$tmp/u.log" >>"$tmp/u.rep"
			timeout 1200 mpirun --allow-run-as-root --oversubscribe --mca btl tcp,self --mca pml ob1 \
				--bind-to core:overload-allowed --map-by core \
				-np $np $B/../bench/coll-mpi-perf $sizes -n "$ITERS" -w "$WARMUP" -o $op | tee "$tmp/m.log"
			awk '!/^#/ && NF >= 5 {print $1, $3, $5}' "$tmp/m.log" >>"$tmp/m.all"
			awk -v r=$rep '!/^#/ && NF >= 5 {print $1 ":" r, $5}' "$tmp/m.log" >>"$tmp/m.rep"
			timeout 1200 $B/uroce-launch -n $np --timeout 1200 --no-prefix --no-shm $B/uroce-coll-perf \
				$sizes -n "$ITERS" -w "$WARMUP" -o $op | tee "$tmp/u.log"
			awk '!/^#/ && NF >= 9 {print $1, $6, $8}' "$tmp/u.log" >>"$tmp/udp.all"
			timeout 1200 mpirun --allow-run-as-root --oversubscribe --mca btl vader,self --mca pml ob1 \
				--bind-to core:overload-allowed --map-by core \
				-np $np $B/../bench/coll-mpi-perf $sizes -n "$ITERS" -w "$WARMUP" -o $op | tee "$tmp/m.log"
			awk '!/^#/ && NF >= 5 {print $1, $3, $5}' "$tmp/m.log" >>"$tmp/sm.all"
		done
		median "$tmp/u.all" >"$tmp/uroce-$op-$np.dat"
		median "$tmp/m.all" >"$tmp/mpi-$op-$np.dat"
		paired "$tmp/u.rep" "$tmp/m.rep" >"$tmp/paired-$op-$np.dat"
		median "$tmp/udp.all" >"$tmp/udp-$op-$np.dat"
		median "$tmp/sm.all" >"$tmp/sm-$op-$np.dat"
	done
done

{
	echo "# Collectives: liburoce_coll vs Open MPI ($day)"
	echo
	echo "\`bench/coll.sh $ITERS\` at $(git rev-parse --short HEAD), $(nproc) cores ($(uname -r)),"
	echo "$(mpirun --version | head -1). $REPS runs each, uroce and MPI alternating; per size the"
	echo "median run (by time) of $ITERS timed iterations after $WARMUP warm-up calls;"
	echo "float32 sum, out of place; time = slowest rank's average per iteration."
	echo "busbw (GB/s) with the nccl-tests factors: allreduce 2(n-1)/n, alltoall (n-1)/n."
	echo "uroce/MPI compares the two medians; *paired* is the median over runs of"
	echo "uroce's busbw / MPI's in the same run (uroce's run i and MPI's run i ran"
	echo "back to back), which a machine drifting between states does not skew."
	echo "uroce: every rank is its own uroce device on 127.0.1.x, uroce-launch's"
	echo "default: the devices exchange their packets through shared memory"
	echo "(UROCE_SHM=1, software transport, no ICRC); Open MPI: \`--mca btl tcp,self"
	echo "--mca pml ob1\` (plain TCP sockets over loopback). Same runs, last two"
	echo "columns: uroce with \`--no-shm\` (RoCEv2 in UDP over loopback) and Open MPI's"
	echo "shared-memory BTL (\`--mca btl vader,self\`), busbw of their median run."
	echo "Both bind each rank to one CPU, round"
	echo "robin when ranks outnumber CPUs (mpirun: \`--bind-to core:overload-allowed"
	echo "--map-by core\`). All ranks share the machine's cores with the engine"
	echo "threads (and whatever else ran at the time)."
	for op in allreduce alltoall; do
		for np in 2 4; do
			echo
			echo "## $op, $np ranks"
			echo
			echo "| size (B) | uroce time (us) | uroce busbw | MPI time (us) | MPI busbw | uroce/MPI | paired | uroce UDP busbw | MPI sm busbw |"
			echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
			join "$tmp/uroce-$op-$np.dat" "$tmp/mpi-$op-$np.dat" | join - "$tmp/paired-$op-$np.dat" |
				join - "$tmp/udp-$op-$np.dat" | join - "$tmp/sm-$op-$np.dat" |
				awk '{printf "| %s | %.1f | %.4f | %.1f | %.4f | %.2f | %.2f | %.4f | %.4f |\n", $1, $2, $3, $4, $5, ($5 > 0 ? $3 / $5 : 0), $6, $8, $10}'
		done
	done
	echo
	echo "![busbw vs size]($name.png)"
} >"$md"

plot "$tmp" "$png" "$day"
echo "wrote $md and $png"
