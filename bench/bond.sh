#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A bonded port (issue 45, docs/ports-classes.md "Bonded port"): two
# namespaces joined by two veth pairs (rails) shaped by tbf at both ends,
# each host's address a /32 on lo with a route over both rails (two
# nexthops). One device per side on that address (UROCE_IP); bonded, it
# sprays its QP's packets over both rails (UROCE_BOND=b1x,b2x). Selective
# repeat on both ends in every run (UROCE_SR=1, window 4096 packets, a gap
# waits 5 ms before it is NAKed: the rails' tbf queues reorder), path MTU
# 1024 (-m 1024). One RC QP: unmodified ib_write_bw, 64 KiB WRITEs.
#  1. equal rails (RATE1 both): bonded vs not (one rail: the route's hash
#     pins the QP to one rail), iperf3 on both rails at once as the peer;
#  2. unequal rails (RATE1, RATE2): bonded vs iperf3's sum;
#  3. a rail cut for 2 s in a 6 s bonded run, by `ip link set down`, by
#     iptables DROP of everything on it (both ways, at the sender b, one
#     iptables-restore so that both directions go at once: b's own sends
#     by it then fail, EPERM) and, as rdrop, by the same DROP at the
#     receiver a (silent for the sender: only missing answers show it),
#     then restored: the exit status and the completions of ib_write_bw, and
#     each rail's bytes every 10 ms (the sender's veth counters), plotted.
#     Time 0 is just before the cut is written to a command started before
#     it (cut_rail: the write's time is in the table); the takeover shows as rail 1 staying at its rate
#     (both rails were full before): the table gives rail 1's 10 ms bins
#     and how many ms of the second after the cut it spent below 0.9 x
#     its rate before the cut.
#   [PARTS="equal unequal cuts"] [KINDS="down drop rdrop"] bench/bond.sh [RUNS] [RATE1] [RATE2] [DUR] [OUT]
#   (default 3, 300mbit, 150mbit, 5, bench/results/2026-12-07-rails2)
# Writes OUT.md (tables), OUT.png (per-rail throughput over time),
# OUT-KIND.dat (10 ms bins) and OUT-KIND.cut (the cut's wall-clock time,
# to line traces up with the bins).
set -uo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-3} R1=${2:-300mbit} R2=${3:-150mbit} DUR=${4:-5}
OUT=${5:-bench/results/2026-12-07-rails2} B=${B:-build/bin}
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || { echo "bond.sh: RUNS must be a positive integer" >&2; exit 2; }
[[ $(id -u) == 0 ]] || { echo "bond.sh: needs root (ip netns)" >&2; exit 1; }
a=uroce-bd-$$-a b=uroce-bd-$$-b
tmp=$(mktemp -d)
cleanup() { ip netns del $a 2>/dev/null; ip netns del $b 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
# UROCE_STATS: each end's device counters at exit (the paths its QPs
# took out of their spray and brought back: mp_path_out, mp_path_back).
SR="UROCE_SR=1 UROCE_SR_WINDOW=4096 UROCE_SR_REORDER_US=5000 UROCE_STATS=1"

fabric() { # RATE1 RATE2: (re)build the two rails
	local r1=$1 r2=$2
	ip netns del $a 2>/dev/null; ip netns del $b 2>/dev/null
	ip netns add $a && ip netns add $b || exit 1
	for ns in $a $b; do
		ip -n $ns link set lo up
		ip netns exec $ns sysctl -qw net.ipv4.fib_multipath_hash_policy=1
	done
	ip -n $a link add b1a type veth peer name b1b netns $b
	ip -n $a link add b2a type veth peer name b2b netns $b
	for x in "$a b1a" "$a b2a" "$b b1b" "$b b2b"; do
		set -- $x
		ip -n $1 link set $2 up
	done
	ip -n $a addr add 10.94.1.1/30 dev b1a; ip -n $b addr add 10.94.1.2/30 dev b1b
	ip -n $a addr add 10.94.2.1/30 dev b2a; ip -n $b addr add 10.94.2.2/30 dev b2b
	ip -n $a addr add 10.94.0.1/32 dev lo; ip -n $b addr add 10.94.0.2/32 dev lo
	ip -n $a route add 10.94.0.2/32 nexthop via 10.94.1.2 dev b1a nexthop via 10.94.2.2 dev b2a
	ip -n $b route add 10.94.0.1/32 nexthop via 10.94.1.1 dev b1b nexthop via 10.94.2.1 dev b2b
	for x in "$a b1a $r1" "$b b1b $r1" "$a b2a $r2" "$b b2b $r2"; do
		set -- $x
		ip netns exec $1 tc qdisc add dev $2 root tbf rate $3 burst 32k latency 20ms
	done
	for i in $(seq 50); do
		[[ $( (ip netns exec $a cat /sys/class/net/b{1,2}a/operstate
		       ip netns exec $b cat /sys/class/net/b{1,2}b/operstate) | grep -c '^up$') == 4 ]] && break
		sleep 0.1
	done
}
median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) {print "nan"; exit} m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; print m}'; }
txb() { ip netns exec $b cat /sys/class/net/$1/statistics/tx_bytes; }
port=18700
# wbw BOND(0/1) DUR [CUT]: ib_write_bw from b to a -> "gbit rail1 rail2 rc"
wbw() {
	local bond=$1 dur=$2 cut=${3:-} t1 t2 rc r ba= bb=
	port=$((port + 1))
	[ $bond = 1 ] && ba=b1a,b2a bb=b1b,b2b
	ip netns exec $a env UROCE_IP=10.94.0.1 UROCE_BOND=$ba $SR timeout $((dur + 40)) \
		$B/uroce-run ib_write_bw -x 0 -m 1024 -s 65536 -D $dur -F --report_gbits -p $port >"$tmp/s" 2>&1 &
	sleep 1 # the server listening (0.5 s was too short at load 15)
	t1=$(txb b1b) t2=$(txb b2b)
	# One process in the sender's namespace reads both rails' counters
	# every 10 ms (wall-clock time, bytes, bytes).
	[ -n "$cut" ] && ip netns exec $b /usr/bin/python3 - "$tmp/trace" $((dur + 3)) <<'PY' &
import sys, time
f = [open("/sys/class/net/%s/statistics/tx_bytes" % d) for d in ("b1b", "b2b")]
end = time.monotonic() + float(sys.argv[2])
out = open(sys.argv[1], "w")
while time.monotonic() < end:
    t = time.monotonic()
    v = []
    for x in f:
        x.seek(0)
        v.append(x.read().strip())
    out.write("%.4f %s %s\n" % (time.time(), v[0], v[1]))
    time.sleep(max(0.0, 0.01 - (time.monotonic() - t)))
out.close()
PY

	ip netns exec $b env UROCE_IP=10.94.0.2 UROCE_BOND=$bb $SR timeout $((dur + 40)) \
		$B/uroce-run ib_write_bw -x 0 -m 1024 -s 65536 -D $dur -F --report_gbits -p $port 10.94.0.1 >"$tmp/c" 2>&1 &
	local cpid=$!
	if [ -n "$cut" ]; then
		local cap=
		ipt_open $cut
		sleep 3 # perftest's setup, then 2 s of traffic
		if [ -n "${BOND_PCAP:-}" ]; then # the receiver's rails around the cut
			ip netns exec $a dumpcap -q -i b1a -i b2a -s 80 -w "$BOND_PCAP-$cut.pcapng" 2>/dev/null &
			cap=$!
			sleep 0.3
		fi
		date +%s.%N >"$tmp/cut_at"
		cut_rail $cut on
		date +%s.%N >"$tmp/cut_done"
		[ -n "$cap" ] && { sleep 0.3; kill $cap; }
		sleep 2
		date +%s.%N >"$tmp/back_at"
		cut_rail $cut off
		ipt_close
	fi
	wait $cpid; rc=$?
	wait
	r=$(awk '$1 == 65536 {print $4}' "$tmp/c")
	echo "${r:-nan} $(( $(txb b1b) - t1 )) $(( $(txb b2b) - t2 )) $rc $(outs "$tmp/c") $(outs "$tmp/s")"
	if [ -z "$r" ] || [ $rc != 0 ] || grep -qi "error\|failed" "$tmp/c" "$tmp/s"; then
		{ echo "--- client"; cat "$tmp/c"; echo "--- server"; cat "$tmp/s"; } >&2
	fi
}
# The paths a run's QPs took out of their spray and brought back, both
# devices of one end summed (UROCE_STATS): "out/back".
outs() {
	awk '{for (i = 1; i <= NF; i++) {split($i, kv, "="); if (kv[1] == "mp_path_out") o += kv[2]; if (kv[1] == "mp_path_back") b += kv[2]}}
	     END {printf "%d/%d", o, b}' "$1"
}
# Each cut goes through one command started before it and reading from a
# FIFO: iptables-restore (each COMMIT applies at once) or `ip -batch -`
# (each line at once). Run as a new command at the cut, its start-up took
# 13-190 ms (iptables) and 25-850 ms (ip link) at load 8-12 (the table's
# "command took"), so that the cut fell anywhere in the first bins after
# time 0 and "the cut's own bin" was not one bin; now the write to the
# FIFO is timed, and the cut follows as soon as that command is scheduled.
ipt_pid=
ipt_open() { # down|drop|rdrop: fd 9 to that host's command
	local ns=$b; [ $1 = rdrop ] && ns=$a
	rm -f "$tmp/ipt"; mkfifo "$tmp/ipt" || return
	if [ $1 = down ]; then
		ip -n $ns -batch - <"$tmp/ipt" >/dev/null &
	else
		ip netns exec $ns iptables-restore --noflush <"$tmp/ipt" &
	fi
	ipt_pid=$!
	exec 9>"$tmp/ipt"
}
ipt_close() {
	[ -n "$ipt_pid" ] || return
	exec 9>&-
	wait $ipt_pid
	ipt_pid=
}
cut_rail() { # down|drop|rdrop on|off: rail 2
	if [ $1 = down ]; then
		[ $2 = on ] && echo "link set b2b down" >&9 || echo "link set b2b up" >&9
	else
		local op=-A dev=b2b; [ $2 = off ] && op=-D; [ $1 = rdrop ] && dev=b2a
		printf '*filter\n%s INPUT -i %s -j DROP\n%s OUTPUT -o %s -j DROP\nCOMMIT\n' $op $dev $op $dev >&9
	fi
}
iperf_both() { # -> rail1 rail2 Gbit/s, both at once
	for i in 1 2; do
		# a client that failed to connect (loaded machine) must not
		# leave its server waiting for ever
		ip netns exec $a timeout $((DUR + 20)) iperf3 -s -1 -B 10.94.$i.1 -p $((port + i)) >/dev/null 2>&1 &
	done
	sleep 1
	for i in 1 2; do
		ip netns exec $b iperf3 -c 10.94.$i.1 -B 10.94.$i.2 -p $((port + i)) -t $DUR -l 64K -J >"$tmp/i$i" 2>/dev/null &
	done
	wait
	port=$((port + 2))
	for i in 1 2; do
		/usr/bin/python3 -c 'import json,sys; print("%.4f" % (json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"]/1e9))' "$tmp/i$i" 2>/dev/null || echo nan
	done | tr '\n' ' '
	echo
}
col() { awk -v c=$2 '{print $c}' "$1" | median; }
outs_all() { awk '{printf "%s%s, %s", (NR > 1 ? "; " : ""), $5, $6}' "$1" 2>/dev/null; }
machine="$(lscpu | sed -n 's/^Model name: *//p' | head -n1), $(nproc) CPUs (KVM VM)"

