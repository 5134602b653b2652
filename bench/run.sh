#!/usr/bin/env bash
# uroce data-path benchmark against peers measured in the same run (issue 5).
#   bench/run.sh [RUNS]   (default 5 runs per metric; medians reported)
# Loopback only. uroce runs unmodified perftest between 127.0.0.2 and
# 127.0.0.3 through uroce-run; peers: iperf3 (kernel TCP), sockperf (UDP),
# UCX ucx_perftest over tcp, libfabric fi_pingpong over tcp;ofi_rxm (the only
# libfabric benchmark Debian ships: a ping-pong, so half duplex). A
# diagnostic row, lat-1thread, runs both ends of a ping-pong in one thread
# (uroce RC SEND vs UDP sendto/recv on 127.0.0.14): the CPU path of one
# message without the scheduler's noise; --udp-uroce makes uroce's system
# calls for that message with plain sockets: the kernel's floor. idle-cpu measures the CPU an idle
# device context costs (16 connected RC QPs, no traffic; target < 1 %).
# Prints one table and writes it, with the date, to bench/results/, plus a
# PNG plot of bandwidth against message size.
set -uo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-5}
RUN=build/bin/uroce-run
out=$(mktemp -d)
trap 'pkill -P $$ 2>/dev/null; rm -rf "$out"' EXIT
export UCX_TLS=tcp UCX_NET_DEVICES=lo
# The next port, counted in a file: np runs in $(...), where a variable's
# increment is lost (every run took the same port, and a server could meet
# the previous run's TIME_WAIT).
echo $((40000 + $$ % 10000)) >"$out/port"
np() { local p=$(($(cat "$out/port") + 1)); echo $p >"$out/port"; echo $p; }

median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) {print "nan"; exit} m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; print m}'; }

# ---- peers (each prints one number) ------------------------------------------
iperf_tcp() { # $1 write size; Gbit/s, single stream
  local p; p=$(np)
  iperf3 -s -1 -B 127.0.0.1 -p $p >/dev/null 2>&1 &
  sleep 0.3
  iperf3 -c 127.0.0.1 -p $p -t 3 -l "${1:-128K}" -J 2>/dev/null |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/1e9)'
  wait
}
sockperf_udp() { # median latency (half round trip), usec; $1: extra flags
  local p; p=$(np)
  sockperf server -i 127.0.0.1 -p $p ${1:-} >/dev/null 2>&1 &
  local s=$!
  sleep 0.3
  sockperf pp -i 127.0.0.1 -p $p -t 3 -m 14 ${1:-} 2>/dev/null | awk '/percentile 50.000/ {print $NF}'
  kill $s 2>/dev/null; wait $s 2>/dev/null
}
ucx() { # $1 test $2 size -> ucx_perftest "Final:" line
  local p; p=$(np)
  timeout 60 ucx_perftest -p $p >/dev/null 2>&1 &
  sleep 0.5
  timeout 60 ucx_perftest 127.0.0.1 -p $p -t "$1" -s "$2" -n "${3:-20000}" 2>/dev/null | awk '/^Final:/'
  wait
}
ucx_put_gbps() { ucx ucp_put_bw "${1:-65536}" | awk '{printf "%.3f\n", $7*8*1.048576/1000}'; } # MB/s (2^20) -> Gbit/s
ucx_tag_lat() { ucx tag_lat 8 | awk '{print $3}'; }                 # typical, usec
fi_pp_gbps() { # libfabric ping-pong bandwidth, Gbit/s
  local p; p=$(np)
  timeout 60 fi_pingpong -p "tcp;ofi_rxm" -e rdm -d lo -S 65536 -I 2000 -B $p >/dev/null 2>&1 &
  sleep 0.5
  timeout 60 fi_pingpong -p "tcp;ofi_rxm" -e rdm -d lo -S 65536 -I 2000 -P $p 127.0.0.1 2>/dev/null |
    awk '$1=="64k" {printf "%.3f\n", $6*8/1000}'
  wait
}

