#!/usr/bin/env bash
# A path cut and restored under one sprayed RC QP, over time (issue 33):
# the two-link ECMP fabric of bench/multipath.sh (two namespaces, veth
# links shaped to RATE by tbf, ECMP hashing UDP ports). ib_write_bw -s
# 65536 -D DUR with UROCE_SR=1 UROCE_PATHS=PATHS; at CUT s b drops every
# packet arriving on link 1 (iptables: a failure inside the fabric, which
# the hosts' routes do not see) and at RESTORE s takes the rule away. Each
# link's bytes leaving a are sampled every 10 ms. Prints the recovery
# figures and writes OUT.csv (t_s, link1_mbps, link2_mbps) and OUT.png.
#   bench/multipath_cut.sh [OUT] (default bench/results/multipath_cut)
# Env: RATE (300mbit), PATHS (16), DUR (6), CUT (2), RESTORE (4).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-bench/results/multipath_cut}
RATE=${RATE:-300mbit} PATHS=${PATHS:-16} DUR=${DUR:-6} CUT=${CUT:-2} RESTORE=${RESTORE:-4}
B=${B:-build/bin} # B=/work/main/build/bin: main's binaries, same fabric
# The two-link fabric the tests use (10.93.0.1 <-> 10.93.0.2, links p1
# and p2, ECMP on UDP ports), each link shaped to RATE.
. tests/integration/twolink.sh
twolink mpc 93
for l in p1a p2a; do
	ip netns exec "$a" tc qdisc add dev $l root tbf rate "$RATE" burst 32k latency 20ms || exit 1
done

env=(UROCE_SR=1 UROCE_PATHS=$PATHS)
ip netns exec $b env UROCE_IP=10.93.0.2 "${env[@]}" timeout 60 $B/uroce-run ib_write_bw -x 0 -s 65536 -D "$DUR" -F --report_gbits -p 18850 >"$tmp/server.out" 2>&1 &
server=$!
sleep 0.5
# One sampler process: every 10 ms, monotonic ns and both links' tx bytes.
ip netns exec $a sh -c 'while :; do echo "$(cat /proc/uptime | cut -d" " -f1) $(cat /sys/class/net/p1a/statistics/tx_bytes) $(cat /sys/class/net/p2a/statistics/tx_bytes)"; sleep 0.01; done' >"$tmp/samples" &
sampler=$!
t0=$(cut -d' ' -f1 /proc/uptime)
ip netns exec $a env UROCE_IP=10.93.0.1 "${env[@]}" timeout 60 $B/uroce-run ib_write_bw -x 0 -s 65536 -D "$DUR" -F --report_gbits -p 18850 10.93.0.2 >"$tmp/client.out" 2>&1 &
client=$!
sleep "$CUT"; ip netns exec $b iptables -w -A INPUT -i p1b -j DROP
sleep $(awk -v r="$RESTORE" -v c="$CUT" 'BEGIN {print r - c}'); ip netns exec $b iptables -w -D INPUT -i p1b -j DROP
wait $client; crc=$?
wait $server
kill $sampler 2>/dev/null; wait $sampler 2>/dev/null
[[ $crc == 0 ]] || { echo "multipath_cut.sh: the client failed (rc $crc):"; tail -n 5 "$tmp/client.out"; exit 1; }
gbps=$(awk '$1 == 65536 {print $4}' "$tmp/client.out")
# Rates per 10 ms sample, from the client's start; then the figures:
# each phase's link rates (its last half), how long after the cut the
# live link stayed below 0.9 x its rate before the cut plus what the dead
# one carried, and how long after the restore link 1 took to reach half
# its rate before the cut.
awk -v t0="$t0" -v cut="$CUT" -v rest="$RESTORE" -v out="$OUT.csv" '
NR > 1 && $1 > pt { t = $1 - t0; r1 = ($2 - p1) * 8 / ($1 - pt) / 1e6; r2 = ($3 - p2) * 8 / ($1 - pt) / 1e6
	if (t > 0) print t "," r1 "," r2 > out
	n++; T[n] = t; A[n] = r1; B[n] = r2 }
{ pt = $1; p1 = $2; p2 = $3 }
function avg(x, lo, hi,   i, s, c) { s = 0; c = 0; for (i = 1; i <= n; i++) if (T[i] >= lo && T[i] < hi) { s += x[i]; c++ } return c ? s / c : 0 }
END {
	b1 = avg(A, cut / 2, cut); b2 = avg(B, cut / 2, cut)
	c1 = avg(A, (cut + rest) / 2, rest); c2 = avg(B, (cut + rest) / 2, rest)
	d1 = avg(A, rest + (rest - cut) / 2, rest + (rest - cut)); d2 = avg(B, rest + (rest - cut) / 2, rest + (rest - cut))
	printf "before the cut   link 1 %6.1f Mbit/s  link 2 %6.1f Mbit/s  sum %6.1f\n", b1, b2, b1 + b2
	printf "during the cut   link 1 %6.1f Mbit/s  link 2 %6.1f Mbit/s  (link 2 / its rate before: %.2f)\n", c1, c2, b2 ? c2 / b2 : 0
	printf "after restoring  link 1 %6.1f Mbit/s  link 2 %6.1f Mbit/s  sum %6.1f\n", d1, d2, d1 + d2
	# recovery: first time after the cut from which link 2 stays >= 0.9 x c2 for 100 ms
	for (i = 1; i <= n; i++) if (T[i] >= cut) { ok = 1; for (j = i; j <= n && T[j] < T[i] + 0.1; j++) if (B[j] < 0.9 * c2) ok = 0; if (ok) { printf "link 2 at >= 0.9 x its cut-phase rate from %.0f ms after the cut\n", (T[i] - cut) * 1000; break } }
	for (i = 1; i <= n; i++) if (T[i] >= rest) { ok = 1; for (j = i; j <= n && T[j] < T[i] + 0.1; j++) if (A[j] < 0.5 * b1) ok = 0; if (ok) { printf "link 1 back to >= 0.5 x its rate before the cut from %.0f ms after the restore\n", (T[i] - rest) * 1000; break } }
}' "$tmp/samples"
echo "ib_write_bw average over the run: $gbps Gbit/s ($(lscpu | sed -n 's/^Model name: *//p' | head -n1), $(nproc) CPUs; links of $RATE; UROCE_PATHS=$PATHS)"
if command -v gnuplot >/dev/null; then
	gnuplot <<GP
set terminal pngcairo size 900,360
set output "$OUT.png"
set datafile separator ","
set xlabel "s"; set ylabel "Mbit/s leaving a"
set title "one RC QP sprayed over $PATHS ports; link 1 cut at ${CUT} s, restored at ${RESTORE} s"
set arrow from $CUT, graph 0 to $CUT, graph 1 nohead dt 2
set arrow from $RESTORE, graph 0 to $RESTORE, graph 1 nohead dt 2
plot "$OUT.csv" using 1:2 with lines title "link 1", "" using 1:3 with lines title "link 2"
GP
fi
