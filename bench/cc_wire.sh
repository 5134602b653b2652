#!/usr/bin/env bash
# Congestion control on a real wire (kernel forwarding, a tbf queue):
# two sender namespaces s1, s2 -> a switch namespace sw whose port to the
# receiver r is a tbf bottleneck of RATE (queue LAT deep; this kernel has
# tbf/htb/fifo, no RED or netem, so nothing marks CE: DCQCN never acts
# here, a delay-based algorithm can). Two ib_write_bw flows (s1 -> r,
# s2 -> r, -s 65536 -D DUR) start together, and an ib_write_lat ping-pong
# (64 B, s2 -> r) runs across the same queue from 1 s in. Alternates
# UROCE_CC=none and UROCE_CC=swift, REPS times each, in the same run.
# Per rep: each flow's Gbit/s, their ratio (smaller / larger), the sum
# against RATE, drops at the tbf (tc -s qdisc), the retransmissions of the
# senders (UROCE_STATS=1), the ping-pong's median (t_typical) and 99 %.
# Prints a table of the reps and the medians per algorithm.
# SWITCH=nfq: the bottleneck is uroce-nfq instead (NFQUEUE on the switch's
# forwarding path to r: rate RATE, a LIMIT-byte tail-drop buffer, RED ECN
# marking KMIN..KMAX bytes with PMAX, as tests/cc/cc_lab.sh), so that
# DCQCN acts; drops are its tail drops, and the queue's p99 and maximum
# (bytes) come from its --report. Jain's index of the two flows is printed.
#   bench/cc_wire.sh
# Env: RATE (300mbit), LAT (50ms), DUR (6), REPS (3), CCS ("none swift";
#      swift@T: Swift with UROCE_SWIFT_TARGET_US=T; LABEL=ALGO:VAR=V,VAR=V:
#      UROCE_CC=ALGO with those settings, named LABEL; BIN=DIR among
#      them: that label's hosts run DIR/uroce-run, another build's),
#      LATN (300 ping-pongs; 0: no probe, which on 2 cores frees the
#      0.25-0.75 of a core ib_write_lat spins), KEEP (1: keep the raw outputs),
#      SWIFT_ENV (extra env for swift, e.g. "UROCE_SWIFT_TARGET_US=200"),
#      DCQCN_ENV (for dcqcn; default the lab's: mlx5 profile, K = T = 3 ms,
#      as tests/cc/cc_lab.sh, whose feedback loop is milliseconds),
#      SWITCH (tbf | nfq), LIMIT (2000000), KMIN (20000), KMAX (200000),
#      PMAX (0.2), B (build/bin: the binaries), NFQ_ARGS (more uroce-nfq
#      options, e.g. --no-batch: a verdict per packet), CE_MARK (1:
#      uroce-nfq marks CE through a fwmark and an iptables ECN rule and
#      is copied only the packets' headers; 0: it rewrites each marked
#      packet and is copied every packet whole, as before 2026-12-07),
#      MTU (1500: every link's MTU; 9000 gives uroce a 4096-byte RoCE MTU,
#      as RoCE fabrics run, a quarter of the packets per second of
#      1500's 1024-byte one: docs/cc.md "The NFQUEUE bed at 1 Gbit/s"),
#      BW_TOOL (ib_write_bw) and LAT_TOOL (ib_write_lat): the flows' and
#      the probe's perftest program, BW_ARGS and LAT_ARGS more options for
#      both ends. On 2 cores the four hosts share the switch's CPU, and
#      ib_write_lat spins on both ends (a quarter of the machine); perftest
#      sleeps on CQ events (-e) only for SEND and not for a duration
#      (-D), so the flows keep spinning. PROBE_EVENTS=1 is
#      LAT_TOOL=ib_send_lat LAT_ARGS=-e, which with SWITCH=nfq does not
#      finish: Debian's perftest 4.5 shares one channel between its send
#      and receive CQs (docs/cc.md "The NFQUEUE bed at 1 Gbit/s").
# Each row carries the 1-minute load average at the rep's end.
set -uo pipefail
cd "$(dirname "$0")/.."
RATE=${RATE:-300mbit} LAT=${LAT:-50ms} DUR=${DUR:-6} REPS=${REPS:-3}
CCS=${CCS:-none swift} SWIFT_ENV=${SWIFT_ENV:-}
DCQCN_ENV=${DCQCN_ENV:-UROCE_DCQCN_PROFILE=mlx5 UROCE_DCQCN_ALPHA_TIMER_US=3000 UROCE_DCQCN_RATE_TIMER_US=3000}
MTU=${MTU:-1500} CE_MARK=${CE_MARK:-1}
if [ "${PROBE_EVENTS:-0}" = 1 ]; then
	LAT_TOOL=${LAT_TOOL:-ib_send_lat} LAT_ARGS="${LAT_ARGS:-} -e"
