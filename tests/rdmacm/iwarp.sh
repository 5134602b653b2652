#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration: iWARP end to end (UROCE_IWARP=1, docs/rdmacm.md "iWARP").
# Unmodified rping and perftest (-R: rdma_cm) over TCP + MPA:
#  1. loopback (server 127.0.0.2, client 127.0.0.3): rping -V (the client
#     compares what came back), ib_write_bw/ib_read_bw/ib_send_bw -R,
#     ib_write_lat -R; ibv_devinfo says transport iWARP; a connect to a
#     port nobody listens on is REJECTED (-ECONNREFUSED, as iw_cm says);
#  2. a capture of an rping run read by tshark: the MPA Request and Reply
#     and every DDP/RDMAP segment decoded, nothing malformed, no TCP
#     payload left undecoded;
#  3. two network namespaces behind the lab's switch (tests/lab/netns.sh)
#     dropping 1 % of the TCP segments (iptables statistic): rping -V with
#     60 KB pings and ib_write_bw -R still pass (TCP recovers), and the
#     switch's counter shows the drops happened.
#   iwarp.sh BINDIR
set -uo pipefail
BIN=$(cd "$1" && pwd)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
run=$BIN/uroce-run
export UROCE_IWARP=1
for t in rping ib_write_bw ib_read_bw ib_send_bw ib_write_lat ibv_devinfo; do
	command -v $t >/dev/null || { echo "SKIP: $t not installed"; exit 77; }
done
WORK=$(mktemp -d /tmp/uroce-iwarp.XXXXXX)
fail=0
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	[[ -n ${UROCE_LAB:-} ]] && { kill_host h1; kill_host h2; lab_down 2>/dev/null; }
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
T0=$SECONDS

# wait_tcp PORT [PREFIX...]: until a TCP listener (IPv4 or IPv6: the
# iWARP listeners are dual-stack, which a /proc/net/tcp pattern missed,
# costing 10 s per pair) is up
source "$(dirname "${BASH_SOURCE[0]}")/../listen.sh"
# pair NAME PORT EXPECT SIP CIP SERVER-CMD -- CLIENT-CMD, with $pre the
# command prefix of the server's and the client's host ("" on loopback).
pair() {
	local name=$1 port=$2 expect=$3 sip=$4 cip=$5 scmd=() spid crc src
	shift 5
	while [[ $1 != -- ]]; do scmd+=("$1"); shift; done
	shift
	UROCE_IP=$sip $spre timeout 60 "$run" "${scmd[@]}" >"$WORK/s" 2>&1 &
	spid=$!
	pids+=($spid)
	wait_tcp "$port" $spre || echo "note: $name: no TCP listener on $port"
	UROCE_IP=$cip $cpre timeout 60 "$run" "$@" >"$WORK/c" 2>&1
	crc=$?
	wait $spid
	src=$?
	if [[ $crc != 0 || $src != 0 ]] || ! grep -q -- "$expect" "$WORK/c" ||
		grep -q "data mismatch" "$WORK/c" "$WORK/s"; then
		echo "FAIL: $name: client rc=$crc, server rc=$src"
		echo "--- server: ${scmd[*]}"; tail -n 20 "$WORK/s"
		echo "--- client: $*"; tail -n 20 "$WORK/c"
		fail=1
	else
		echo "ok: $name: $(grep -- "$expect" "$WORK/c" | tail -n 1 | cut -c 1-90)"
	fi
}

# ---- 1. loopback -------------------------------------------------------
spre="" cpre=""
S=127.0.0.2 C=127.0.0.3
if UROCE_IP=$S "$run" ibv_devinfo | grep -q "transport:.*iWARP (1)"; then
	echo "ok: ibv_devinfo: transport iWARP"
else
	echo "FAIL: ibv_devinfo does not say iWARP"; UROCE_IP=$S "$run" ibv_devinfo; fail=1
