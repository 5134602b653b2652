#!/bin/sh
# Plots of issue 41's runs (gnuplot PNGs): bench/sim_a2a_moe.sh's CSV and
# bench/sim_train.sh's per-run summaries (train_k*_LB[_swift][_fail|
# _restore].txt) in DIR, for k=16 and k=32:
#   PREFIX-completion.png  completion of spray and adaptive relative to
#                          single path (same workload, cc and failures);
#                          the line at 0.58 is "-42 %"
#   PREFIX-util.png        mean utilisation of the job's host links
#                          (bars) and of the busiest link (points), per
#                          lb; the line is 98 %
# DIR/sim3.csv gets every row (the CSV's and the training steps').
#   bench/sim3_plot.sh DIR PREFIX
set -eu
D=$1
PREFIX=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
ALL=$D/sim3.csv
head -1 "$D/a2a_moe.csv" > "$ALL"
tail -n +2 "$D/a2a_moe.csv" >> "$ALL"
for f in "$D"/train_k*.txt; do
  [ -f "$f" ] || continue
  b=$(basename "$f" .txt)
  awk -v b="$b" '
    BEGIN {n = split(b, p, "_"); k = p[2]; sub(/^k/, "", k); lb = p[3]
      cc = "dcqcn"; fl = "none"
      for (i = 4; i <= n; i++) if (p[i] == "swift") cc = "swift"; else fl = p[i]
      w = "train"; if (k == "32full") {k = 32; w = "train"} else if (k == "32") w = "train_q"}
    /^hosts/ {fls=$8}
    /^completion_us/ {c=$2}
    /^util/ {uh=$3; uf=$5; um=$7}
    /^drops/ {d=$2; m=$4; pf=$8}
    /^retransmits/ {r=$2; t=$4}
    /^events/ {e=$2; cpu=$8; ev=$10; rss=$14; ws=$6}
    /^rc=/ {rc=substr($0, 4); sub(/ .*/, "", rc)}
    END {if (c != "") printf "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n",
      k,w,lb,cc,fl,fls,c,uh,uf,um,d,m,pf,r,t,e,cpu,ev,rss,ws,rc}' "$f" >> "$ALL"
done
# job ranks per (k, workload): the host-link utilisation of the job is
# the fabric's (over every host) x hosts / ranks
for K in 16 32; do
  awk -F, -v K="$K" '
    function ranks(k, w) {
      if (w == "a2a64k") return k == 16 ? 256 : 512
      if (w == "a2a1m") return 128
      if (w == "a2a64kr") return 256
      if (w == "a2a1mr") return 64
      if (w == "moe") return 1024
      return k * k * k / 4 }
    NR > 1 && $1 == K && $21 == 0 {
      key = $2 "|" $4 "|" $5
      if (!(key in seen)) {seen[key] = 1; order[n++] = key}
      c[key, $3] = $7; u[key, $3] = $8 * K * K * K / 4 / ranks(K, $2); m[key, $3] = $10 }
    END {
      for (i = 0; i < n; i++) {
        key = order[i]; split(key, p, "|")
        s = c[key, "single"]
        lab = p[1] " " (p[2] == "dcqcn" ? "DCQCN" : "Swift") (p[3] == "none" ? "" : " " p[3]) \
          (s ? sprintf(" (%.2f ms)", s / 1000) : "")
        wo = index("a2a64k a2a1m moe train train_q a2a64kr a2a1mr", p[1])
        fo = p[3] == "none" ? 0 : p[3] == "fail" ? 1 : 2
        printf "%03d%d%s \"%s\" %s %s %s %s %s %s %s %s\n", wo, fo, p[2], lab,
          (s && c[key, "spray"]) ? c[key, "spray"] / s : "NaN",
          (s && c[key, "adaptive"]) ? c[key, "adaptive"] / s : "NaN",
          ((key, "single") in u) ? u[key, "single"] : "NaN",
          ((key, "spray") in u) ? u[key, "spray"] : "NaN",
          ((key, "adaptive") in u) ? u[key, "adaptive"] : "NaN",
          ((key, "single") in m) ? m[key, "single"] : "NaN",
          ((key, "spray") in m) ? m[key, "spray"] : "NaN",
          ((key, "adaptive") in m) ? m[key, "adaptive"] : "NaN" }
    }' "$ALL" | sort -k1,1 -s | cut -d" " -f2- > "$TMP/k$K.dat"
done
gnuplot <<EOG
set terminal pngcairo size 1400,900 font ",10" noenhanced
set output "$PREFIX-completion.png"
set multiplot layout 2,1
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set grid ytics
set yrange [0:1.4]
set ylabel "completion / single path's"
set xtics rotate by -35 scale 0
set rmargin 14
set key top right
do for [k in "16 32"] {
  set title sprintf("k=%s fat-tree (%s hosts): completion of spray and adaptive against single path; dashed: -42 %%", k, k eq "16" ? "1024" : "8192")
  f = sprintf("$TMP/k%s.dat", k)
  plot f using 2:xtic(1) title "spray" lc rgb "#4477aa", \
       '' using 3 title "adaptive" lc rgb "#ee6677", \
       0.58 with lines dt 2 lc rgb "black" notitle, 1 with lines lc rgb "gray" notitle
}
unset multiplot
set output "$PREFIX-util.png"
set multiplot layout 2,1
set yrange [0:1.1]
set key top center
set ylabel "utilisation"
do for [k in "16 32"] {
  set title sprintf("k=%s: mean utilisation of the job's host links (bars) and the busiest link (points: single, spray, adaptive); dashed: 98 %%", k)
  f = sprintf("$TMP/k%s.dat", k)
  plot f using 4:xtic(1) title "single" lc rgb "#bbbbbb", \
       '' using 5 title "spray" lc rgb "#4477aa", \
       '' using 6 title "adaptive" lc rgb "#ee6677", \
       '' using (\$0-0.27):7 with points pt 7 lc rgb "#555555" notitle, \
       '' using (\$0):8 with points pt 7 lc rgb "#224488" notitle, \
       '' using (\$0+0.27):9 with points pt 7 lc rgb "#aa3344" notitle, \
       0.98 with lines dt 2 lc rgb "black" notitle
}
unset multiplot
EOG
cat "$TMP/k16.dat" "$TMP/k32.dat" >&2
