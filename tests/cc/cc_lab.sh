#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Congestion control in the lab (ctest cc_lab, label "cc"): two senders (h1,
# h2) write to one receiver (h3) through the switch, whose egress port is
# uroce-nfq: --rate CC_RATE Mbit/s, a CC_LIMIT-byte buffer and RED ECN
# marking (Kmin, Kmax, Pmax). Flow 1 starts, flow 2 joins CC_STAGGER
# seconds later (so the first window-sized burst of each fits the buffer).
#  * DCQCN (default): CNPs flow, after convergence the queue's 95th
#    percentile is below half the buffer (without DCQCN it fills the
#    buffer), at most 1 in 1000 is dropped, and the two flows share with
#    Jain's fairness index >= 0.85. Quiet, the 95th stays at 53-62 kB,
#    inside RED's band (below Kmax), and Jain near 1; at load 22 under
#    ASan it read 136 and 166 kB and Jain 0.884 once (2026-12-07): the
#    loop runs on ms-scale CPU scheduling, so these bounds are what the
#    mechanism guarantees, and the issue's targets (Jain >= 0.95, a
#    bounded queue) are measured by bench/cc_wire.sh. The 99th
#    percentile is printed, not checked (docs/cc.md).
#  * UROCE_CC=none: data is not ECN-capable, the queue overflows, packets
#    are dropped and retransmitted.
# Rates come from uroce-stat --csv (per QP, every 100 ms), the queue from
# uroce-nfq --report. Exit 77 when not root / no netns / no uroce-nfq.
#   cc_lab.sh BUILDDIR          CC_OUT=DIR keeps the CSVs (bench/cc.sh)
#   CC_MODES="dcqcn none" CC_TIME=12 CC_RATE=300 ... to change the setup
set -uo pipefail
B=$(cd "${1:-build}" && pwd)
BIN=$B/bin
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MODES=${CC_MODES:-"dcqcn none"}
TIME=${CC_TIME:-12}      # seconds of flow 1 (dcqcn)
TIME_NONE=${CC_TIME_NONE:-6}
STAGGER=${CC_STAGGER:-2}
RATE=${CC_RATE:-100}     # Mbit/s
LIMIT=${CC_LIMIT:-450000}
KMIN=${CC_KMIN:-20000}
KMAX=${CC_KMAX:-100000}
PMAX=${CC_PMAX:-0.5}
# The lab's feedback loop is milliseconds, not microseconds (a software
# switch and NIC sharing 2 CPUs: CNPs come every few ms, not every 50 us).
# With K = 55 us alpha would decay to ~0.03 between CNPs and the cuts would
# vanish; K and T are scaled to 3 ms here (docs/cc.md). Over the mlx5
# profile, which this test was measured with (the default profile's
# 10 us CNP interval and 64 KiB byte counter are for microsecond loops).
export UROCE_DCQCN_PROFILE=${UROCE_DCQCN_PROFILE:-mlx5}
export UROCE_DCQCN_ALPHA_TIMER_US=${UROCE_DCQCN_ALPHA_TIMER_US:-3000}
export UROCE_DCQCN_RATE_TIMER_US=${UROCE_DCQCN_RATE_TIMER_US:-3000}

[[ $(id -u) -eq 0 ]] || { echo "SKIP: needs root"; exit 77; }
command -v ip >/dev/null && ip netns list >/dev/null 2>&1 || { echo "SKIP: ip netns unavailable"; exit 77; }
command -v iptables >/dev/null || { echo "SKIP: iptables not installed"; exit 77; }
command -v ib_write_bw >/dev/null || { echo "SKIP: perftest not installed"; exit 77; }
[[ -x $BIN/uroce-nfq ]] || { echo "SKIP: uroce-nfq not built (libnetfilter-queue-dev)"; exit 77; }
[[ -x $BIN/uroce-stat ]] || { echo "FAIL: uroce-stat not built"; exit 1; }

source "$HERE/../lab/netns.sh"
OUT=${CC_OUT:-}
WORK=$(mktemp -d /tmp/uroce-cc.XXXXXX)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	lab_nfq_stop >/dev/null 2>&1
	lab_down 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
lab_up --hosts 3 --mtu 1500 >/dev/null 2>&1 || { echo "FAIL: lab_up"; exit 1; }
IP1=$(lab_ip h1) IP2=$(lab_ip h2) IP3=$(lab_ip h3)
PORT=$((20000 + $$ % 1000))
FAILS=0
echo "== lab $UROCE_LAB: h1 $IP1 + h2 $IP2 -> h3 $IP3; port ${RATE} Mbit/s, buffer $LIMIT B, RED $KMIN..$KMAX B p $PMAX"

fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }

# run MODE SECONDS: one experiment; leaves $WORK/MODE.{rates,queue,nfq,s*,c*}
run() {
	local mode=$1 dur=$2 p1=$((PORT + 1)) p2=$((PORT + 2)) st h
	PORT=$((PORT + 2))
	UROCE_CC=$mode UROCE_IP=$IP3 lab_exec h3 timeout 60 "$BIN/uroce-run" \
		ib_write_bw -x 0 -F -p $p1 -D $((dur + 2)) >"$WORK/$mode.s1" 2>&1 &
	PIDS+=($!)
	UROCE_CC=$mode UROCE_IP=$IP3 lab_exec h3 timeout 60 "$BIN/uroce-run" \
		ib_write_bw -x 0 -F -p $p2 -D $((dur - STAGGER)) >"$WORK/$mode.s2" 2>&1 &
	PIDS+=($!)
	lab_nfq --from h1 -- --rate "$RATE" --limit "$LIMIT" --kmin "$KMIN" \
		--kmax "$KMAX" --pmax "$PMAX" --seed 7 --report "$WORK/$mode.queue" \
		>/dev/null || { fail "$mode: uroce-nfq"; return; }
	lab_sw iptables -A "$LAB_CHAIN" -i h2 -p udp --dport "$LAB_PORT" \
		-j NFQUEUE --queue-num 0 --queue-bypass
	sleep 0.5
	"$BIN/uroce-stat" --all-netns -w --csv -i 0.1 >"$WORK/$mode.rates" 2>/dev/null &
	st=$!
	UROCE_CC=$mode UROCE_IP=$IP1 lab_exec h1 timeout 60 "$BIN/uroce-run" \
		ib_write_bw -x 0 -F -p $p1 -D $((dur + 2)) "$IP3" >"$WORK/$mode.c1" 2>&1 &
	PIDS+=($!)
	sleep "$STAGGER"
	UROCE_CC=$mode UROCE_IP=$IP2 lab_exec h2 timeout 60 "$BIN/uroce-run" \
		ib_write_bw -x 0 -F -p $p2 -D $((dur - STAGGER)) "$IP3" >"$WORK/$mode.c2" 2>&1 &
	PIDS+=($!)
	# Our processes (other labs use the same addresses): by namespace.
	sleep 2
	for h in h1 h2 h3; do ip netns pids "$(lab_ns $h)"; done >"$WORK/$mode.pids"
	wait $!
	sleep 1
	kill $st 2>/dev/null
	wait "${PIDS[@]}" 2>/dev/null
	PIDS=()
	lab_nfq_stop >"$WORK/$mode.nfq" 2>&1
	if [[ -n $OUT ]]; then
		mkdir -p "$OUT"
		cp "$WORK/$mode.rates" "$OUT/cc-$mode-rates.csv"
		cp "$WORK/$mode.queue" "$OUT/cc-$mode-queue.csv"
		grep "^uroce-nfq:" "$WORK/$mode.nfq" >"$OUT/cc-$mode-nfq.txt"
	fi
}

# nfq FIELD MODE: a field of the switch's summary line
nfq() { grep -o "\b$1=[0-9]*" "$WORK/$2.nfq" | head -n1 | cut -d= -f2 | grep . || echo 0; }

