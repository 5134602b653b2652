#!/bin/bash
# SPDX-License-Identifier: MIT
# The packets uroce puts on the wire are real RoCEv2: capture an unmodified
# ibv_rc_pingpong run and check that uroce-decode verifies every ICRC and
# that Wireshark decodes every frame as InfiniBand.
#   capture.sh BINDIR [SENDFAULT_SO]
# 1. Loopback, UROCE_GSO=0; then with GSO, where lo shows a GSO run as one
#    large datagram that uroce-decode splits; also with UROCE_JUMBO=1 (16 KiB packets, data checked by the program),
#    and with SENDFAULT_SO preloaded: sendmmsg calls that go partly and
#    sends that fail, after which a connected socket's IDs must still be
#    the kernel's.
# 2. Two network namespaces joined by a veth pair whose UDP segmentation
#    offload is off, so the kernel cuts uroce's GSO runs into real frames on
#    the wire: proves the per-segment IP IDs and ICRCs (needs root), from
#    the QPs' connected sockets (IDs from the kernel's per-socket counter,
#    learnt by probes: src/io/csock.c) and, with UROCE_CONNECT=0, from
#    unconnected ones (ID = index in the GSO run).
set -u
. "$(dirname "$0")/caplib.sh"
cap_init "$1" ibv_rc_pingpong
fault_so=${2:+$(readlink -f "$2")}
ns="ur-cap-$$"
cleanup_more() {
	ip netns del "$ns-a" 2>/dev/null
	ip netns del "$ns-b" 2>/dev/null
}

check() { # pcap label min_frames
	local f=$1 what=$2 min=$3 n bad
	if ! "$bin/uroce-decode" -q "$f" >"$dir/decode.txt" 2>&1; then
		echo "FAIL: $what: uroce-decode"; cat "$dir/decode.txt"; fail=1; return
	fi
	n=$(tshark -r "$f" -T fields -e frame.number 2>/dev/null | wc -l)
	bad=$(tshark -r "$f" -Y '!infiniband' -T fields -e frame.number 2>/dev/null | wc -l)
	if [ "$n" -lt "$min" ] || [ "$bad" != 0 ]; then
		echo "FAIL: $what: $n frames, $bad not decoded as InfiniBand"; fail=1; return
	fi
	echo "ok: $what: $n frames, every ICRC verified, all InfiniBand in tshark"
	sed 's/^/    /' "$dir/decode.txt" | head -12
}

pingpong() { # nsexec_srv nsexec_cli srv_ip cli_ip extra...
	local xs=$1 xc=$2 sip=$3 cip=$4; shift 4
	UROCE_IP=$sip $xs timeout 30 "$run" ibv_rc_pingpong -g 0 -p 18515 "$@" >"$dir/s.log" 2>&1 &
	local s=$!
	sleep 0.4
	UROCE_IP=$cip $xc timeout 30 "$run" ibv_rc_pingpong -g 0 -p 18515 "$@" "$sip" >"$dir/c.log" 2>&1
	local c=$?
	wait $s
	local r=$?
	if [ $c != 0 ] || [ $r != 0 ]; then
		echo "FAIL: ibv_rc_pingpong $* ($c/$r)"; cat "$dir/s.log" "$dir/c.log"; fail=1
	fi
}

# Datagrams the last pingpong sent on connected sockets (UROCE_STATS=1
# prints the counters at exit).
connected_sends() {
	cat "$dir/s.log" "$dir/c.log" |
		sed -n 's/.*tx_connected=\([0-9]*\).*/\1/p' | awk '{n += $1} END {print n + 0}'
}
expect_connected() { # label want(yes|no)
	local n
	n=$(connected_sends)
	if { [ "$2" = yes ] && [ "$n" = 0 ]; } || { [ "$2" = no ] && [ "$n" != 0 ]; }; then
		echo "FAIL: $1: $n datagrams on connected sockets"; fail=1
	else
		echo "ok: $1: $n datagrams on connected sockets"
	fi
}
export UROCE_STATS=1

capture() { # nsexec iface file [extra filter]
	$1 dumpcap -q -i "$2" -f "udp port 4791 ${4:-}" -w "$3" >/dev/null 2>&1 &
	cap=$!
	sleep 1
}
stop_capture() { sleep 0.3; kill -INT "$cap" 2>/dev/null; wait "$cap" 2>/dev/null; cap=; }

# 1. loopback
# (addresses of our own, so other traffic on lo is not captured)
capture "" lo "$dir/lo.pcap" "and host 127.0.77.2 and host 127.0.77.3"
UROCE_GSO=0 pingpong "" "" 127.0.77.2 127.0.77.3 -n 20 -s 4096
UROCE_GSO=0 pingpong "" "" 127.0.77.2 127.0.77.3 -n 5 -s 100000 -m 4096
expect_connected "loopback" yes
UROCE_CONNECT=0 UROCE_GSO=0 pingpong "" "" 127.0.77.2 127.0.77.3 -n 5 -s 4096
expect_connected "loopback, UROCE_CONNECT=0" no
# A strict receiver accepts only unconnected IDs; a strict engine sends them.
UROCE_ICRC=strict UROCE_GSO=0 pingpong "" "" 127.0.77.2 127.0.77.3 -n 5 -s 4096
expect_connected "loopback, UROCE_ICRC=strict" no
stop_capture
check "$dir/lo.pcap" "loopback capture" 100