fi
BW_TOOL=${BW_TOOL:-ib_write_bw} LAT_TOOL=${LAT_TOOL:-ib_write_lat}
SWITCH=${SWITCH:-tbf} LIMIT=${LIMIT:-2000000} KMIN=${KMIN:-20000} KMAX=${KMAX:-200000} PMAX=${PMAX:-0.2}
case $SWITCH in tbf | nfq) ;; *) echo "SWITCH: tbf or nfq"; exit 2 ;; esac
[ "$SWITCH" = tbf ] || [ -x build/bin/uroce-nfq ] || { echo "cc_wire.sh: SWITCH=nfq needs build/bin/uroce-nfq"; exit 77; }
B=${B:-build/bin}
[ "$(id -u)" = 0 ] && ip netns list >/dev/null 2>&1 || { echo "cc_wire.sh: needs root and ip netns"; exit 77; }
p=uroce-ccw-$$
s1=$p-s1 s2=$p-s2 sw=$p-sw r=$p-r
tmp=$(mktemp -d)
cleanup() {
	for ns in $s1 $s2 $sw $r; do ip netns del "$ns" 2>/dev/null; done
	if [ -n "${KEEP:-}" ]; then echo "raw outputs: $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
for ns in $s1 $s2 $sw $r; do ip netns add "$ns" && ip -n "$ns" link set lo up || exit 1; done
ip netns exec $sw sysctl -qw net.ipv4.ip_forward=1
# host i: 10.97.i.1/24 on veth hN, the switch 10.97.i.254 on port swN
i=0
for ns in $s1 $s2 $r; do
	i=$((i + 1))
	ip -n $ns link add h$i mtu "$MTU" type veth peer name sw$i mtu "$MTU" netns $sw &&
	ip -n $ns addr add 10.97.$i.1/24 dev h$i && ip -n $ns link set h$i up &&
	ip -n $ns route add default via 10.97.$i.254 &&
	ip -n $sw addr add 10.97.$i.254/24 dev sw$i && ip -n $sw link set sw$i up || exit 1
done
# The bottleneck: the switch's port to r.
if [ "$SWITCH" = tbf ]; then
	ip netns exec $sw tc qdisc add dev sw3 root tbf rate "$RATE" burst 32k latency "$LAT" || exit 1
else
	ip netns exec $sw iptables -A FORWARD -o sw3 -p udp --dport 4791 -j NFQUEUE --queue-num 0 --queue-bypass || exit 1
	# CE_MARK=1: uroce-nfq gives a marked packet fwmark 1 and this
	# rule sets CE, so the queue copies only headers to it
	if [ "$CE_MARK" = 1 ]; then
		ip netns exec $sw iptables -t mangle -A POSTROUTING -o sw3 -m mark --mark 1 -j ECN --ecn-ip-ect 3 || exit 1
		NFQ_ARGS="--ce-mark 1 ${NFQ_ARGS:-}"
	fi
fi
R=10.97.3.1
MBPS=${RATE%mbit}; [ "$RATE" != "${RATE%gbit}" ] && MBPS=$((${RATE%gbit} * 1000))

one() { # CC REP: one run; appends a row to $tmp/rows
	local cc=${1%%=*} spec=$1 rep=$2 algo env d nfq= t0 cpu= bin=$B e
	# SWIFT_ENV / DCQCN_ENV first, a label's own settings over them
	case $spec in
	*=*) spec=${spec#*=}; algo=${spec%%:*}; env=(UROCE_CC=$algo UROCE_STATS=1)
		[ "$algo" = swift ] && env+=($SWIFT_ENV)
		[ "$algo" = dcqcn ] && env+=($DCQCN_ENV)
		[ "$spec" != "$algo" ] && env+=($(echo "${spec#*:}" | tr , ' ')) ;;
	*) algo=${spec%@*}; env=(UROCE_CC=$algo UROCE_STATS=1)
		[ "$algo" = swift ] && env+=($SWIFT_ENV)
		[ "$algo" = dcqcn ] && env+=($DCQCN_ENV)
		[ "$spec" != "${spec#*@}" ] && env+=(UROCE_SWIFT_TARGET_US=${spec#*@}) ;;
	esac
	# BIN=DIR in a label's settings: that label's hosts run DIR/uroce-run
	# (another build, e.g. main's, in the same run); not passed on.
	for e in "${!env[@]}"; do
		case ${env[$e]} in BIN=*) bin=${env[$e]#BIN=}; unset "env[$e]" ;; esac
	done
	env=("${env[@]}")
	d=$tmp/$cc.$rep
	mkdir -p "$d"
	if [ "$SWITCH" = tbf ]; then
		# a new qdisc per rep: its counters start at 0
		ip netns exec $sw tc qdisc del dev sw3 root
		ip netns exec $sw tc qdisc add dev sw3 root tbf rate "$RATE" burst 32k latency "$LAT"
	else
		# a new uroce-nfq per rep: counters and report start at 0
		ip netns exec $sw $B/uroce-nfq --rate "$MBPS" --limit "$LIMIT" --kmin "$KMIN" --kmax "$KMAX" \
			--pmax "$PMAX" --report "$d/queue" --report-interval-us 1000 ${NFQ_ARGS:-} >"$d/nfq" 2>"$d/nfq.err" &
		nfq=$!
		for _ in $(seq 1 50); do grep -q "ready" "$d/nfq.err" 2>/dev/null && break; sleep 0.1; done
		t0=$(date +%s.%N)
	fi
	for k in 1 2; do
		ip netns exec $r env UROCE_IP=$R "${env[@]}" timeout 60 $bin/uroce-run $BW_TOOL -x 0 -s 65536 -D "$DUR" -F --report_gbits ${BW_ARGS:-} -p $((18900 + k)) >"$d/srv$k" 2>&1 &
	done
	[ "$LATN" -gt 0 ] && ip netns exec $r env UROCE_IP=$R "${env[@]}" timeout $((DUR + 8)) $bin/uroce-run $LAT_TOOL -x 0 -s 64 -n "$LATN" -F ${LAT_ARGS:-} -p 18903 >"$d/lsrv" 2>&1 &
	sleep 0.5
	ip netns exec $s1 env UROCE_IP=10.97.1.1 "${env[@]}" timeout 60 $bin/uroce-run $BW_TOOL -x 0 -s 65536 -D "$DUR" -F --report_gbits ${BW_ARGS:-} -p 18901 $R >"$d/c1" 2>&1 &
	local c1=$!
	ip netns exec $s2 env UROCE_IP=10.97.2.1 "${env[@]}" timeout 60 $bin/uroce-run $BW_TOOL -x 0 -s 65536 -D "$DUR" -F --report_gbits ${BW_ARGS:-} -p 18902 $R >"$d/c2" 2>&1 &
	local c2=$!
	sleep 1
	local cl=
	if [ "$LATN" -gt 0 ]; then
		ip netns exec $s2 env UROCE_IP=10.97.2.1 "${env[@]}" timeout $((DUR + 8)) $bin/uroce-run $LAT_TOOL -x 0 -s 64 -n "$LATN" -F ${LAT_ARGS:-} -p 18903 $R >"$d/lat" 2>&1 &
		cl=$!
	else
		: >"$d/lat"
	fi
	wait $c1 $c2 $cl
	if [ -n "$nfq" ]; then
		# the switch's CPU: its user + system time over the rep's
		# (a share of one core; near 1, uroce-nfq is the bottleneck)
		cpu=$(awk -v t0="$t0" -v t1="$(date +%s.%N)" -v hz="$(getconf CLK_TCK)" \
			'{printf "%.2f", ($14 + $15) / hz / (t1 - t0)}' /proc/$nfq/stat 2>/dev/null)
		kill -TERM "$nfq"; wait "$nfq"
	fi
	wait
	local g1 g2 drops rtx lat q=
	g1=$(awk '$1 == 65536 {print $4}' "$d/c1")
	g2=$(awk '$1 == 65536 {print $4}' "$d/c2")
	if [ "$SWITCH" = tbf ]; then
		ip netns exec $sw tc -s qdisc show dev sw3 >"$d/qdisc"
		drops=$(awk '/dropped/ {for (i = 1; i < NF; i++) if ($i ~ /dropped$/) {v = $(i + 1); sub(",", "", v); print v; exit}}' "$d/qdisc")
	else
		drops=$(grep -o 'tail_dropped=[0-9]*' "$d/nfq" | cut -d= -f2)
		# the queue (bytes) over the flows' time: p99 and max of the rows
		q=$(awk -F, 'NR > 1 && ($2 > 0 || n) {v[++n] = $2} END {if (!n) {print "0 0"; exit}
			for (i = 2; i <= n; i++) {t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t}
			k = int(0.99 * n); if (k < 1) k = 1; print v[k], v[n]}' "$d/queue" 2>/dev/null)
		echo "$q $(grep -o 'marked=[0-9]*' "$d/nfq") switch_cpu=${cpu:-?}" >"$d/qsum"
	fi
	# retransmitted packets of both senders (UROCE_STATS=1 at close:
	# "uroce: slot N counters: ... tx_retransmit=N ...")
	rtx=$(cat "$d/c1" "$d/c2" | awk '{for (i = 1; i <= NF; i++) if ($i ~ /^tx_retransmit=/) {split($i, kv, "="); s += kv[2]}} END {print s + 0}')
	# ib_write_lat: #bytes #iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%
	lat=$(awk '$1 == 64 && NF >= 9 {print $5, $8}' "$d/lat")
	[ -n "$lat" ] || lat="- -"
	echo "$cc $rep ${g1:--} ${g2:--} ${drops:--} $rtx $lat $(cut -d' ' -f1 /proc/loadavg)" >>"$tmp/rows"
}
LATN=${LATN:-300}
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for rep in $(seq 1 "$REPS"); do
	for cc in $CCS; do one "$cc" "$rep"; done
done
echo "load after:  $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "$SWITCH" = tbf ]; then
	echo "$(lscpu | sed -n 's/^Model name: *//p' | head -n1), $(nproc) CPUs; bottleneck tbf $RATE, latency $LAT; DUR $DUR s; swift env: ${SWIFT_ENV:-defaults}"
else
	echo "$(lscpu | sed -n 's/^Model name: *//p' | head -n1), $(nproc) CPUs; link MTU $MTU; $BW_TOOL ${BW_ARGS:-}, probe $LAT_TOOL ${LAT_ARGS:-}; bottleneck uroce-nfq $MBPS Mbit/s, buffer $LIMIT B, RED $KMIN..$KMAX B p $PMAX${NFQ_ARGS:+, $NFQ_ARGS}; DUR $DUR s; dcqcn env: $DCQCN_ENV; swift env: ${SWIFT_ENV:-defaults}"
	echo "queue (uroce-nfq --report, bytes): cc rep p99 max marked switch_cpu (uroce-nfq's share of a core)"
	for f in "$tmp"/*/qsum; do echo "  $(basename "$(dirname "$f")" | tr . ' ') $(cat "$f")"; done
fi
awk -v rate="$RATE" '
function med(a, n,   i, j, t) { for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t } return n ? (n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2) : -1 }
BEGIN { r = rate; if (r ~ /gbit/) sub(/gbit/, "", r); else { sub(/mbit/, "", r); r /= 1000 }
	printf "%-6s %3s %8s %8s %6s %6s %6s %7s %6s %9s %9s %5s\n", "cc", "rep", "flow1", "flow2", "ratio", "jain", "sum/R", "drops", "retx", "lat_med", "lat_p99", "load"
	printf "%-6s %3s %8s %8s %6s %6s %6s %7s %6s %9s %9s %5s\n", "", "", "Gbit/s", "Gbit/s", "", "", "", "switch", "pkts", "us", "us", "1min" }
{ lo = $3 < $4 ? $3 : $4; hi = $3 < $4 ? $4 : $3; ratio = hi > 0 ? lo / hi : 0; sum = ($3 + $4) / r
	jain = $3 + $4 > 0 ? ($3 + $4) ^ 2 / (2 * ($3 ^ 2 + $4 ^ 2)) : 0
	printf "%-6s %3s %8.3f %8.3f %6.2f %6.3f %6.2f %7s %6s %9s %9s %5s\n", $1, $2, $3, $4, ratio, jain, sum, $5, $6, $7, $8, $9
	n[$1]++; k = n[$1]; cc[$1] = 1
	F1[$1, k] = $3; F2[$1, k] = $4; RA[$1, k] = ratio; JA[$1, k] = jain; SU[$1, k] = sum; DR[$1, k] = $5; RX[$1, k] = $6; LM[$1, k] = $7; LP[$1, k] = $8 }
END { print "medians:"
	for (c in cc) { m = n[c]
		l = 0 # ping-pongs that did not finish in time ("-") are left out
		for (k = 1; k <= m; k++) { a1[k] = F1[c, k]; a2[k] = F2[c, k]; a3[k] = RA[c, k]; a9[k] = JA[c, k]; a4[k] = SU[c, k]; a5[k] = DR[c, k]; a6[k] = RX[c, k]; if (LM[c, k] != "-") { l++; a7[l] = LM[c, k]; a8[l] = LP[c, k] } }
		printf "%-6s %3s %8.3f %8.3f %6.2f %6.3f %6.2f %7d %6d %9s %9s  (ping-pong: %d of %d runs finished)\n", c, m, med(a1, m), med(a2, m), med(a3, m), med(a9, m), med(a4, m), med(a5, m), med(a6, m), l ? sprintf("%.1f", med(a7, l)) : "-", l ? sprintf("%.1f", med(a8, l)) : "-", l, m } }' "$tmp/rows"
