#!/bin/sh
# One training step (bench/sim_train_trace.py: PP sends, skewed MoE
# all-to-all(v), per-layer DP ring buckets overlapping the backward) on a
# k=16 fat-tree (1024 hosts: pp 4 x dp 8 x ep 32) and a k=32 one (8192
# hosts: pp 8 x dp 16 x ep 64, a quarter of the bytes per host), for lb
# single, spray and adaptive with DCQCN (and Swift: CCS). K=32full is the
# k=32 fat-tree with the k=16 bytes per host (148 GiB). One simulation at
# a time, nice -n 5, each timed by /usr/bin/time -v and cut after TIMEOUT
# seconds (rc 124). Results: bench/results/2026-12-06-sim-scale.md,
# -sim-rail.md, -sim3.md.
#   bench/sim_train.sh [BUILD_DIR] [OUT_DIR]
# Env: KS ("16 32"; also 32full), LBS ("single spray adaptive"),
#   CCS ("dcqcn"; also swift), SEED (1), TIMEOUT (660), CFG (a config
#   file read first, e.g. fail/restore lines), SUFFIX (of the run's
#   files, e.g. _fail), NICE (5).
set -eu
B=${1:-build}
OUT=${2:-bench/results/sim}
KS=${KS:-16 32}
LBS=${LBS:-single spray adaptive}
SEED=${SEED:-1}
CCS=${CCS:-dcqcn}
TIMEOUT=${TIMEOUT:-660}
CFG=${CFG:-}
SUFFIX=${SUFFIX:-}
NICE=${NICE:-5}
SIM=$B/bin/uroce-sim
HERE=$(dirname "$0")
mkdir -p "$OUT"
for K in $KS; do
  T=$OUT/train_k$K.tr
  case $K in
  16) /usr/bin/python3 "$HERE/sim_train_trace.py" --pp 4 --dp 8 --ep 32 \
        --layers 1 --micro 2 --moe-bytes 524288 --pp-bytes 2097152 \
        --dp-bytes 4194304 --seed "$SEED" -o "$T" ;;
  32full) /usr/bin/python3 "$HERE/sim_train_trace.py" --pp 8 --dp 16 --ep 64 \
        --layers 1 --micro 2 --moe-bytes 524288 --pp-bytes 2097152 \
        --dp-bytes 4194304 --seed "$SEED" -o "$T" ;;
  32) /usr/bin/python3 "$HERE/sim_train_trace.py" --pp 8 --dp 16 --ep 64 \
        --layers 1 --micro 2 --moe-bytes 131072 --pp-bytes 524288 \
        --dp-bytes 1048576 --seed "$SEED" -o "$T" ;;
  *) echo "sim_train.sh: k=$K: no layout (16, 32 or 32full)" >&2; exit 2 ;;
  esac
  for CC in $CCS; do
  for LB in $LBS; do
    P=$OUT/train_k${K}_$LB
    [ "$CC" = dcqcn ] || P=${P}_$CC
    P=$P$SUFFIX
    echo "== train k=$K lb=$LB cc=$CC seed=$SEED" >&2
    rc=0
    /usr/bin/time -v -o "$P.time" timeout "$TIMEOUT" nice -n "$NICE" "$SIM" \
      ${CFG:+-c "$CFG"} -s k=${K%full} -w trace -s trace="$T" --lb $LB -s cc=$CC \
      --seed "$SEED" --progress=30 -o "$P" > "$P.txt" 2> "$P.progress" || rc=$?
    echo "rc=$rc" >> "$P.txt"
    rm -f "${P}_flows.csv" "${P}_links.csv"
    cat "$P.txt"
    grep -E "Elapsed|Maximum resident|User time|System time" "$P.time" >&2
  done
  done
  [ -n "${KEEP_TRACE:-}" ] || rm -f "$T"
done
