#!/bin/sh
# The simulator's speed, one binary against another (e.g. main's and a
# branch's uroce-sim), back to back on the same machine: each round runs
# every scenario with both binaries, alternating which goes first, and
# checks that the two outputs are identical (summary, flows.csv,
# links.csv; only the events line, with its times, may differ). Prints
# one CSV row per run and the medians of CPU seconds, events and hops
# per CPU second. Results: bench/results/2026-12-07-sim4.md.
#   bench/sim_speed.sh OLD_SIM NEW_SIM [OUT_DIR]
# Env: ROUNDS (3), WS ("a2a64k train1"; also train_spray, a2a64k_k32:
#   the packed all-to-all on 8192 hosts), NICE (5).
set -eu
OLD=$1
NEW=$2
OUT=${3:-bench/results/sim/speed}
ROUNDS=${ROUNDS:-3}
WS=${WS:-a2a64k train1}
NICE=${NICE:-5}
HERE=$(dirname "$0")
mkdir -p "$OUT"
T=$OUT/train_k16.tr
case " $WS " in *" train"*)
  [ -f "$T" ] || /usr/bin/python3 "$HERE/sim_train_trace.py" --pp 4 --dp 8 \
    --ep 32 --layers 1 --micro 2 --moe-bytes 524288 --pp-bytes 2097152 \
    --dp-bytes 4194304 --seed 1 -o "$T" ;;
esac
CSV=$OUT/speed.csv
echo "round,workload,binary,events,hops,cpu_s,ev_per_cpu_s,hops_per_cpu_s,rss_mb,load" > "$CSV"
run() { # ROUND W WHICH BIN
  case $2 in
  a2a64k) A="-s k=16 -w alltoall -s ranks=256 -s placement=linear -s bytes=65536 --lb spray" ;;
  a2a64k_k32) A="-s k=32 -w alltoall -s ranks=512 -s placement=linear -s bytes=65536 --lb spray" ;;
  train1) A="-s k=16 -w trace -s trace=$T --lb single" ;;
  train_spray) A="-s k=16 -w trace -s trace=$T --lb spray" ;;
  *) echo "sim_speed.sh: unknown workload $2" >&2; exit 2 ;;
  esac
  P=$OUT/$2_$3
  # shellcheck disable=SC2086
  nice -n "$NICE" "$4" $A --seed 1 -o "$P" > "$P.txt"
  awk -v r="$1" -v w="$2" -v b="$3" -v l="$(cut -d' ' -f1 /proc/loadavg)" \
    '/^events/ {printf "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", r, w, b, $2, $4, $8, $10, $12, $14, l}' \
    "$P.txt" >> "$CSV"
}
for R in $(seq 1 "$ROUNDS"); do
  for W in $WS; do
    if [ $((R % 2)) = 1 ]; then run "$R" "$W" old "$OLD"; run "$R" "$W" new "$NEW"
    else run "$R" "$W" new "$NEW"; run "$R" "$W" old "$OLD"; fi
    for f in .txt _flows.csv _links.csv; do
      if [ $f = .txt ]; then
        grep -v '^events' "$OUT/${W}_old.txt" > "$OUT/a.tmp"
        grep -v '^events' "$OUT/${W}_new.txt" > "$OUT/b.tmp"
      else
        cp "$OUT/${W}_old$f" "$OUT/a.tmp"; cp "$OUT/${W}_new$f" "$OUT/b.tmp"
      fi
      cmp -s "$OUT/a.tmp" "$OUT/b.tmp" || { echo "sim_speed.sh: $W: $f differs" >&2; exit 1; }
    done
    tail -2 "$CSV" >&2
  done
done
rm -f "$OUT"/*.tmp "$OUT"/*_flows.csv "$OUT"/*_links.csv "$OUT"/*_summary.csv "$T"
echo "workload,binary,runs,median_cpu_s,median_Mev_per_cpu_s,median_Mhops_per_cpu_s,identical"
for W in $WS; do
  for B in old new; do
    awk -F, -v w="$W" -v b="$B" '$2 == w && $3 == b {print $6, $4 / $6 / 1e6, $5 / $6 / 1e6}' "$CSV" |
      sort -n | awk -v w="$W" -v b="$B" '{c[NR] = $1; e[NR] = $2; h[NR] = $3}
        END {m = int((NR + 1) / 2); printf "%s,%s,%d,%.2f,%.2f,%.2f,yes\n", w, b, NR, c[m], e[m], h[m]}'
  done
done
