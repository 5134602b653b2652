#!/usr/bin/env bash
# rdma_cm connection setup over uroce, in one run:
#   bench/cm.sh [N]   (default 500 connections)
# Runs bench/cm_connect.c (server on 127.0.0.2, client on 127.0.0.3, then
# both on 127.0.0.2: MADs forwarded between the processes) and prints setup
# latency (rdma_connect -> ESTABLISHED, median/p99) and connections per
# second (resolve + connect + disconnect + destroy). The table goes to
# bench/results/<date>-cm.md.
set -uo pipefail
cd "$(dirname "$0")/.."
N=${1:-500}
B=build/bin
RUN=$B/uroce-run
res=bench/results/$(date +%F)-cm.md
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

one() { # $1 client address; prints "median p99 rate"
  local port=$((7900 + RANDOM % 1000))
  UROCE_IP=127.0.0.2 timeout 300 $RUN $B/../bench/cm-connect -s -a 127.0.0.2 -p $port -n "$N" >"$out/srv" 2>&1 &
  local s=$!
  sleep 0.5
  UROCE_IP=$1 timeout 300 $RUN $B/../bench/cm-connect -c -a 127.0.0.2 -p $port -n "$N" -q >"$out/cli" 2>&1
  wait $s
  awk '/setup_us_median/ {m=$2} /setup_us_p99/ {p=$2} /conn_per_sec/ {r=$2} END {print m, p, r}' "$out/cli"
}

read -r m1 p1 r1 < <(one 127.0.0.3)
read -r m2 p2 r2 < <(one 127.0.0.2)
{
  echo "# rdma_cm connection setup, $(date +%F) ($(nproc) cores, $N connections each)"
  echo
  echo "| setup | setup latency median (us) | p99 (us) | connections/s |"
  echo "|---|---:|---:|---:|"
  echo "| two addresses (127.0.0.3 -> 127.0.0.2) | $m1 | $p1 | $r1 |"
  echo "| one shared address (127.0.0.2, forwarded MADs) | $m2 | $p2 | $r2 |"
  echo
  echo "setup = rdma_connect until RDMA_CM_EVENT_ESTABLISHED (REQ, REP, RTU, QP to RTR/RTS on both sides);"
  echo "connections/s = full loop: create ID, resolve addr/route, create QP, connect, disconnect (DREQ/DREP), destroy."
} | tee "$res"
