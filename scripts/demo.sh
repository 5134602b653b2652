#!/usr/bin/env bash
# The main job: installs dependencies, builds, decodes the golden rxe
# captures with uroce-decode, then runs unmodified RDMA programs on uroce
# over loopback: ibv_rc_pingpong, perftest ib_write_bw, rping over rdma_cm,
# and an allreduce across 4 ranks with the collectives library.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh release
shared=${UROCE_SHARED_DIR:-../shared}
run=build/bin/uroce-run
slog=$(mktemp)
trap 'rm -f "$slog"' EXIT
# Addresses and ports from our PID, so that two checkouts (or users) running
# the demo on one machine at once do not meet: 127.X.Y.2 and .3.
net=127.$((100 + $$ % 100)).$(($$ / 100 % 250 + 1))
srv=$net.2 cli=$net.3 port=$((18600 + $$ % 1000 * 3))
pair() { # PORT server_cmd... -- client_cmd...: server on $srv, client on $cli
  local port=$1 srv_cmd=() cli_cmd=(); shift
  while [ "$1" != -- ]; do srv_cmd+=("$1"); shift; done; shift
  cli_cmd=("$@")
  UROCE_IP=$srv timeout 60 $run "${srv_cmd[@]}" >"$slog" 2>&1 &
  local s=$!
  # Wait until the server listens on its TCP port (perftest, pingpong).
  if [ "$port" = 0 ]; then sleep 1; else
    for _ in $(seq 50); do ss -Hltn "sport = :$port" | grep -q . && break; sleep 0.1; done
  fi
  UROCE_IP=$cli timeout 60 $run "${cli_cmd[@]}"
  wait $s || { echo "server failed:"; cat "$slog"; return 1; }
}

echo "== uroce-decode: golden Linux rxe captures =="
for f in "$shared"/wire/rxe/*.pcap; do
  build/bin/uroce-decode -q "$f"
done

echo
echo "== ibv_rc_pingpong (Debian ibverbs-utils), $srv <-> $cli =="
pair $port ibv_rc_pingpong -g 0 -p $port -n 1000 -s 4096 -- ibv_rc_pingpong -g 0 -p $port -n 1000 -s 4096 $srv

echo
echo "== ib_write_bw (Debian perftest), 64 KiB RDMA WRITE =="
pair $((port + 1)) ib_write_bw -x 0 -p $((port + 1)) -s 65536 -n 5000 -F --report_gbits -- \
     ib_write_bw -x 0 -p $((port + 1)) -s 65536 -n 5000 -F --report_gbits $srv

echo
echo "== rping (Debian rdmacm-utils) over uroce's librdmacm =="
pair 0 rping -s -a $srv -p $((port + 2)) -C 10 -- rping -c -a $srv -p $((port + 2)) -C 10 -v

echo
echo "== allreduce over 4 ranks (liburoce_coll, checked with -c) =="
timeout 120 build/bin/uroce-launch -n 4 --ip-prefix "$net.1" build/bin/uroce-coll-perf -b 4K -e 16M -f 8 -o allreduce -d float32 -c 1
