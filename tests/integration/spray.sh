#!/bin/sh
# Spraying on a real ECMP fabric (docs/wire.md "Spraying"). Two namespaces
# joined by two veth pairs, the hosts' addresses on lo (/32) and one route
# each way over both links, the kernel hashing UDP ports
# (fib_multipath_hash_policy=1). ur_integrity moves 48 MiB of SEND, WRITE,
# READ and atomics and checks every byte, once on one path and once
# sprayed:
#  - UROCE_SR=auto UROCE_PATHS=16 (selective repeat negotiated by the
#    two ends' hellos, counted): both links carry at least 1/20 of the
#    bytes a->b, every byte verified, no QP error (the kernel's hash of 16
#    random ports puts none on one of the links once in 32,768 runs);
#  - UROCE_PATHS=1: one link carries nearly all (one QP, one port);
#  - UROCE_PATHS=8 (SR auto): a's requests leave from 8 source ports or
#    more (captured at b, so not left to the hash);
#  - UROCE_PATHS=4 with UROCE_SR=0 is refused with its reason.
#   spray.sh BINDIR
bin=${1:?usage: spray.sh BINDIR}
. "$(dirname "$0")/twolink.sh"
twolink spray 95

txb() { ip -n "$a" -s -j link show "$1" | sed 's/.*"tx":{"bytes":\([0-9]*\).*/\1/'; }
port=18700
# run NAME [env...]: one checked transfer a -> b; sets P1 P2 (bytes a->b per link)
run() {
	name=$1
	shift
	port=$((port + 1))
	t1=$(txb p1a) t2=$(txb p2a)
	ip netns exec "$b" env UROCE_IP=10.95.0.2 UROCE_STATS=1 "$@" timeout 120 \
		"$bin/uroce-run" "$bin/../tests/ur_integrity" -p $port >"$tmp/s" 2>&1 &
	s=$!
	sleep 0.5
	ip netns exec "$a" env UROCE_IP=10.95.0.1 UROCE_STATS=1 "$@" timeout 120 \
		"$bin/uroce-run" "$bin/../tests/ur_integrity" -p $port -m 16 10.95.0.2 >"$tmp/c" 2>&1
	c=$?
	wait $s
	sr=$?
	P1=$(( $(txb p1a) - t1 )) P2=$(( $(txb p2a) - t2 ))
	if [ $c != 0 ] || [ $sr != 0 ] || ! grep -q "all verified" "$tmp/c"; then
		bad "$name: transfer (client rc=$c, server rc=$sr)"; tail -n 5 "$tmp/c" "$tmp/s"
		return 1
	fi
	return 0
}

if run "sprayed" UROCE_SR=auto UROCE_PATHS=16; then
	tot=$((P1 + P2))
	if [ $((P1 * 20)) -ge $tot ] && [ $((P2 * 20)) -ge $tot ]; then
		ok "UROCE_SR=auto UROCE_PATHS=16: all verified; link 1 carried $P1 bytes, link 2 $P2"
	else
		bad "UROCE_SR=auto UROCE_PATHS=16: link 1 carried $P1 bytes, link 2 $P2 (each at least 1/20)"
	fi
	if grep -q " rx_sr_hello=" "$tmp/c" && grep -q " rx_sr_hello=" "$tmp/s"; then
		ok "selective repeat negotiated: $(grep -o ' [tr]x_sr_hello=[0-9]*' "$tmp/c" | tr -d '\n')"
	else
		bad "no selective-repeat hello taken: $(grep counters "$tmp/c" "$tmp/s")"
	fi
fi
if run "one path" UROCE_PATHS=1; then
	tot=$((P1 + P2)) small=$P1
	[ $P2 -lt $small ] && small=$P2
	if [ $((small * 10)) -le $tot ]; then
		ok "one port: all verified; link 1 carried $P1 bytes, link 2 $P2"
	else
		bad "one port: link 1 carried $P1 bytes, link 2 $P2 (one link nearly all)"
	fi
fi
# Eight paths: the source ports of a's RoCE packets, as b's links see
# them (the QP's own, 7 further ones, QP1's).
if command -v dumpcap >/dev/null && command -v tshark >/dev/null; then
	ip netns exec "$b" dumpcap -q -i p1b -i p2b -f "udp dst port 4791 and src host 10.95.0.1" \
		-c 4000 -a duration:60 -w "$tmp/cap.pcapng" 2>"$tmp/cap.err" &
	d=$!
	for i in $(seq 100); do grep -q "Capturing on" "$tmp/cap.err" && break; sleep 0.1; done
	if run "eight paths" UROCE_PATHS=8; then
		wait $d
		n=$(tshark -r "$tmp/cap.pcapng" -T fields -e udp.srcport 2>/dev/null | sort -u | wc -l)
		if [ "$n" -ge 8 ]; then
			ok "UROCE_PATHS=8: all verified; a's requests from $n source ports; link 1 carried $P1 bytes, link 2 $P2"
		else
			bad "UROCE_PATHS=8: a's packets from $n source ports (at least 8)"
		fi
	else
		kill $d 2>/dev/null; wait $d
	fi
else
	echo "skip the eight paths' source ports: no dumpcap/tshark"
fi
# A sibling on b's address (src/io/pin.c): the kernel hashes a's 16 ports
# over both processes' sockets, so the sibling forwards some of the QP's
# requests (all 16 on the server's socket: once in 65,536 runs), and the
# server then pins a's address to one socket of its own.
ip netns exec "$b" env UROCE_IP=10.95.0.2 timeout 120 "$bin/uroce-run" \
	"$bin/../tests/ur_integrity" -p 18799 >"$tmp/sib" 2>&1 &
sib=$!
sleep 0.5
if run "sibling" UROCE_PATHS=16 UROCE_LOG=info; then
	if grep -q "10.95.0.1 sprays: its datagrams pinned" "$tmp/s"; then
		ok "a sibling on b's address, UROCE_PATHS=16: all verified, a's address pinned ($(grep -o ' rx_sr_spurious=[0-9]*' "$tmp/s" || echo ' rx_sr_spurious=0'))"
	else
		bad "a sibling on b's address: a's address not pinned: $(grep -i 'pin\|counters' "$tmp/s" | head -n 3)"
	fi
fi
kill $sib 2>/dev/null
wait $sib 2>/dev/null
out=$(ip netns exec "$a" env UROCE_IP=10.95.0.1 UROCE_SR=0 UROCE_PATHS=4 "$bin/uroce-run" ibv_devinfo 2>&1)
case $out in
*"UROCE_PATHS=4 needs selective repeat"*) ok "UROCE_PATHS=4 with UROCE_SR=0 refused: $(echo "$out" | grep -m1 UROCE_PATHS)" ;;
*) bad "UROCE_PATHS=4 with UROCE_SR=0: $(echo "$out" | head -n 3)" ;;
esac
[ $fails = 0 ] || { echo "$fails check(s) failed"; exit 1; }