load0=$(cut -d' ' -f1-3 /proc/loadavg)
# PARTS (while working on one part): all (default), or any of equal,
# unequal, cuts
PARTS=${PARTS:-equal unequal cuts}; [ "$PARTS" = all ] && PARTS="equal unequal cuts"
part() { [[ " $PARTS " == *" $1 "* ]]; }
fabric $R1 $R1
for ((r = 1; r <= RUNS; r++)); do
	part equal || break
	wbw 0 $DUR >>"$tmp/eq-one"; wbw 1 $DUR >>"$tmp/eq-bond"; iperf_both >>"$tmp/eq-tcp"
	echo "run $r equal: one $(tail -1 "$tmp/eq-one"); bond $(tail -1 "$tmp/eq-bond"); iperf3 $(tail -1 "$tmp/eq-tcp")" >&2
done
fabric $R1 $R2
for ((r = 1; r <= RUNS; r++)); do
	part unequal || break
	wbw 1 $DUR >>"$tmp/un-bond"; iperf_both >>"$tmp/un-tcp"
	echo "run $r unequal: bond $(tail -1 "$tmp/un-bond"); iperf3 $(tail -1 "$tmp/un-tcp")" >&2
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)
fabric $R1 $R1
cuts=
part cuts || KINDS=" "
for kind in ${KINDS:-down drop rdrop}; do
	wbw 1 6 $kind >"$tmp/cut-$kind"
	cp "$tmp/cut_at" "$tmp/cut_at-$kind"
	# Per 10 ms: each rail's Mbit/s, time from the cut (s).
	awk -v c="$(cat "$tmp/cut_at")" 'NR > 1 {dt = $1 - t; printf "%.3f %.1f %.1f\n", $1 - c, ($2 - p1) * 8 / dt / 1e6, ($3 - p2) * 8 / dt / 1e6} {t = $1; p1 = $2; p2 = $3}' "$tmp/trace" >"$tmp/rate-$kind"
	echo "$(awk '{print $1 - c}' c="$(cat "$tmp/cut_at")" "$tmp/back_at")" >"$tmp/back-$kind"
	echo "$(awk '{printf "%.0f", ($1 - c) * 1000}' c="$(cat "$tmp/cut_at")" "$tmp/cut_done")" >"$tmp/took-$kind"
	echo "cut $kind: $(cat "$tmp/cut-$kind") (Gbit/s rail1-bytes rail2-bytes exit)" >&2
	cuts="$cuts $kind"