# ---- uroce through unmodified perftest ----------------------------------------
uroce_pair() { # tool args... -> client output
  local tool=$1 p; shift; p=$(np)
  UROCE_IP=127.0.0.2 timeout 60 $RUN $tool -p $p "$@" >"$out/srv" 2>&1 &
  local s=$!
  sleep 0.5
  UROCE_IP=127.0.0.3 timeout 60 $RUN $tool -p $p "$@" 127.0.0.2 2>&1
  wait $s
}
uroce_write_gbps() { # $1 size
  local sz=${1:-65536} n=20000
  [ "$sz" -ge 1048576 ] && n=3000
  uroce_pair ib_write_bw -x 0 -s "$sz" -n $n -F --report_gbits | awk -v s="$sz" '$1==s {print $4}'
}
# The same with uroce's jumbo packets (16 KiB, UROCE_JUMBO=1 at both ends:
# a negotiated extension, docs/wire.md), for comparison.
uroce_write_gbps_jumbo() { UROCE_JUMBO=1 uroce_write_gbps "$@"; }
uroce_send_lat() { uroce_pair ib_send_lat -x 0 -s 8 -n 20000 -F | awk '$1=="8" {print $5}'; }
uroce_1thread() { UROCE_IP=127.0.0.14 timeout 60 $RUN build/bench/lat-1thread | awk '{print $1}'; }
udp_1thread() { timeout 60 build/bench/lat-1thread --udp -a 127.0.0.14 | awk '{print $1}'; }
# uroce's system calls for that message without uroce (a two-segment GSO
# sendmsg carrying SEND + ACK, a recvmsg with address and cmsgs, sockets set
# up as uroce's): the kernel's share, a floor no user-space work removes.
floor_1thread() { timeout 60 build/bench/lat-1thread --udp-uroce -a 127.0.0.14 | awk '{print $1}'; }
# Idle device context: 8 pairs of connected RC QPs after traffic, left
# idle 3 s; % of one core over that window (all threads). $1: -e = the
# application blocks on a completion channel instead of sleeping.
uroce_idle() { UROCE_IP=127.0.0.14 timeout 60 $RUN build/bench/idle-cpu -q 8 -t 3 ${1:-} | awk '{print $1}'; }
uroce_write_lat() { uroce_pair ib_write_lat -x 0 -s 8 -n 20000 -F | awk '$1=="8" {print $5}'; }

declare -A V
measure() { # name fn args...
  local name=$1 fn=$2 vals=() v; shift 2
  for ((i = 0; i < RUNS; i++)); do
    v=$($fn "$@" | tail -n1)
    [ -n "$v" ] && vals+=("$v")
  done
  V[$name]=$(printf '%s\n' "${vals[@]}" | grep -E '^[0-9.]+$' | median)
  echo "  $name: ${vals[*]:-none} -> median ${V[$name]}" >&2
}

