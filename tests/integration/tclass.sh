#!/bin/bash
# SPDX-License-Identifier: MIT
# Traffic classes on the wire (docs/wire.md "Traffic classes"): each QP's
# AV traffic class is the IP TOS byte of every packet it sends, requests
# and answers; each side answers in its own class. Captured with dumpcap,
# read with tshark, on loopback (addresses of our own).
#   tclass.sh BINDIR
# 1. ib_write_lat, client --tclass=184 (DSCP 46, EF), server --tclass=96
#    (DSCP 24, CS3): every frame from the client DSCP 46, every frame from
#    the server DSCP 24, ACKs included in both directions.
# 2. the same under DCQCN (UROCE_CC=dcqcn): requests ECT(0), DSCP kept.
# 3. rdma_cm (ib_write_lat -R --tos=184 on the client only): the passive
#    side takes the class the REQ carries, so both directions are DSCP 46.
#    Left out there: the CM MADs (QP1, class 0) and perftest's own
#    parameter exchange, a second rdma_cm connection without --tos (its
#    QPs are the ones that SEND).
set -u
. "$(dirname "$0")/caplib.sh"
. "$(dirname "$0")/../listen.sh"
cap_init "$1" ib_write_lat
srv=127.0.78.2 cli=127.0.78.3

capture() { # file
	dumpcap -q -i lo -f "udp port 4791 and host $srv and host $cli" -w "$1" >/dev/null 2>&1 &
	cap=$!
	sleep 1
}
stop_capture() { sleep 0.3; kill -INT "$cap" 2>/dev/null; wait "$cap" 2>/dev/null; cap=; }

lat() { # "server args" "client args"
	UROCE_IP=$srv timeout 30 "$run" ib_write_lat -p 18517 -n 200 $1 >"$dir/s.log" 2>&1 &
	local s=$!
	wait_tcp 18517
	UROCE_IP=$cli timeout 30 "$run" ib_write_lat -p 18517 -n 200 $2 "$srv" >"$dir/c.log" 2>&1
	local c=$?
	wait $s
	local r=$?
	if [ $c != 0 ] || [ $r != 0 ]; then
		echo "FAIL: ib_write_lat $1 / $2 ($r/$c)"; cat "$dir/s.log" "$dir/c.log"; fail=1
	fi
}

# check pcap label from-ip dscp ecn-of-requests(any|N) [filter]
check() {
	local f=$1 what=$2 ip=$3 dscp=$4 ecn=$5 n wrong acks badecn
	ip="$ip && ${6:-frame}"
	n=$(tshark -r "$f" -Y "ip.src == $ip && infiniband" -T fields -e frame.number 2>/dev/null | wc -l)
	wrong=$(tshark -r "$f" -Y "ip.src == $ip && ip.dsfield.dscp != $dscp" -T fields -e frame.number 2>/dev/null | wc -l)
	# opcode 17: RC Acknowledge (IBTA table 38)
	acks=$(tshark -r "$f" -Y "ip.src == $ip && infiniband.bth.opcode == 17" -T fields -e frame.number 2>/dev/null | wc -l)
	badecn=0
	[ "$ecn" != any ] && badecn=$(tshark -r "$f" \
		-Y "ip.src == $ip && infiniband.bth.opcode != 17 && ip.dsfield.ecn != $ecn" \
		-T fields -e frame.number 2>/dev/null | wc -l)
	if [ "$n" -lt 100 ] || [ "$wrong" != 0 ] || [ "$acks" = 0 ] || [ "$badecn" != 0 ]; then
		echo "FAIL: $what: from ${ip%% *} $n frames, $wrong not DSCP $dscp, $acks ACKs, $badecn requests not ECN $ecn"
		tshark -r "$f" -Y "ip.src == $ip" -T fields -e ip.dsfield.dscp -e ip.dsfield.ecn \
			-e infiniband.bth.opcode 2>/dev/null | sort | uniq -c | head
		fail=1
	else
		echo "ok: $what: from ${ip%% *} $n frames all DSCP $dscp ($acks ACKs), ECN of requests: $ecn"
	fi
}

export UROCE_GSO=0
# QP1's MADs (opcode 100: the selective-repeat hellos, docs/wire.md
# "Selective repeat negotiation", as the CM's below) are not the QP's
# traffic: every frame of the QPs is checked.
qp="infiniband.bth.opcode != 100"
capture "$dir/1.pcap"
lat "--tclass=96" "--tclass=184"
stop_capture
check "$dir/1.pcap" "verbs, client EF" $cli 46 any "$qp"
check "$dir/1.pcap" "verbs, server CS3" $srv 24 any "$qp"

capture "$dir/2.pcap"
UROCE_CC=dcqcn lat "--tclass=96" "--tclass=184"
stop_capture
check "$dir/2.pcap" "verbs, DCQCN, client EF" $cli 46 2 "$qp"
check "$dir/2.pcap" "verbs, DCQCN, server CS3" $srv 24 2 "$qp"

capture "$dir/3.pcap"
lat "-R" "-R --tos=184"
stop_capture
# QPs of the parameter exchange: those that SEND (opcode 4), both ends.
qps=$(tshark -r "$dir/3.pcap" -Y "infiniband.bth.opcode == 4" -T fields -e infiniband.bth.destqp 2>/dev/null | sort -u | paste -sd, -)
data="infiniband.bth.opcode != 100 && !(infiniband.bth.destqp in {${qps:-0}})"
check "$dir/3.pcap" "rdma_cm, client EF" $cli 46 any "$data"
check "$dir/3.pcap" "rdma_cm, server (class of the REQ)" $srv 46 any "$data"

exit $fail