done
load2=$(cut -d' ' -f1-3 /proc/loadavg)
{
	echo "<!-- written by bench/bond.sh $RUNS $R1 $R2 $DUR -->"
	echo "| $machine, load $load0 → $load1; medians of $RUNS runs of ${DUR} s | Gbit/s | rail 1 bytes | rail 2 bytes | exit | paths taken out/brought back: sender, receiver (each run) |"
	echo "|---|---:|---:|---:|---:|---|"
	echo "| rails $R1 + $R1: not bonded (one rail), ib_write_bw | $(col "$tmp/eq-one" 1) | $(col "$tmp/eq-one" 2) | $(col "$tmp/eq-one" 3) | $(col "$tmp/eq-one" 4) | $(outs_all "$tmp/eq-one") |"
	echo "| rails $R1 + $R1: bonded, ib_write_bw | $(col "$tmp/eq-bond" 1) | $(col "$tmp/eq-bond" 2) | $(col "$tmp/eq-bond" 3) | $(col "$tmp/eq-bond" 4) | $(outs_all "$tmp/eq-bond") |"
	echo "| rails $R1 + $R1: iperf3, one TCP stream per rail at once (rail 1, rail 2) | $(col "$tmp/eq-tcp" 1), $(col "$tmp/eq-tcp" 2) | | | | |"
	echo "| rails $R1 + $R2: bonded, ib_write_bw | $(col "$tmp/un-bond" 1) | $(col "$tmp/un-bond" 2) | $(col "$tmp/un-bond" 3) | $(col "$tmp/un-bond" 4) | $(outs_all "$tmp/un-bond") |"
	echo "| rails $R1 + $R2: iperf3, one TCP stream per rail at once (rail 1, rail 2) | $(col "$tmp/un-tcp" 1), $(col "$tmp/un-tcp" 2) | | | | |"
	echo
	echo "Every run (Gbit/s rail1-bytes rail2-bytes exit):"
	for f in eq-one eq-bond eq-tcp un-bond un-tcp; do echo "- $f: $(paste -sd';' "$tmp/$f" 2>/dev/null)"; done
	echo
	echo "Rail 2 cut 3 s into a 6 s bonded run (rails $R1 + $R1), restored 2 s later; load → $load2:"
	echo
	echo "| cut | command took, ms | ib_write_bw Gbit/s | rail 1 bytes | rail 2 bytes | exit | both rails, Mbit/s, 0.5 s before the cut | rail 1, each 10 ms bin of the first 100 ms after it | rail 1: ms of the 1 s after it below 0.9 x its rate before | both rails, 0.1-1.9 s after it | rail 2, 0.2-1 s after the restore | paths taken out/brought back: sender, receiver |"
	echo "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---|"
	for kind in $cuts; do
		read -r g x1 x2 rc os or <"$tmp/cut-$kind"
		echo "| $kind | $(cat "$tmp/took-$kind") | $g | $x1 | $x2 | $rc | $(/usr/bin/python3 - "$tmp/rate-$kind" "$(cat "$tmp/back-$kind")" <<'PY'
import sys
rows = [tuple(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
back = float(sys.argv[2])
def mean(a, b, col=None):
    v = [(r[1] + r[2]) if col is None else r[col] for r in rows if a <= r[0] < b]
    return sum(v) / len(v) if v else float("nan")
bins = " ".join("%.0f" % r[1] for r in rows if 0 <= r[0] < 0.1)
r1 = mean(-0.5, 0, 1)
low = sum(10 for r in rows if 0 <= r[0] < 1 and r[1] < 0.9 * r1)
print("%.0f | %s | %d | %.0f | %.0f" % (mean(-0.5, 0), bins, low, mean(0.1, 1.9), mean(back + 0.2, back + 1, 2)))
PY
) | $os, $or |"
	done
} >"$OUT.md.tmp"
for kind in $cuts; do cp "$tmp/rate-$kind" "$OUT-$kind.dat"; cp "$tmp/cut_at-$kind" "$OUT-$kind.cut"; done
mv "$OUT.md.tmp" "$OUT.md"
# Per-rail throughput over time, 10 ms bins, around each cut.
gnuplot <<GP 2>/dev/null || echo "bond.sh: gnuplot failed; traces in $OUT-*.dat" >&2
set terminal pngcairo size 1100,1000
set output "$OUT.png"
set multiplot layout 3,1 title "bonded port, rails $R1 + $R1: rail 2 cut at 0 s, restored at ~2 s (10 ms bins)"
set xlabel "s from the cut"; set ylabel "Mbit/s (sender's veth)"; set yrange [0:*]; set key top right
set title "ip link set down"
plot "$OUT-down.dat" u 1:2 w l t "rail 1", "" u 1:3 w l t "rail 2", "" u 1:(\$2+\$3) w l t "both"
set title "iptables DROP, both ways"
plot "$OUT-drop.dat" u 1:2 w l t "rail 1", "" u 1:3 w l t "rail 2", "" u 1:(\$2+\$3) w l t "both"
set title "iptables DROP, both ways, at the receiver (silent for the sender)"
plot "$OUT-rdrop.dat" u 1:2 w l t "rail 1", "" u 1:3 w l t "rail 2", "" u 1:(\$2+\$3) w l t "both"
unset multiplot
GP
cat "$OUT.md"
