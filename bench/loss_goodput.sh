#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Goodput of uroce under random loss as a fraction of the loss-free goodput,
# in the namespace lab (tests/lab/netns.sh, 1500-byte veths, loss applied in
# the switch to both directions). Each point is one ur_integrity transfer
# (SEND + WRITE streams, every byte verified; --no-read, see docs/faults.md)
# from h1 to h2, with go-back-N (UROCE_SR=0) and with selective repeat
# (UROCE_SR=auto, or SR_ON); the table lists the median of REPS runs.
#   bench/loss_goodput.sh [BINDIR] [MIB] [REPS]     (root)
# RATE (e.g. 300mbit): shape the switch's port towards h2 with tbf (the
# data direction), so that the path, not the CPU, is the bottleneck, and
# add one TCP stream (iperf3, 3 s, 64 KiB writes) through the same loss
# and shaper as the peer.
# Prints a markdown table; bench/results/loss_goodput.md is a saved run.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BIN=$(cd "${1:-$HERE/../build/bin}" && pwd)
MIB=${2:-64}
REPS=${3:-3}
LOSSES=${LOSSES:-"0 0.1 1 2 5"}
[[ $(id -u) -eq 0 ]] || { echo "needs root (network namespaces)"; exit 77; }
source "$HERE/../tests/lab/netns.sh"
lab_up --hosts 2 --mtu 1500 >/dev/null 2>&1 || exit 1
trap lab_down EXIT
IP1=$(lab_ip h1); IP2=$(lab_ip h2)
RATE=${RATE:-}
if [[ -n $RATE ]]; then
	lab_sw tc qdisc add dev h2 root tbf rate "$RATE" burst 32k latency 20ms || exit 1
fi
PORT=$((21000 + $$ % 1000))
WORK=$(mktemp -d)

run() { # SR-MODE -> Mbit/s retransmits
	PORT=$((PORT + 1))
	UROCE_SR=$1 UROCE_STATS=1 UROCE_IP=$IP2 lab_exec h2 timeout 300 "$BIN/uroce-run" "$BIN/../tests/ur_integrity" -p $PORT \
		>"$WORK/s" 2>&1 &
	local spid=$!
	sleep 0.3
	UROCE_SR=$1 UROCE_STATS=1 UROCE_IP=$IP1 lab_exec h1 timeout 300 "$BIN/uroce-run" "$BIN/../tests/ur_integrity" -p $PORT \
		-m "$MIB" --no-read "$IP2" >"$WORK/c" 2>&1 || kill $spid 2>/dev/null
	wait $spid
	local m r
	m=$(sed -n 's/.*= \([0-9.]*\) Mbit\/s.*all verified/\1/p' "$WORK/c")
	r=$(grep -o 'tx_retransmit=[0-9]*' "$WORK/c" | cut -d= -f2)
	echo "${m:-FAIL} ${r:-0}"
}

tcp() { # -> Mbit/s of one iperf3 stream h1 -> h2
	lab_exec h2 timeout 20 iperf3 -s -1 -p $((PORT + 500)) >/dev/null 2>&1 &
	local spid=$!
	sleep 0.3
	lab_exec h1 timeout 20 iperf3 -c "$IP2" -p $((PORT + 500)) -t 3 -l 64K -J 2>/dev/null |
		/usr/bin/python3 -c 'import json,sys; print("%.1f" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 1e6))' 2>/dev/null || echo FAIL
	wait $spid 2>/dev/null
}

median() { sort -g | awk '{ a[NR] = $1 } END { print (NR ? a[int((NR + 1) / 2)] : "FAIL") }'; }

echo "uroce goodput under loss: $MIB MiB SEND+WRITE per run, median of $REPS, $(nproc) CPUs, $(uname -r), lab MTU 1500 (path MTU 1024)"
echo
[[ -n $RATE ]] && echo "Path shaped to $RATE (tbf at the switch, towards h2); TCP: one iperf3 stream, 64 KiB writes, 3 s, through the same loss." && echo
echo "Each loss rate: go-back-N (UROCE_SR=0) and selective repeat (UROCE_SR=${SR_ON:-auto}: negotiated between the two uroce ends), alternating; UROCE_PATHS=${UROCE_PATHS:-1}."
echo
echo "| loss % | go-back-N Mbit/s | SR Mbit/s | SR / go-back-N | go-back-N retransmits | SR retransmits |${RATE:+ TCP Mbit/s |}"
echo "|---|---|---|---|---|---|${RATE:+---|}"
for l in $LOSSES; do
	lab_clear >/dev/null 2>&1
	[[ $l != 0 ]] && lab_loss "$l" 2>/dev/null
	: >"$WORK/g0"; : >"$WORK/r0"; : >"$WORK/g1"; : >"$WORK/r1"
	for ((i = 0; i < REPS; i++)); do
		read -r m r < <(run 0)
		[[ $m != FAIL ]] && echo "$m" >>"$WORK/g0"
		echo "$r" >>"$WORK/r0"
		read -r m r < <(run "${SR_ON:-auto}")
		[[ $m != FAIL ]] && echo "$m" >>"$WORK/g1"
		echo "$r" >>"$WORK/r1"
	done
	g0=$(median <"$WORK/g0"); r0=$(median <"$WORK/r0")
	g1=$(median <"$WORK/g1"); r1=$(median <"$WORK/r1")
	ratio=$(awk -v a="$g1" -v b="$g0" 'BEGIN { if (a == "FAIL" || b == "FAIL" || b == 0) print "-"; else printf "%.2f", a / b }')
	t=""
	[[ -n $RATE ]] && t=" $(tcp) |"
	echo "| $l | $g0 | $g1 | $ratio | $r0 | $r1 |$t"
done
rm -rf "$WORK"
