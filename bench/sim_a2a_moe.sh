#!/bin/sh
# Issue 41: multi-packet all-to-all and skewed MoE all-to-all(v) on the
# k=16 (1024 hosts) and k=32 (8192 hosts) fat-trees, for lb single, spray
# and adaptive, DCQCN and Swift, healthy and with 8 aggregation-core links
# failing at 100 us (routed around 100 us later), permanently ("fail") or
# back at 600 us and in the routes again at 700 us ("restore").
# Workloads (seed 1):
#   a2a64k  all-to-all, 64 KiB per pair, among the first hosts (a job
#           packed on whole pods): k=16 256 ranks (4 pods, 4 GiB), k=32
#           512 ranks (2 pods, 16 GiB)
#   a2a1m   all-to-all among 128 ranks (k=16: 2 pods), 1 MiB per pair
#           (16 GiB)
#   a2a64kall  all-to-all among every host, 64 KiB per pair (k=16: 1024
#           ranks, 64 GiB)
#   a2a64kr, a2a1mr  the same scattered at random over the fabric: 256
#           ranks of 64 KiB (4 GiB), 64 ranks of 1 MiB (4 GiB)
#   moe     bench/sim_train_trace.py --forward-only: one MoE layer's
#           dispatch and combine, Zipf skew 1, 1 MiB per rank and
#           a2a; k=16: 32 groups of 32 (every host); k=32: 16 groups of
#           64 (1024 of the 8192 hosts: a subset of groups)
# One simulation at a time, nice -n 5; a row already in the CSV is not
# run again. Results: bench/results/2026-12-06-sim3.md.
#   bench/sim_a2a_moe.sh [BUILD_DIR] [OUT_DIR]
# Env: KS ("16 32"), WS ("a2a64k a2a1m moe"), LBS ("single spray adaptive"),
#   CCS ("dcqcn swift"), FAILS ("none fail restore"), FAILCC (dcqcn: the
#   cc of the failure runs), SEED (1), TIMEOUT (900), NICE (5), EXTRA
#   (more -s KEY=VALUE options, e.g. "-s timeout=6"; say so in SUFFIX),
#   SUFFIX (of the run's files and its workload column, e.g. _to6).
set -eu
B=${1:-build}
OUT=${2:-bench/results/sim/sim3}
KS=${KS:-16 32}
WS=${WS:-a2a64k a2a1m moe}
LBS=${LBS:-single spray adaptive}
CCS=${CCS:-dcqcn swift}
FAILS=${FAILS:-none fail restore}
FAILCC=${FAILCC:-dcqcn}
SEED=${SEED:-1}
TIMEOUT=${TIMEOUT:-900}
NICE=${NICE:-5}
EXTRA=${EXTRA:-}
SUFFIX=${SUFFIX:-}
HERE=$(dirname "$0")
SIM=$B/bin/uroce-sim
mkdir -p "$OUT"
CSV=$OUT/a2a_moe.csv
[ -f "$CSV" ] || echo "k,workload,lb,cc,fail,flows,completion_us,util_host,util_fabric,util_max,drops,ecn_marks,pauses,retransmits,timeouts,events,cpu_s,ev_per_cpu_s,rss_mb,wall_s,rc" > "$CSV"
failcfg() { # K FAIL FILE: 8 aggregation-core links (agg 0 of pods 0-7)
  : > "$3"
  [ "$2" = none ] && return 0
  h=$(($1 / 2))
  for p in 0 1 2 3 4 5 6 7; do
    echo "fail a$((p * h)) c$p at=100" >> "$3"
    [ "$2" = restore ] && echo "restore a$((p * h)) c$p at=600" >> "$3"
  done
  echo "reroute_us 100" >> "$3"
}
for K in $KS; do
  NH=$((K * K * K / 4))
  for W in $WS; do
    case $W in
    a2a64k) R=256; [ "$K" = 16 ] || R=512
      WARGS="-w alltoall -s ranks=$R -s placement=linear -s bytes=65536" ;;
    a2a1m) WARGS="-w alltoall -s ranks=128 -s placement=linear -s bytes=1048576" ;;
    a2a64kall) WARGS="-w alltoall -s placement=linear -s bytes=65536" ;;
    a2a64kr) WARGS="-w alltoall -s ranks=256 -s placement=random -s bytes=65536" ;;
    a2a1mr) WARGS="-w alltoall -s ranks=64 -s placement=random -s bytes=1048576" ;;
    moe)
      T=$OUT/moe_k$K.tr
      if [ "$K" = 16 ]; then G="--dp 32 --ep 32"; else G="--dp 16 --ep 64"; fi
      [ -f "$T" ] || /usr/bin/python3 "$HERE/sim_train_trace.py" --pp 1 $G \
        --layers 1 --micro 1 --moe-bytes 1048576 --skew 1 --forward-only \
        --place random --fabric-hosts $NH --seed "$SEED" -o "$T"
      WARGS="-w trace -s trace=$T" ;;
    *) echo "sim_a2a_moe.sh: unknown workload $W" >&2; exit 2 ;;
    esac
    for F in $FAILS; do
      if [ "$F" = none ]; then CL=$CCS; else CL=$FAILCC; fi
      for CC in $CL; do
        for LB in $LBS; do
          if grep -q "^$K,$W$SUFFIX,$LB,$CC,$F," "$CSV"; then continue; fi
          P=$OUT/k${K}_${W}${SUFFIX}_${LB}_${CC}_$F
          echo "== k=$K $W lb=$LB cc=$CC fail=$F" >&2
          rc=0
          failcfg "$K" "$F" "$P.cfg"
          /usr/bin/time -v -o "$P.time" timeout "$TIMEOUT" nice -n "$NICE" "$SIM" \
            -c "$P.cfg" -s k=$K $WARGS --lb $LB -s cc=$CC --seed "$SEED" $EXTRA \
            > "$P.txt" 2>&1 || rc=$?
          awk -v k="$K" -v w="$W$SUFFIX" -v lb="$LB" -v cc="$CC" -v f="$F" -v rc="$rc" '
            /^hosts/ {fl=$8}
            /^completion_us/ {c=$2}
            /^util/ {uh=$3; uf=$5; um=$7}
            /^drops/ {d=$2; m=$4; pf=$8}
            /^retransmits/ {r=$2; t=$4}
            /^events/ {e=$2; cpu=$8; ev=$10; rss=$14; ws=$6}
            END {printf "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n",
              k,w,lb,cc,f,fl,c,uh,uf,um,d,m,pf,r,t,e,cpu,ev,rss,ws,rc}' "$P.txt" >> "$CSV"
          tail -1 "$CSV" >&2
        done
      done
    done
  done
done
