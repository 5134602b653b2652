#!/bin/sh
# DCQCN profiles and Swift against no congestion control (docs/cc.md
# "Profiles", "Swift", docs/results.md): the 2 MB permutation (single-path
# ECMP, 100 Gbit/s, 1 us per hop) with PFC on and off, and a 16:1 incast
# (1 MiB each) without PFC, on a k-ary fat-tree, --seed 1; with INCAST32=1
# also a 32:1 incast. One simulation at a time; figures do not depend on
# the machine, only wall time does.
#   bench/sim_cc.sh [BUILD_DIR] [OUT_DIR]
# Env: KS ("8 16"), CCS ("none mlx5 uroce swift": none, swift, predict,
# auto (what two uroce ends run: Swift with no base on a fabric's round
# trip, docs/cc.md), dcqcn-rtt, or a DCQCN
# profile), SEED (1), INCAST32 (0).
set -eu
B=${1:-build}
OUT=${2:-bench/results/sim}
KS=${KS:-8 16}
CCS=${CCS:-none mlx5 uroce swift}
INCAST32=${INCAST32:-0}
SEED=${SEED:-1}
SIM="nice $B/bin/uroce-sim"
mkdir -p "$OUT"
CSV=$OUT/cc.csv
[ -f "$CSV" ] || echo "k,cc,workload,pfc,completion_us,fct_mean_us,fct_p99_us,drops,max_queue_kb,cnps,retransmits,timeouts" > "$CSV"
ccargs() { # none | swift | predict | auto | dcqcn-rtt | <DCQCN profile>
  case $1 in
    none|swift|predict|auto|dcqcn-rtt) echo "-s cc=$1" ;;
    *) echo "-s cc=dcqcn -s dcqcn_profile=$1" ;;
  esac
}
one() { # K CC WORKLOAD PFC args...
  K=$1; CC=$2; W=$3; PFC=$4; shift 4
  T=$OUT/cc_k${K}_${CC}_${W}_pfc$PFC.txt
  echo "== k=$K cc=$CC $W pfc=$PFC" >&2
  $SIM -s k=$K --seed $SEED -s pfc=$PFC $(ccargs $CC) "$@" > "$T"
  awk -v k=$K -v cc=$CC -v w=$W -v pfc=$PFC '
    /^completion_us/ {c=$2} /^fct_us/ {m=$3; p=$7}
    /^drops/ {d=$2; q=$NF; for (i=1;i<NF;i++) if ($i=="cnps") n=$(i+1)}
    /^retransmits/ {r=$2; t=$4}
    END {printf "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", k,cc,w,pfc,c,m,p,d,q,n,r,t}' "$T" >> "$CSV"
  tail -1 "$CSV" >&2
}
for K in $KS; do
  for CC in $CCS; do
    for PFC in on off; do
      one $K $CC permutation $PFC -w permutation -s bytes=2000000 --lb single
    done
    one $K $CC incast16 off -w incast -s incast_senders=16 --lb single
    [ "$INCAST32" = 1 ] &&
      one $K $CC incast32 off -w incast -s incast_senders=32 --lb single
  done
done
column -s, -t "$CSV" >&2 || true
