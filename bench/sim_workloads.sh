#!/bin/sh
# Issue 44's matrix in uroce-sim: cc none, DCQCN (profiles mlx5 and
# uroce), Swift and predict, PFC off and on, on a k-ary fat-tree (100 Gbit/s,
# 1 us per hop, single-path ECMP, --seed 1): the 2 MB permutation, 16:1
# and 64:1 incasts of 1 MiB, an MoE all-to-all (32 ranks placed at
# random, 256 KiB to each peer), and WebSearch and FB_Hadoop flow sizes
# (bench/workloads/) at 50 % load (at k=8 also 30 and 70 %, PFC off).
# Every run has the switches mark as the DCQCN paper (Kmin 5 KB, Kmax
# 200 KB, Pmax 1 %; MARK=sim: the simulator's 100/400 KB/0.2).
# One simulation at a time; figures depend on the seed only. A row that
# is already in the CSV is not run again (delete the CSV to start over).
#   bench/sim_workloads.sh [BUILD_DIR] [OUT_DIR]
# Env: KS ("8 16"), CCS ("none mlx5 uroce swift predict"), SEED (1), MARK (paper),
#   ARRIVE8_US (10000), ARRIVE16_US (3000): the Poisson arrivals' span,
#   QPF (off): on gives each Poisson flow an idle QP of its pair or a new
#   one (uroce-sim qp_per_flow; off: a pair's flows in order on one QP).
set -eu
B=${1:-build}
OUT=${2:-bench/results/sim/workloads}
KS=${KS:-8 16}
CCS=${CCS:-none mlx5 uroce swift predict}
SEED=${SEED:-1}
MARK=${MARK:-paper}
QPF=${QPF:-off}
SRC=$(cd "$(dirname "$0")/.." && pwd)
SIM="nice -n 5 $B/bin/uroce-sim"
mkdir -p "$OUT"
CSV=$OUT/workloads.csv
[ -f "$CSV" ] || echo "k,cc,workload,pfc,flows,completion_us,fct_mean_us,fct_p99_us,slow_p50,slow_p99,lt10k_p50,lt10k_p99,lt100k_p50,lt100k_p99,lt1m_p50,lt1m_p99,lt10m_p50,lt10m_p99,ge10m_p50,ge10m_p99,drops,queue_p50_kb,queue_p99_kb,max_queue_kb,host_util,jain,offered_load,cnps,retransmits,timeouts,wall_s" > "$CSV"
case $MARK in
  paper) MARKARGS="-s kmin_kb=5 -s kmax_kb=200 -s pmax=0.01" ;;
  sim) MARKARGS="" ;;
  *) echo "MARK: paper or sim" >&2; exit 2 ;;
esac
ccargs() { # none | swift | predict | auto | dcqcn-rtt | <DCQCN profile>
  case $1 in
    none|swift|predict|auto|dcqcn-rtt) echo "-s cc=$1" ;;
    *) echo "-s cc=dcqcn -s dcqcn_profile=$1" ;;
  esac
}
one() { # K CC WORKLOAD PFC args...
  K=$1; CC=$2; W=$3; PFC=$4; shift 4
  if grep -q "^$K,$CC,$W,$PFC," "$CSV"; then return 0; fi
  T=$OUT/k${K}_${CC}_${W}_pfc$PFC.txt
  echo "== k=$K cc=$CC $W pfc=$PFC" >&2
  $SIM -s k=$K --seed "$SEED" --lb single -s pfc="$PFC" $MARKARGS $(ccargs "$CC") "$@" > "$T"
  awk -v k="$K" -v cc="$CC" -v w="$W" -v pfc="$PFC" '
    /^hosts/ {split($8, a, "/"); fl=a[2]}
    /^completion_us/ {c=$2} /^fct_us/ {m=$3; p=$7}
    /^slowdown / {s50=$3; s99=$5}
    /^slowdown_bucket/ {b[nb++]=$6","$8}
    /^util/ {u=$3}
    /^queue_kb/ {q50=$3; q99=$5}
    /^jain/ {j=$2; o=$4}
    /^drops/ {d=$2; mq=$NF; for (i=1;i<NF;i++) if ($i=="cnps") n=$(i+1)}
    /^retransmits/ {r=$2; t=$4}
    /^events/ {for (i=1;i<NF;i++) if ($i=="wall_s") ws=$(i+1)}
    END {printf "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n",
      k,cc,w,pfc,fl,c,m,p,s50,s99,b[0],b[1],b[2],b[3],b[4],d,q50,q99,mq,u,j,o,n,r","t,ws}' "$T" >> "$CSV"
  tail -1 "$CSV" >&2
}
for K in $KS; do
  if [ "$K" -ge 16 ]; then ARR=${ARRIVE16_US:-3000}; else ARR=${ARRIVE8_US:-10000}; fi
  for CC in $CCS; do
    for PFC in off on; do
      one "$K" "$CC" permutation "$PFC" -w permutation -s bytes=2000000
      one "$K" "$CC" incast16 "$PFC" -w incast -s incast_senders=16
      one "$K" "$CC" incast64 "$PFC" -w incast -s incast_senders=64
      one "$K" "$CC" moe_a2a "$PFC" -w alltoall -s ranks=32 -s placement=random -s bytes=262144
      for D in websearch fb_hadoop; do
        one "$K" "$CC" "${D}50" "$PFC" -w poisson -s cdf="$SRC/bench/workloads/$D.cdf" -s load=0.5 -s arrive_us="$ARR" -s qp_per_flow="$QPF"
      done
    done
    if [ "$K" -lt 16 ]; then
      for D in websearch fb_hadoop; do
        for L in 30 70; do
          one "$K" "$CC" "$D$L" off -w poisson -s cdf="$SRC/bench/workloads/$D.cdf" -s load=0.$L -s arrive_us="$ARR" -s qp_per_flow="$QPF"
        done
      done
    fi
  done
done
column -s, -t "$CSV" >&2 || true
