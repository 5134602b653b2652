#!/bin/sh
# Plot of bench/sim_workloads.sh's CSV: FCT slowdown p50 and p99 per flow-
# size bucket, WebSearch and FB_Hadoop at 50 % load, one line per
# algorithm, PFC off (gnuplot, PNG).
#   bench/sim_workloads_plot.sh CSV PNG [K]
set -eu
CSV=$1
PNG=$2
K=${3:-8}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
CCS="none mlx5 uroce swift predict"
for W in websearch50 fb_hadoop50; do
  for CC in $CCS; do
    # bucket index, p50, p99 (buckets without flows are left out)
    awk -F, -v k="$K" -v cc="$CC" -v w="$W" '
      $1==k && $2==cc && $3==w && $4=="off" {
        for (b = 0; b < 5; b++) if ($(11+2*b) > 0) print b, $(11+2*b), $(12+2*b) }' \
      "$CSV" > "$TMP/${W}_$CC.dat"
  done
done
gnuplot <<EOG
set terminal pngcairo size 1200,500 font ",10" noenhanced
set output "$PNG"
set multiplot layout 1,2
set logscale y
set grid ytics
set key top right
set ylabel "FCT slowdown (FCT / ideal FCT)"
set xtics ("<10K" 0, "10K-100K" 1, "100K-1M" 2, "1M-10M" 3, ">=10M" 4)
set xrange [-0.3:4.3]
set xlabel "flow size (bytes)"
do for [w in "websearch50 fb_hadoop50"] {
  set title sprintf("%s, k=$K, PFC off: p99 (solid), p50 (dashed)", w)
  plot for [i=1:5] sprintf("$TMP/%s_%s.dat", w, word("$CCS", i)) using 1:3 with linespoints lw 2 lc i title word("$CCS", i), \
       for [i=1:5] sprintf("$TMP/%s_%s.dat", w, word("$CCS", i)) using 1:2 with lines dt 2 lc i notitle
}
unset multiplot
EOG
