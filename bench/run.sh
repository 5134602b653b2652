#!/usr/bin/env bash
# uroce data-path benchmark against peers measured in the same run.
#   bench/run.sh [RUNS]   (default 5 runs per metric; medians reported)
# Prints one table (metric, uroce, peer, ratio) and writes it with its date to
# bench/results/. Loopback only: uroce peers on 127.0.0.2 <-> 127.0.0.3.
set -uo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-5}
B=build/bin
RUN=$B/uroce-run
out=$(mktemp -d)
trap 'pkill -P $$ 2>/dev/null; rm -rf "$out"' EXIT

median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) {print "nan"; exit} m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; print m}'; }

# --- peers ---------------------------------------------------------------
iperf_tcp() { # Gbit/s, single stream
  iperf3 -s -1 -B 127.0.0.1 -p 5299 >/dev/null 2>&1 &
  sleep 0.3
  iperf3 -c 127.0.0.1 -p 5299 -t 3 -J 2>/dev/null |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/1e9)'
  wait
}
sockperf_udp() { # median one-way latency, usec (sockperf reports RTT/2)
  sockperf server -i 127.0.0.1 -p 5298 >/dev/null 2>&1 &
  local s=$!
  sleep 0.3
  sockperf pp -i 127.0.0.1 -p 5298 -t 3 -m 14 2>/dev/null | awk '/percentile 50.000/ {print $NF}'
  kill $s 2>/dev/null; wait $s 2>/dev/null
}

# --- uroce through unmodified perftest -----------------------------------------
uroce_pair() { # $1 tool, rest args; prints the client's output
  local tool=$1; shift
  UROCE_IP=127.0.0.2 timeout 60 $RUN $tool "$@" >"$out/srv" 2>&1 &
  local s=$!
  sleep 0.5
  UROCE_IP=127.0.0.3 timeout 60 $RUN $tool "$@" 127.0.0.2 2>&1
  wait $s
}
uroce_write_bw() { # Gbit/s, 64 KiB RC WRITE
  uroce_pair ib_write_bw -x 0 -s 65536 -n 20000 -F --report_gbits |
    awk '$1=="65536" {print $4}'
}
uroce_send_lat() { # median (t_typical) usec, 8-byte SEND
  uroce_pair ib_send_lat -x 0 -s 8 -n 20000 -F | awk '$1=="8" {print $5}'
}
uroce_write_lat() {
  uroce_pair ib_write_lat -x 0 -s 8 -n 20000 -F | awk '$1=="8" {print $5}'
}

declare -A V
measure() { # name function
  local name=$1 fn=$2 vals=()
  for ((i = 0; i < RUNS; i++)); do
    v=$($fn | tail -n1)
    [ -n "$v" ] && vals+=("$v")
  done
  V[$name]=$(printf '%s\n' "${vals[@]}" | grep -E '^[0-9.]+$' | median)
  echo "  $name: ${vals[*]:-none} -> median ${V[$name]}" >&2
}

echo "measuring ($RUNS runs each; interleaved peers)..." >&2
measure tcp_gbps iperf_tcp
measure uroce_write_gbps uroce_write_bw
measure udp_lat_us sockperf_udp
measure uroce_send_lat_us uroce_send_lat
measure uroce_write_lat_us uroce_write_lat

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a+0 > 0 && b+0 > 0) printf "%.2f", a/b; else print "n/a" }'; }
table=$(cat <<T
| metric | uroce | peer | peer value | uroce/peer |
|---|---|---|---|---|
| RC WRITE 64 KiB bandwidth (Gbit/s) | ${V[uroce_write_gbps]} | iperf3 TCP 1 stream | ${V[tcp_gbps]} | $(ratio "${V[uroce_write_gbps]}" "${V[tcp_gbps]}") |
| 8 B SEND latency, median (us) | ${V[uroce_send_lat_us]} | sockperf UDP ping-pong | ${V[udp_lat_us]} | $(ratio "${V[uroce_send_lat_us]}" "${V[udp_lat_us]}") |
| 8 B WRITE latency, median (us) | ${V[uroce_write_lat_us]} | sockperf UDP ping-pong | ${V[udp_lat_us]} | $(ratio "${V[uroce_write_lat_us]}" "${V[udp_lat_us]}") |
T
)
echo "$table"
f=bench/results/$(date -u +%Y-%m-%d)-datapath.md
{ echo "# Data path, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $RUNS runs, medians"; echo; echo "$table"; } >"$f"
echo "written $f" >&2
