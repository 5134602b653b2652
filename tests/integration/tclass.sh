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
	# -R: perftest's server listens through rdma_cm, not TCP.
	case " $1 " in *" -R "*) wait_cm 18517 ;; *) wait_tcp 18517 ;; esac
	UROCE_IP=$cli timeout 30 "$run" ib_write_lat -p 18517 -n 200 $2 "$srv" >"$dir/c.log" 2>&1
	local c=$?
	wait $s
	local r=$?
	if [ $c != 0 ] || [ $r != 0 ]; then
		echo "FAIL: ib_write_lat $1 / $2 ($r/$c)"; cat "$dir/s.log" "$dir/c.log"; fail=1
	fi
}

# One tshark pass per capture (each start costs about half a second):
# source, DSCP, ECN, BTH opcode and destination QP of every RoCE frame.
fields() { # pcap
	tshark -r "$1" -Y infiniband -T fields -E separator=' ' -e ip.src \
		-e ip.dsfield.dscp -e ip.dsfield.ecn -e infiniband.bth.opcode \
		-e infiniband.bth.destqp 2>/dev/null >"$1.txt"
}

# check pcap label from-ip dscp ecn-of-requests(any|N) [QPs left out, a,b]
# QP1's MADs (opcode 100: the selective-repeat hellos, docs/wire.md
# "Selective repeat negotiation", as the CM's) are never the QP's traffic.
check() {
	local f=$1 what=$2 ip=$3 dscp=$4 ecn=$5 n wrong acks badecn
	# opcode 17: RC Acknowledge (IBTA table 38)
	read -r n wrong acks badecn < <(awk -v ip="$ip" -v dscp="$dscp" -v ecn="$ecn" \
		-v ex="${6:-}" 'BEGIN { k = split(ex, a, ","); for (i = 1; i <= k; i++) skip[a[i]] = 1 }
		$1 == ip && $4 != 100 && !($5 in skip) {
			n++; if ($2 != dscp) wrong++
			if ($4 == 17) acks++; else if (ecn != "any" && $3 != ecn) badecn++
		}
		END { print n + 0, wrong + 0, acks + 0, badecn + 0 }' "$f.txt")
	if [ "$n" -lt 100 ] || [ "$wrong" != 0 ] || [ "$acks" = 0 ] || [ "$badecn" != 0 ]; then
		echo "FAIL: $what: from $ip $n frames, $wrong not DSCP $dscp, $acks ACKs, $badecn requests not ECN $ecn"
		awk -v ip="$ip" '$1 == ip { print $2, $3, $4 }' "$f.txt" | sort | uniq -c | head
		fail=1
	else
		echo "ok: $what: from $ip $n frames all DSCP $dscp ($acks ACKs), ECN of requests: $ecn"
	fi
}

export UROCE_GSO=0
capture "$dir/1.pcap"
lat "--tclass=96" "--tclass=184"
stop_capture
fields "$dir/1.pcap"
check "$dir/1.pcap" "verbs, client EF" $cli 46 any
check "$dir/1.pcap" "verbs, server CS3" $srv 24 any

capture "$dir/2.pcap"
UROCE_CC=dcqcn lat "--tclass=96" "--tclass=184"
stop_capture
fields "$dir/2.pcap"
check "$dir/2.pcap" "verbs, DCQCN, client EF" $cli 46 2
check "$dir/2.pcap" "verbs, DCQCN, server CS3" $srv 24 2

capture "$dir/3.pcap"
lat "-R" "-R --tos=184"
stop_capture
fields "$dir/3.pcap"
# QPs of the parameter exchange: those that SEND (opcode 4), both ends.
qps=$(awk '$4 == 4 { print $5 }' "$dir/3.pcap.txt" | sort -u | paste -sd, -)
check "$dir/3.pcap" "rdma_cm, client EF" $cli 46 any "$qps"
check "$dir/3.pcap" "rdma_cm, server (class of the REQ)" $srv 46 any "$qps"

exit $fail
