#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration: unmodified rping and ib_send_lat -R on uroce against a fake
# Linux rxe peer (rxe_peer) that plays the other side of the golden
# rxe-to-rxe captures rdma_cm_rping.pcap and rdma_cm_send_lat.pcap, CM and
# RC data: uroce as the server (the fake is rxe's client) and as the
# client (the fake is rxe's server). rping -V checks the data it wrote
# back; the fake checks every packet of uroce's against the capture (PSNs
# as Linux's CM sets them, QPNs, RETH, payload, ICRC). This is the
# exchange that failed against a Linux host in shared/wire/interop/.
#   rxe_replay.sh BINDIR
set -u
bin=$1
command -v rping >/dev/null || { echo "SKIP: no rping (rdmacm-utils)"; exit 77; }
dir=${UROCE_GOLDEN_DIR:-../shared/wire/rxe}
[ -r "$dir/rdma_cm_rping.pcap" ] || { echo "FAIL: no captures in $dir"; exit 1; }
us=127.0.0.4
peer=127.0.0.5
export UROCE_PORT=24791 # both sides; a test port of its own
fail=0
ulog=$(mktemp)
plog=$(mktemp)
trap 'rm -f "$ulog" "$plog"' EXIT

# verdict NAME RC_PEER RC_UROCE PATTERN COUNT: both exited 0 and uroce's
# program printed PATTERN COUNT times.
verdict() {
	local n
	n=$(grep -c -e "$4" "$ulog")
	cat "$plog"
	if [ "$2" != 0 ] || [ "$3" != 0 ] || [ "$n" != "$5" ]; then
		echo "FAIL: $1: rxe_peer rc=$2, uroce's program rc=$3, '$4' $n times (want $5)"
		echo "--- uroce's program:"; cat "$ulog"
		fail=1
	else
		echo "ok: $1: $(grep -e "$4" "$ulog" | tail -1)"
	fi
}

# server NAME CAPTURE PATTERN COUNT CMD...: uroce runs the server CMD, the
# fake plays the capture's client (the REQ's side).
server() {
	local name=$1 cap=$2 pat=$3 count=$4 spid prc src
	shift 4
	echo "== $name: uroce server, rxe client"
	UROCE_IP=$us timeout 60 "$bin/uroce-run" "$@" >"$ulog" 2>&1 &
	spid=$!
	timeout 60 "$bin/../tests/rxe_peer" "$dir/$cap" active $peer $us >"$plog" 2>&1
	prc=$?
	[ $prc = 0 ] || kill $spid 2>/dev/null # it would wait for a peer that gave up
	wait $spid
	src=$?
	verdict "$name server" $prc $src "$pat" "$count"
}

# client NAME CAPTURE PATTERN COUNT CMD...: the fake plays the capture's
# server, uroce runs the client CMD.
client() {
	local name=$1 cap=$2 pat=$3 count=$4 ppid prc crc
	shift 4
	echo "== $name: uroce client, rxe server"
	timeout 60 "$bin/../tests/rxe_peer" "$dir/$cap" passive $peer $us >"$plog" 2>&1 &
	ppid=$!
	sleep 0.2 # its socket is bound before our REQ (the programs do not retry)
	UROCE_IP=$us timeout 60 "$bin/uroce-run" "$@" >"$ulog" 2>&1
	crc=$?
	[ $crc = 0 ] || kill $ppid 2>/dev/null
	wait $ppid
	prc=$?
	verdict "$name client" $prc $crc "$pat" "$count"
}

# The capture: rping -C 2 -S 64 on port 7174 (0x1c06). The server prints
# the data it read, the capture's own (rping's pattern is the same on
# every host); the client checks what came back (-V).
server rping rdma_cm_rping.pcap \
	"server ping data: rdma-ping-0: ABCDEFGHIJKLMNOPQR\|server ping data: rdma-ping-1: BCDEFGHIJKLMNOPQRS" 2 \
	rping -s -a $us -p 7174 -C 2 -S 64 -V -v
client rping rdma_cm_rping.pcap "ping data: rdma-ping-[01]: " 2 \
	rping -c -a $peer -p 7174 -C 2 -S 64 -V -v

# perftest over rdma_cm (ib_send_lat -R -n 5 -F, port 18515): two
# connections, one for perftest's exchange and one for the test, and
# 2-byte SENDs both ways.
if command -v ib_send_lat >/dev/null; then
	server ib_send_lat rdma_cm_send_lat.pcap "^ 2 *5 " 1 ib_send_lat -R -n 5 -F
	client ib_send_lat rdma_cm_send_lat.pcap "^ 2 *5 " 1 ib_send_lat -R -n 5 -F $peer
fi
exit $fail