# The same, with the runs of several metrics interleaved (run 1 of each,
# then run 2 of each...): this machine drifts between a quiet and a slow
# state for minutes at a time, and a ratio of two metrics measured minutes
# apart would compare the states. Arguments: name=fn pairs (no args).
# RAW[name] keeps the runs in order ("nan" for a failed one) for paired().
declare -A RAW
measure_interleaved() {
  local pair v i
  for ((i = 0; i < RUNS; i++)); do
    for pair in "$@"; do
      v=$(${pair#*=} | tail -n1)
      [[ $v =~ ^[0-9.]+$ ]] || v=nan
      RAW[${pair%%=*}]+="$v "
    done
  done
  for pair in "$@"; do
    local name=${pair%%=*}
    V[$name]=$(printf '%s\n' ${RAW[$name]} | grep -E '^[0-9.]+$' | median)
    echo "  $name: ${RAW[$name]}-> median ${V[$name]}" >&2
  done
}
# Median over the rounds of A's run / B's run in the same round: each ratio
# compares two runs made seconds apart, in one state of the machine.
paired() {
  paste -d' ' <(printf '%s\n' ${RAW[$1]}) <(printf '%s\n' ${RAW[$2]}) |
    awk '$1 > 0 && $2 > 0 {printf "%.4f\n", $1 / $2}' | median |
    awk '{ if ($1 == "nan") print "n/a"; else printf "%.2f", $1 }'
}
sockperf_udp_busy() { sockperf_udp --nonblocked; }

echo "measuring ($RUNS runs each)..." >&2
# The 1 MiB rows in alternation too: the target compares them directly.
iperf_tcp_1m() { iperf_tcp 1M; }
uroce_write_1m() { uroce_write_gbps 1048576; }
measure_interleaved tcp=iperf_tcp tcp1m=iperf_tcp_1m w1m=uroce_write_1m
measure ucx64 ucx_put_gbps 65536
measure fi64 fi_pp_gbps
measure w64 uroce_write_gbps 65536
measure w1m_j uroce_write_gbps_jumbo 1048576
measure w64_j uroce_write_gbps_jumbo 65536
measure ucx64b ucx_put_gbps 64
measure w64b uroce_write_gbps 64
measure udp_lat sockperf_udp
# Busy-polling (non-blocking sockets on both ends), as ib_*_lat poll: the
# default mode sleeps in epoll and is bimodal here (about 7 or 30-50 us).
measure_interleaved udp_lat_busy=sockperf_udp_busy ucx_lat=ucx_tag_lat \
  send_lat=uroce_send_lat write_lat=uroce_write_lat
measure_interleaved one_udp=udp_1thread one_uroce=uroce_1thread \
  one_floor=floor_1thread
measure idle uroce_idle
measure idle_ev uroce_idle -e

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a+0 > 0 && b+0 > 0) printf "%.2f", a/b; else print "n/a" }'; }
table=$(cat <<T
| metric | uroce | peer | peer value | uroce/peer | target |
|---|---|---|---|---|---|
| RC WRITE 1 MiB (Gbit/s) | ${V[w1m]} | iperf3 TCP, 1 stream (128 KiB writes) | ${V[tcp]} | $(ratio "${V[w1m]}" "${V[tcp]}"); paired $(paired w1m tcp) | >= 1.0 |
| RC WRITE 1 MiB (Gbit/s) | ${V[w1m]} | iperf3 TCP, 1 stream (1 MiB writes) | ${V[tcp1m]} | $(ratio "${V[w1m]}" "${V[tcp1m]}"); paired $(paired w1m tcp1m) | >= 1.0 |
| RC WRITE 64 KiB (Gbit/s) | ${V[w64]} | UCX ucp_put_bw (tcp) | ${V[ucx64]} | $(ratio "${V[w64]}" "${V[ucx64]}") | >= 1.0 |
| RC WRITE 64 KiB (Gbit/s) | ${V[w64]} | libfabric fi_pingpong tcp;ofi_rxm | ${V[fi64]} | $(ratio "${V[w64]}" "${V[fi64]}") | >= 1.0 |
| RC WRITE 1 MiB, UROCE_JUMBO=1 (Gbit/s; uroce extension, 16 KiB packets) | ${V[w1m_j]} | iperf3 TCP, 1 stream (1 MiB writes) | ${V[tcp1m]} | $(ratio "${V[w1m_j]}" "${V[tcp1m]}") | diagnostic |
| RC WRITE 64 KiB, UROCE_JUMBO=1 (Gbit/s; uroce extension, 16 KiB packets) | ${V[w64_j]} | UCX ucp_put_bw (tcp) | ${V[ucx64]} | $(ratio "${V[w64_j]}" "${V[ucx64]}") | diagnostic |
| RC WRITE 64 B (Gbit/s; small-message rate) | ${V[w64b]} | UCX ucp_put_bw (tcp), 64 B | ${V[ucx64b]} | $(ratio "${V[w64b]}" "${V[ucx64b]}") | diagnostic |
| 8 B ib_send_lat median (us) | ${V[send_lat]} | UCX tag_lat (tcp) | ${V[ucx_lat]} | $(ratio "${V[send_lat]}" "${V[ucx_lat]}"); paired $(paired send_lat ucx_lat) | <= 1.0 |
| 8 B ib_send_lat median (us) | ${V[send_lat]} | sockperf UDP ping-pong | ${V[udp_lat]} | $(ratio "${V[send_lat]}" "${V[udp_lat]}") | <= 1.2 |
| 8 B ib_send_lat median (us) | ${V[send_lat]} | sockperf UDP ping-pong, --nonblocked (busy poll) | ${V[udp_lat_busy]} | $(ratio "${V[send_lat]}" "${V[udp_lat_busy]}"); paired $(paired send_lat udp_lat_busy) | <= 1.2 |
| 8 B ib_write_lat median (us) | ${V[write_lat]} | UCX tag_lat (tcp) | ${V[ucx_lat]} | $(ratio "${V[write_lat]}" "${V[ucx_lat]}"); paired $(paired write_lat ucx_lat) | <= 1.0 |
| 8 B ib_write_lat median (us) | ${V[write_lat]} | sockperf UDP ping-pong | ${V[udp_lat]} | $(ratio "${V[write_lat]}" "${V[udp_lat]}") | <= 1.2 |
| 8 B ib_write_lat median (us) | ${V[write_lat]} | sockperf UDP ping-pong, --nonblocked (busy poll) | ${V[udp_lat_busy]} | $(ratio "${V[write_lat]}" "${V[udp_lat_busy]}"); paired $(paired write_lat udp_lat_busy) | <= 1.2 |
| 8 B SEND one way, both ends in one thread (us, CPU path without scheduling; lat-1thread) | ${V[one_uroce]} | UDP sendto + recv, one thread | ${V[one_udp]} | $(ratio "${V[one_uroce]}" "${V[one_udp]}") | diagnostic |
| uroce's system calls for that message alone, no uroce code (us, one thread; lat-1thread --udp-uroce: the kernel floor of the path) | ${V[one_floor]} | UDP sendto + recv, one thread | ${V[one_udp]} | $(ratio "${V[one_floor]}" "${V[one_udp]}") | diagnostic |
| Idle device context, 16 connected RC QPs, application asleep (% of one core; idle-cpu) | ${V[idle]} | (none) | | | < 1 |
| Idle device context, 16 connected RC QPs, application blocked on its completion channel (% of one core; idle-cpu -e) | ${V[idle_ev]} | (none) | | | < 1 |
T
)
echo "$table"