fi
pair rping 7174 "rdma-ping-19:" $S $C rping -s -a $S -V -v -C 20 -- rping -c -a $S -V -v -C 20
pair ib_write_bw 18515 "^ 65536" $S $C ib_write_bw -R -n 100 -- ib_write_bw -R -n 100 $S
pair ib_read_bw 18515 "^ 65536" $S $C ib_read_bw -R -n 100 -- ib_read_bw -R -n 100 $S
pair ib_send_bw 18515 "^ 65536" $S $C ib_send_bw -R -n 100 -- ib_send_bw -R -n 100 $S
pair ib_write_lat 18515 "^ 2 " $S $C ib_write_lat -R -n 100 -- ib_write_lat -R -n 100 $S
out=$(UROCE_IP=$C timeout 10 "$run" rping -c -a $S -p 9998 -C 1 -v 2>&1)
rc=$?
if [[ $rc == 124 ]] || ! grep -q "RDMA_CM_EVENT_REJECTED, error -111" <<<"$out"; then
	echo "FAIL: rping to a port without listener (rc=$rc): $out"; fail=1
else
	echo "ok: no listener -> RDMA_CM_EVENT_REJECTED, error -111"
fi

# ---- 2. tshark ------------------------------------------------------------
if command -v tshark >/dev/null; then
	tshark -i lo -f "tcp port 7175" -w "$WORK/iw.pcap" -q >"$WORK/tshark.log" 2>&1 &
	tpid=$!
	pids+=($tpid)
	for i in $(seq 1 100); do grep -q "Capture started\|Capturing on" "$WORK/tshark.log" && break; sleep 0.05; done
	sleep 0.3
	pair rping-capture 7175 "rdma-ping-9:" $S $C rping -s -a $S -p 7175 -V -v -C 10 -S 5000 -- rping -c -a $S -p 7175 -V -v -C 10 -S 5000
	sleep 0.3
	kill -INT $tpid; wait $tpid 2>/dev/null
	ts() { tshark -n -r "$WORK/iw.pcap" --disable-heuristic rpcrdma_iwarp "$@" 2>/dev/null; }
	rr=$(ts -Y "iwarp_mpa.rev" | wc -l)
	ddp=$(ts -Y "iwarp_ddp" | wc -l)
	mal=$(ts -Y "_ws.malformed || _ws.expert.severity == error" | wc -l)
	raw=$(ts -Y "tcp.len > 0 && !iwarp_mpa && !tcp.segment" | wc -l)
	ops=$(ts -Y iwarp_rdma -T fields -e iwarp_rdma.opcode | sort -u | tr '\n' ' ')
	echo "tshark: $rr MPA Request/Reply, $ddp frames with DDP, opcodes [$ops], $mal malformed, $raw undecoded"
	if [[ $rr != 2 || $ddp -lt 40 || $mal != 0 || $raw != 0 ]]; then
		echo "FAIL: tshark"; fail=1
	fi
else
	echo "note: no tshark: capture check skipped"
fi

# ---- 3. two namespaces, 1 % loss ----------------------------------------------
if [[ $(id -u) -eq 0 ]] && ip netns list >/dev/null 2>&1; then
	source "$HERE/../lab/netns.sh"
	kill_host() { ip netns pids "$(lab_ns "$1")" 2>/dev/null | xargs -r kill -9 2>/dev/null; }
	if lab_up --hosts 2 >/dev/null 2>&1; then
		S=$(lab_ip h2) C=$(lab_ip h1)
		spre="lab_exec h2" cpre="lab_exec h1"
		lab_sw iptables -A FORWARD -p tcp -m statistic --mode random --probability 0.01 -j DROP
		# -V: the client compares each 60 KB ping that came back.
		pair rping-loss 7174 "destroy cm_id" $S $C rping -s -a $S -V -C 30 -S 60000 -- rping -c -a $S -V -d -C 30 -S 60000
		pair ib_write_bw-loss 18515 "^ 65536" $S $C ib_write_bw -R -n 100 -- ib_write_bw -R -n 100 $S
		drops=$(lab_sw iptables -L FORWARD -v -x -n | awk '/statistic/ {print $1}')
		echo "switch dropped ${drops:-?} TCP segments (1 %)"
		if [[ -z $drops || $drops == 0 ]]; then
			echo "FAIL: the switch dropped nothing: loss not exercised"; fail=1
		fi
	else
		echo "FAIL: lab_up"; fail=1
	fi
else
	echo "note: no network namespaces (needs root): loss part skipped"
fi
echo "== done in $((SECONDS - T0)) s"
exit $fail
