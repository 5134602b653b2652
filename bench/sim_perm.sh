#!/bin/sh
# Speed against htsim's figures (docs/results.md "Speed"): a random
# permutation of 2 MB flows (every host sends to one other, no fixed
# points), single-path ECMP, 100 Gb/s links with 1 us per hop, on a k=16
# (1024 hosts) and a k=8 (128 hosts) fat-tree; DCQCN (the default) and
# cc none. One simulation at a time, timed by /usr/bin/time -v.
#   bench/sim_perm.sh [BUILD_DIR] [OUT_DIR]
# Env: KS ("16 8"), CCS ("dcqcn none"), BYTES (2000000), SEED (1).
set -eu
B=${1:-build}
OUT=${2:-bench/results/sim}
KS=${KS:-16 8}
CCS=${CCS:-dcqcn none}
BYTES=${BYTES:-2000000}
SEED=${SEED:-1}
SIM=$B/bin/uroce-sim
mkdir -p "$OUT"
CSV=$OUT/perm.csv
echo "k,hosts,cc,completion_us,fct_mean_us,fct_p99_us,events,hops,wall_s,cpu_s,events_per_cpu_s,hops_per_cpu_s,max_rss_kb" > "$CSV"
for K in $KS; do
  for CC in $CCS; do
    P=$OUT/perm_k${K}_$CC
    echo "== permutation k=$K cc=$CC bytes=$BYTES seed=$SEED" >&2
    /usr/bin/time -v -o "$P.time" "$SIM" -s k=$K -w permutation \
      -s bytes=$BYTES -s host_gbps=100 -s fabric_gbps=100 \
      -s link_delay_ns=1000 -s cc=$CC --lb single --seed $SEED \
      -o "$P" > "$P.txt"
    rm -f "${P}_flows.csv" "${P}_links.csv"
    cat "$P.txt"
    grep -E "Elapsed|Maximum resident|User time|System time" "$P.time" >&2
    tail -1 "${P}_summary.csv" | awk -F, -v k=$K -v cc=$CC \
      '{printf "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%.0f,%.0f,%s\n", k,$1,cc,$4,$5,$6,$18,$19,$20,$21,$18/$21,$19/$21,$22}' >> "$CSV"
  done
done
column -s, -t "$CSV" >&2 || true
