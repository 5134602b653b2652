#!/bin/sh
# Headline experiment (docs/results.md): ring allreduce and MoE all-to-all
# on a k=16 fat-tree (1024 hosts, 100 Gb/s, DCQCN + ECN + PFC on), each
# under single-path ECMP, oblivious spraying and adaptive spraying.
#   bench/sim_headline.sh [BUILD_DIR] [OUT_DIR]
# Env: K (16), A2A_BYTES (4K), RING_BYTES (4M), PATHS (8), SEED (1).
set -eu
B=${1:-build}
OUT=${2:-bench/results/sim}
K=${K:-16}
A2A_BYTES=${A2A_BYTES:-4K}
RING_BYTES=${RING_BYTES:-4M}
PATHS=${PATHS:-8}
SEED=${SEED:-1}
SIM=$B/bin/uroce-sim
mkdir -p "$OUT"
CSV=$OUT/headline.csv
echo "workload,lb,hosts,flows,completion_us,fct_mean_us,fct_p99_us,host_util,fabric_util,max_link_util,drops,ecn_marks,cnps,pause_frames,paused_us,retransmits,timeouts,events,hops,wall_s,cpu_s,max_rss_kb" > "$CSV"
for W in alltoall ring; do
  if [ $W = ring ]; then BYTES=$RING_BYTES; else BYTES=$A2A_BYTES; fi
  for LB in single spray adaptive; do
    P=$OUT/${W}_$LB
    echo "== $W $LB (k=$K, bytes=$BYTES, paths=$PATHS, seed=$SEED)" >&2
    "$SIM" -s k=$K -w $W -s bytes=$BYTES -s placement=random --lb $LB \
      -s paths=$PATHS --seed $SEED -o "$P" --progress > "$P.txt"
    cat "$P.txt"
    tail -1 "${P}_summary.csv" | awk -F, -v w=$W -v l=$LB \
      '{print w","l","$1","$2","$4","$5","$6","$7","$8","$9","$10","$11","$12","$13","$14","$16","$17","$18","$19","$20","$21","$22}' >> "$CSV"
  done
done
column -s, -t "$CSV" >&2 || true
# Plots: completion time and utilisation per mode, FCT CDFs.
if command -v gnuplot >/dev/null; then
  gnuplot <<GP
set terminal pngcairo size 900,420
set datafile separator ","
set output "$OUT/headline.png"
set multiplot layout 1,2
set style data histograms
set style fill solid 0.7
set key top left
set title "collective completion time (us), k=$K fat-tree"
plot "< grep alltoall $CSV" using 5:xtic(2) title "all-to-all", \
     "< grep ring $CSV" using 5 title "ring allreduce"
set title "fabric utilisation"
set yrange [0:1]
plot "< grep alltoall $CSV" using 9:xtic(2) title "all-to-all", \
     "< grep ring $CSV" using 9 title "ring allreduce"
unset multiplot
set output "$OUT/fct_cdf.png"
set style data lines
set title "flow completion time CDF, all-to-all"
set xlabel "FCT (us)"
set yrange [0:1]
plot for [L in "single spray adaptive"] \
  "< tail -n +2 $OUT/alltoall_".L."_flows.csv | cut -d, -f7 | sort -g | awk '{a[NR]=\$1} END {for (i=1;i<=NR;i++) print a[i]\",\"i/NR}'" using 1:2 title L
GP
fi
