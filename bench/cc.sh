#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Two flows through a congested ECN-marking switch port, with DCQCN and with
# UROCE_CC=none: per-QP rate over time (CSV from uroce-stat --csv, the
# switch queue from uroce-nfq --report) and a PNG (gnuplot).
#   bench/cc.sh [BUILDDIR]            run tests/cc/cc_lab.sh and plot
#   bench/cc.sh --plot DIR            plot CSVs already in DIR
# Results: bench/results/<date>-cc-*.{csv,txt,png}. Needs root (the lab).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
OUT=$TOP/bench/results
DATE=$(date +%F)
if [[ ${1:-} == --plot ]]; then
	SRC=$2
else
	SRC=$(mktemp -d /tmp/uroce-cc-bench.XXXXXX)
	CC_OUT=$SRC "$TOP/tests/cc/cc_lab.sh" "${1:-$TOP/build}" || true
fi
mkdir -p "$OUT"
for m in dcqcn none; do
	[[ -f $SRC/cc-$m-rates.csv ]] || continue
	# Sender QPs only (they transmit data): time, addr, Mbit/s, DCQCN Mbit/s.
	awk -F, 'NR > 1 && $4 ~ /^10\.201\.[12]\.2$/ && $6 > 1e6 {
		printf "%s,%s,%.2f,%.2f\n", $1, $4, $6 / 1e6, $8 / 1e6 }' \
		"$SRC/cc-$m-rates.csv" >"$OUT/$DATE-cc-$m-flows.csv"
	for h in 1 2; do
		grep ",10\.201\.$h\.2," "$OUT/$DATE-cc-$m-flows.csv" >"$SRC/$m-flow$h.csv" || true
	done
	awk -F, '{ printf "%.3f,%d\n", $1 / 1e6, $2 }' "$SRC/cc-$m-queue.csv" \
		>"$OUT/$DATE-cc-$m-queue.csv"
	cp "$SRC/cc-$m-summary.txt" "$OUT/$DATE-cc-$m-summary.txt"
	cp "$SRC/cc-$m-nfq.txt" "$OUT/$DATE-cc-$m-switch.txt"
done
command -v gnuplot >/dev/null || { echo "gnuplot not installed: CSVs only"; exit 0; }
gnuplot <<GP
set terminal pngcairo size 1200,800 font ",10"
set output "$OUT/$DATE-cc.png"
set datafile separator ","
set multiplot layout 2,2
set xlabel "time (s)"
set ylabel "Mbit/s"
set yrange [0:*]
f(m, h) = sprintf("$SRC/%s-flow%d.csv", m, h)
q(m) = sprintf("$OUT/$DATE-cc-%s-queue.csv", m)
do for [m in "dcqcn none"] {
  set title sprintf("%s: per-QP send rate (100 ms samples), port 100 Mbit/s", m)
  set yrange [0:300]
  plot f(m, 1) using 1:3 with lines lw 1.5 title "flow 1 (h1)", \
       f(m, 2) using 1:3 with lines lw 1.5 title "flow 2 (h2)", \
       f(m, 1) using 1:(\$4 > 0 ? \$4 : 1/0) with points pt 7 ps 0.4 title "DCQCN RC flow 1", \
       f(m, 2) using 1:(\$4 > 0 ? \$4 : 1/0) with points pt 7 ps 0.4 title "DCQCN RC flow 2"
}
set yrange [0:*]
set ylabel "bytes"
do for [m in "dcqcn none"] {
  set title sprintf("%s: switch queue (Kmin 20 kB, Kmax 100 kB, buffer 450 kB)", m)
  plot q(m) using 1:2 with lines title "queue"
}
unset multiplot
GP
echo "wrote $OUT/$DATE-cc.png"