# ---- bandwidth against message size (medians of 3 interleaved runs) --------
csv=bench/results/bw_vs_size.csv
echo "size,uroce_write_gbps,ucx_put_gbps,iperf3_tcp_gbps" >"$csv"
for sz in 4096 16384 65536 262144 1048576; do
  us=() xs=() ts=()
  for ((i = 0; i < 3; i++)); do
    us+=("$(uroce_write_gbps $sz | tail -n1)"); xs+=("$(ucx_put_gbps $sz | tail -n1)")
    ts+=("$(iperf_tcp $sz | tail -n1)")
  done
  med3() { printf '%s\n' "$@" | grep -E '^[0-9.]+$' | median; }
  echo "$sz,$(med3 "${us[@]}"),$(med3 "${xs[@]}"),$(med3 "${ts[@]}")" >>"$csv"
done
if command -v gnuplot >/dev/null; then
  gnuplot <<G
set terminal png size 900,540
set output 'bench/results/bw_vs_size.png'
set datafile separator ','
set key top left
set logscale x 2
set xtics ("4 KiB" 4096, "16 KiB" 16384, "64 KiB" 65536, "256 KiB" 262144, "1 MiB" 1048576)
set xlabel 'message size (bytes)'
set ylabel 'Gbit/s'
set title 'Loopback bandwidth, $(date -u +%Y-%m-%d), $(nproc) cores, medians of 3 runs'
plot '$csv' every ::1 using 1:2 with linespoints title 'uroce RC WRITE (ib\_write\_bw)', \
     '' every ::1 using 1:3 with linespoints title 'UCX ucp\_put\_bw (tcp)', \
     '' every ::1 using 1:4 with linespoints title 'iperf3 TCP (write size)'
G
fi
f=bench/results/$(date -u +%Y-%m-%d)-datapath.md
{ echo "# Data path, $(date -u '+%Y-%m-%d %H:%M UTC'), $(git rev-parse --short HEAD 2>/dev/null), $(nproc) cores ($(uname -r)), $RUNS runs, medians"
  echo; echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo; echo "Latency and 1 MiB rows: uroce and its peers ran in alternation (round i of each, then round i+1); \"paired\" is the median over rounds of uroce's run / the peer's run of the same round, which a machine that drifts between states between rounds does not skew."
  echo; echo "$table"
  echo; echo "Bandwidth against size: bw_vs_size.csv / bw_vs_size.png"; } >"$f"
echo "written $f" >&2
