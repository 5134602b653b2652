#!/bin/sh
# One training step (bench/sim_train_trace.py, the k=16 layout of
# bench/sim_train.sh: pp 4 x dp 8 x ep 32, 1024 GPUs) on a k=16 fat-tree
# and on rail-optimised fabrics of the same 1024 NICs (8 rails, groups of
# 16 servers, 64 rail leaves): 16 spines (1:1), 8 spines (2:1
# oversubscribed), 16 spines with 8 leaf-spine links failed from the start,
# and the same 8 failing at 0.5 ms (stage 0 busy) and rerouted 1 ms later; lb single and
# adaptive, DCQCN. One simulation at a time under nice; each timed by
# /usr/bin/time and cut at 11 minutes. Results:
# bench/results/2026-12-06-sim-rail.md.
#   bench/sim_rail.sh [BUILD_DIR] [OUT_DIR]
# Env: LBS ("single adaptive"), SEED (1), RUNS (all: "ft rail rail2 fail failmid").
set -eu
B=${1:-build}
OUT=${2:-bench/results/sim}
LBS=${LBS:-single adaptive}
SEED=${SEED:-1}
RUNS=${RUNS:-ft rail rail2 fail failmid}
SIM=$B/bin/uroce-sim
HERE=$(dirname "$0")
mkdir -p "$OUT"
T=$OUT/train_rail.tr
/usr/bin/python3 "$HERE/sim_train_trace.py" --pp 4 --dp 8 --ep 32 \
  --layers 1 --micro 2 --moe-bytes 524288 --pp-bytes 2097152 \
  --dp-bytes 4194304 --seed "$SEED" -o "$T"
for R in $RUNS; do
  C=$OUT/rail_$R.cfg
  case $R in
  ft) printf 'topology fattree\nk 16\n' > "$C" ;;
  rail|rail2|fail|failmid)
    # 64-port spines: PFC headroom for 64 ports needs 22.5 MB (the k=16
    # fat-tree's 16-port switches have 12 MB, 768 KB a port; so do the
    # 32-port leaves here)
    printf 'topology rail\nrails 8\nhosts_per_leaf 16\nrail_groups 8\nbuffer_kb 24576\n' > "$C"
    if [ $R = rail2 ]; then echo "spines 8" >> "$C"; else echo "spines 16" >> "$C"; fi
    # leaf i's link to spine i for the 8 leaves of group 0 (one per rail)
    for i in 0 1 2 3 4 5 6 7; do
      case $R in
      fail) echo "fail e$i c$i" >> "$C" ;;
      failmid) echo "fail e$i c$i at=500" >> "$C" ;;
      esac
    done
    if [ $R = failmid ]; then echo "reroute_us 1000" >> "$C"; fi ;;
  *) echo "sim_rail.sh: unknown run $R" >&2; exit 2 ;;
  esac
  for LB in $LBS; do
    P=$OUT/rail_${R}_$LB
    echo "== $R lb=$LB seed=$SEED" >&2
    rc=0
    /usr/bin/time -v -o "$P.time" timeout 660 nice -n 5 "$SIM" -c "$C" \
      -w trace -s trace="$T" --lb $LB -s cc=dcqcn --seed "$SEED" \
      > "$P.txt" || rc=$?
    echo "rc=$rc" >> "$P.txt"
    cat "$P.txt"
  done
done
rm -f "$T"