# 1a. loopback with GSO on (the default): lo shows each GSO run as one
# datagram, which uroce-decode splits into its packets (frames N.k), each
# ICRC verified over the headers the kernel gives the segment.
capture "" lo "$dir/gso.pcap" "and host 127.0.77.8 and host 127.0.77.9"
pingpong "" "" 127.0.77.8 127.0.77.9 -n 10 -s 65536 -m 1024
stop_capture
if ! "$bin/uroce-decode" -q "$dir/gso.pcap" >"$dir/decode.txt" 2>&1 ||
	! grep -q "GSO batches split" "$dir/decode.txt"; then
	echo "FAIL: loopback capture with GSO: uroce-decode"; cat "$dir/decode.txt"; fail=1
else
	echo "ok: loopback capture with GSO: $(head -1 "$dir/decode.txt")"
fi

# 1b. loopback with uroce's jumbo packets (UROCE_JUMBO=1 at both ends, a
# negotiated extension: docs/wire.md): the messages after the first travel
# in 16 KiB packets, every ICRC still verifies, tshark still decodes them,
# and ibv_rc_pingpong checks the data it receives (--chk).
capture "" lo "$dir/jumbo.pcap" "and host 127.0.77.4 and host 127.0.77.5"
UROCE_JUMBO=1 UROCE_GSO=0 pingpong "" "" 127.0.77.4 127.0.77.5 -n 5 -s 100000 -m 4096 -c
stop_capture
check "$dir/jumbo.pcap" "loopback capture, jumbo packets" 40
big=$(tshark -r "$dir/jumbo.pcap" -Y 'udp.length > 16384' -T fields -e frame.number 2>/dev/null | wc -l)
if [ "$big" -lt 10 ]; then
	echo "FAIL: jumbo packets: $big frames above 16 KiB"; fail=1
else
	echo "ok: jumbo packets: $big frames above 16 KiB"
fi

# 1c. connected sockets when sendmmsg goes partly: every 4th sendmmsg of
# several datagrams sends only the first (as when a later one fails: the
# kernel drops that error); every other time the engine's resend of the
# next one alone then fails with EAGAIN, which uses no ID. Every ICRC on
# the wire must still verify (the IDs stayed the kernel's), the QPs stay
# connected, and the program's data check passes (the rest of each
# faulted flush is lost and retransmitted).
if [ -n "$fault_so" ]; then
	capture "" lo "$dir/fault.pcap" "and host 127.0.77.6 and host 127.0.77.7"
	LD_PRELOAD=$fault_so UROCE_GSO=0 pingpong "" "" 127.0.77.6 127.0.77.7 -n 20 -s 100000 -m 4096 -c
	stop_capture
	faults=$(cat "$dir/s.log" "$dir/c.log" | sed -n 's/^sendfault: partial=\([0-9]*\) eagain=\([0-9]*\)/\1 \2/p' |
		awk '{p += $1; e += $2} END {print p + 0, e + 0}')
	if [ "${faults% *}" = 0 ] || [ "${faults#* }" = 0 ]; then
		echo "FAIL: sendmmsg faults: none made (partial, EAGAIN: $faults)"; fail=1
	else
		echo "ok: sendmmsg faults made (partial, EAGAIN): $faults"
	fi
	expect_connected "loopback, sendmmsg faults" yes
	check "$dir/fault.pcap" "loopback capture, sendmmsg faults" 100
fi

# 2. namespaces with segmentation on the wire
if [ "$(id -u)" = 0 ] && ip netns add "$ns-a" 2>/dev/null && ip netns add "$ns-b"; then
	ip link add "cap$$a" netns "$ns-a" type veth peer name "cap$$b" netns "$ns-b"
	ip -n "$ns-a" addr add 10.202.0.1/24 dev "cap$$a"
	ip -n "$ns-b" addr add 10.202.0.2/24 dev "cap$$b"
	for n in a b; do
		ip -n "$ns-$n" link set lo up
		ip -n "$ns-$n" link set "cap$$$n" up
		ip netns exec "$ns-$n" ethtool -K "cap$$$n" tx-udp-segmentation off >/dev/null 2>&1 ||
			ip netns exec "$ns-$n" ethtool -K "cap$$$n" tx-gso-partial off >/dev/null 2>&1
	done
	capture "ip netns exec $ns-b" "cap$$b" "$dir/veth.pcap"
	pingpong "ip netns exec $ns-a" "ip netns exec $ns-b" 10.202.0.1 10.202.0.2 -n 20 -s 65536 -m 1024
	stop_capture
	expect_connected "veth" yes
	check "$dir/veth.pcap" "veth capture (GSO cut on the wire, connected sockets)" 1000
	capture "ip netns exec $ns-b" "cap$$b" "$dir/veth0.pcap"
	UROCE_CONNECT=0 pingpong "ip netns exec $ns-a" "ip netns exec $ns-b" 10.202.0.1 10.202.0.2 -n 20 -s 65536 -m 1024
	stop_capture
	expect_connected "veth, UROCE_CONNECT=0" no
	check "$dir/veth0.pcap" "veth capture (GSO cut on the wire, unconnected sockets)" 1000
else
	echo "skip: namespace part needs root"
fi
exit $fail