# analyse MODE: prints "key=value" lines from the rates and queue CSVs
analyse() {
	python3 - "$WORK/$1.rates" "$WORK/$1.queue" "$IP1" "$IP2" "$WORK/$1.pids" <<'PY'
import csv, sys
rates, queue, ip1, ip2, pidf = sys.argv[1:6]
pids = set(open(pidf).read().split())
rows = [r for r in csv.DictReader(open(rates)) if r["pid"] in pids]
flows = {ip1: [], ip2: []}
cnp = {}
last = {}
for r in rows:
    a = r["addr"]
    if a in flows and float(r["tx_bps"]) > 0:
        flows[a].append((float(r["time_s"]), float(r["tx_bps"])))
    key = (r["pid"], r["qpn"])
    last[key] = r
tx_cnp = sum(int(r["tx_cnp"]) for r in last.values())
rx_cnp = sum(int(r["rx_cnp"]) for r in last.values())
retx = sum(int(r["tx_retransmit"]) for r in last.values())
print(f"tx_cnp={tx_cnp}\nrx_cnp={rx_cnp}\nretransmit={retx}")
# Converged: both flows running, from 3 s after the second one started
# until 1 s before it stopped.
t2 = [t for t, _ in flows[ip2]]
if len(t2) < 10 or not flows[ip1]:
    print("jain=0\nx1=0\nx2=0\np95=0\np99=0\nmaxq=0")
    sys.exit(0)
lo, hi = t2[0] + 3.0, t2[-1] - 1.0
def avg(f):
    v = [b for t, b in f if lo <= t <= hi]
    return sum(v) / len(v) if v else 0
x1, x2 = avg(flows[ip1]), avg(flows[ip2])
j = (x1 + x2) ** 2 / (2 * (x1 * x1 + x2 * x2)) if x1 + x2 else 0
print(f"jain={j:.3f}\nx1={x1/1e6:.1f}\nx2={x2/1e6:.1f}")
# The switch's clock starts with uroce-nfq, ~0.5 s before flow 1; the
# stat clock with uroce-stat, just before flow 1.
q = []
for line in open(queue):
    p = line.strip().split(",")
    if len(p) >= 2 and p[0].isdigit():
        t = int(p[0]) / 1e6 - 0.5
        if lo <= t <= hi:
            q.append(int(p[1]))
q.sort()
pct = lambda f: q[int(len(q) * f)] if q else 0
print(f"p95={pct(0.95)}\np99={pct(0.99)}\nmaxq={q[-1] if q else 0}\nqrows={len(q)}")
PY
}

val() { grep "^$1=" "$2" | cut -d= -f2; }

for mode in $MODES; do
	dur=$TIME
	[[ $mode == none ]] && dur=$TIME_NONE
	run "$mode" "$dur"
	analyse "$mode" >"$WORK/$mode.res"
	[[ -n $OUT ]] && cp "$WORK/$mode.res" "$OUT/cc-$mode-summary.txt"
	drops=$(nfq tail_dropped "$mode") marked=$(nfq marked "$mode") pk=$(nfq packets "$mode")
	stamped=$(nfq stamped "$mode")
	r=$WORK/$mode.res
	echo "-- $mode: switch packets=$pk (kernel-stamped $stamped) marked=$marked tail_dropped=$drops;" \
		"CNPs sent $(val tx_cnp "$r") handled $(val rx_cnp "$r"); retransmits $(val retransmit "$r");" \
		"converged: flows $(val x1 "$r") / $(val x2 "$r") Mbit/s, Jain $(val jain "$r")," \
		"queue p95 $(val p95 "$r") B p99 $(val p99 "$r") B max $(val maxq "$r") B"
	for f in c1 c2; do
		grep -q "^ 65536" "$WORK/$mode.$f" || { fail "$mode: ib_write_bw $f did not finish"; tail -3 "$WORK/$mode.$f"; }
	done
	if [[ $mode == dcqcn ]]; then
		[[ $(val tx_cnp "$r") -gt 0 && $(val rx_cnp "$r") -gt 0 ]] || fail "dcqcn: no CNPs"
		[[ $marked -gt 0 ]] || fail "dcqcn: the switch marked nothing"
		# At most 1 in 1000: a sender descheduled on a loaded 2-core
		# machine (ASan) can burst past the buffer once (9 of 100123
		# seen); without DCQCN the same run drops a fifth.
		[[ $((drops * 1000)) -le $pk ]] || fail "dcqcn: $drops of $pk packets dropped (more than 1 in 1000)"
		[[ $(val p95 "$r") -lt $((LIMIT / 2)) ]] || fail "dcqcn: queue p95 $(val p95 "$r") >= half the buffer ($((LIMIT / 2)))"
		awk -v j="$(val jain "$r")" 'BEGIN { exit !(j >= 0.85) }' || fail "dcqcn: Jain index $(val jain "$r") < 0.85"
	else
		[[ $drops -gt 0 ]] || fail "none: no tail drops (queue never overflowed)"
		[[ $(val retransmit "$r") -gt 0 ]] || fail "none: nothing retransmitted"
		[[ $(val tx_cnp "$r") -eq 0 ]] || fail "none: CNPs were sent (data should not be ECN-capable)"
	fi
done
[[ $FAILS -eq 0 ]] && echo "PASS" || echo "FAILED: $FAILS check(s)"
exit $((FAILS > 0))
