#!/bin/sh
# A bonded port (docs/ports-classes.md "Bonded port"): two namespaces
# joined by two veth pairs, the hosts' addresses on lo (/32) with a route
# over both links (twolink.sh). Each side's device on that address is
# bonded over its two veths (UROCE_IP, UROCE_BOND, UROCE_SR=1), and
# ur_integrity moves 16 MiB of SEND, WRITE, READ and atomics over one RC QP
# and checks every byte:
#  - both links up: each carries at least a quarter of the bytes a->b;
#  - link 2 down (ip link set down) for the whole transfer: every byte
#    verified, no QP error, link 2 carries nothing (its packets leave by
#    link 1: the engine watches the bonded links' state);
#  - link 2 starting to drop everything (iptables, both ways, both
#    hosts) once it has carried 1 MB of a 48 MiB transfer: every byte
#    verified, no QP error (each host hears nothing on link 2 and takes it
#    out of the spray, docs/ports-classes.md "Bonded port"); BOND_CUT=0
#    skips it; the drop ends once the data is verified;
#  - link 1, then link 2, dropping everything (iptables, both ways, both
#    hosts) before the connection is made and until it is torn down:
#    unmodified rping (rdma_cm, -V: every ping verified) connects, runs
#    200 pings and disconnects; the CM's MADs leave by every bonded link
#    (gsi.c), so one of the two runs has the link that QP1's source port
#    would pick dead (ur_integrity, above, is connected by TCP, which the
#    route hashes onto one link);
#  - a bad UROCE_BOND (an unknown interface) is refused, naming it.
#   [BOND_CUT=0] bond.sh BINDIR
bin=${1:?usage: bond.sh BINDIR}
. "$(dirname "$0")/twolink.sh"
twolink bond 92

txb() { ip -n "$a" -s -j link show "$1" | sed 's/.*"tx":{"bytes":\([0-9]*\).*/\1/'; }
SR="UROCE_SR=1 UROCE_SR_REORDER_US=2000"
port=18600
# run NAME: one checked transfer a -> b, bonded; sets P1 P2 (bytes a->b)
run() {
	name=$1
	port=$((port + 1))
	t1=$(txb p1a) t2=$(txb p2a)
	ip netns exec "$b" env UROCE_IP=10.92.0.2 UROCE_BOND=p1b,p2b $SR timeout 120 \
		"$bin/uroce-run" "$bin/../tests/ur_integrity" -p $port >"$tmp/s" 2>&1 &
	s=$!
	sleep 0.5
	ip netns exec "$a" env UROCE_IP=10.92.0.1 UROCE_BOND=p1a,p2a $SR timeout 120 \
		"$bin/uroce-run" "$bin/../tests/ur_integrity" -p $port -m ${MIB:-16} 10.92.0.2 >"$tmp/c" 2>&1 &
	c=$!
	# CUT: a command run once the client has moved its first bytes
	if [ -n "${CUT:-}" ]; then
		for i in $(seq 200); do
			[ $(( $(txb p2a) - t2 )) -gt 1000000 ] && break
			sleep 0.05
		done
		$CUT
		# UNCUT once the transfer is verified: the rdma_cm teardown's
		# MADs leave by the route's one link, not by the bond
		while kill -0 $c 2>/dev/null && ! grep -q "all verified" "$tmp/c"; do
			sleep 0.05
		done
		$UNCUT
	fi
	wait $c
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
dropl() { # -A|-D N: everything on link N, both ways, both hosts
	ip netns exec "$a" iptables "$1" OUTPUT -o p$2a -j DROP &&
	ip netns exec "$a" iptables "$1" INPUT -i p$2a -j DROP &&
	ip netns exec "$b" iptables "$1" OUTPUT -o p$2b -j DROP &&
	ip netns exec "$b" iptables "$1" INPUT -i p$2b -j DROP
}
drop2() { dropl "$1" 2; }

if run "bonded"; then
	tot=$((P1 + P2))
	if [ $((P1 * 4)) -ge $tot ] && [ $((P2 * 4)) -ge $tot ]; then
		ok "bonded: all verified; link 1 carried $P1 bytes, link 2 $P2"
	else
		bad "bonded: link 1 carried $P1 bytes, link 2 $P2 (each at least a quarter)"
	fi
fi
if [ "${BOND_CUT:-1}" = 0 ]; then
	echo "skip: link 2 dropping everything (BOND_CUT=0)"
elif command -v iptables >/dev/null; then
	if CUT="drop2 -A" UNCUT="drop2 -D" MIB=48 run "link 2 dropping"; then
		ok "link 2 dropping everything from 1 MB on: all verified, no QP error (link 1 $P1 bytes; link 2 $P2)"
	fi
	drop2 -D 2>/dev/null
	for l in 1 2; do
		command -v rping >/dev/null || { echo "skip: no rping"; break; }
		dropl -A $l
		port=$((port + 1))
		t1=$(txb p1a) t2=$(txb p2a)
		ip netns exec "$b" env UROCE_IP=10.92.0.2 UROCE_BOND=p1b,p2b $SR timeout 60 \
			"$bin/uroce-run" rping -s -a 10.92.0.2 -p $port -C 200 -S 4096 -V >"$tmp/s" 2>&1 &
		s=$!
		sleep 0.5
		ip netns exec "$a" env UROCE_IP=10.92.0.1 UROCE_BOND=p1a,p2a $SR timeout 60 \
			"$bin/uroce-run" rping -c -a 10.92.0.2 -p $port -C 200 -S 4096 -V >"$tmp/c" 2>&1
		c=$?
		wait $s
		sr=$?
		P1=$(( $(txb p1a) - t1 )) P2=$(( $(txb p2a) - t2 ))
		eval dead=\$P$l
		if [ $c != 0 ] || [ $sr != 0 ]; then
			bad "link $l dead at connect: rping (client rc=$c, server rc=$sr)"
			tail -n 5 "$tmp/c" "$tmp/s"
		elif [ "$dead" -ge 100000 ]; then
			bad "link $l dead at connect: it carried $dead bytes"
		else
			ok "link $l dropping everything from before the connection to after it: rping connected, 200 pings verified, disconnected (link 1 $P1 bytes, link 2 $P2)"
		fi
		dropl -D $l 2>/dev/null
	done
else
	echo "skip: no iptables"
fi
ip -n "$b" link set p2b down
if run "link 2 down"; then
	if [ $P2 -lt 100000 ]; then
		ok "link 2 down: all verified, no QP error (link 1 $P1 bytes, link 2 $P2)"
	else
		bad "link 2 down: link 2 carried $P2 bytes"
	fi
fi
ip -n "$b" link set p2b up
out=$(ip netns exec "$a" env UROCE_IP=10.92.0.1 UROCE_BOND=p1a,nosuch $SR timeout 20 \
	"$bin/uroce-run" "$bin/../tests/ur_integrity" -p $((port + 1)) -m 1 10.92.0.2 2>&1)
if echo "$out" | grep -q "UROCE_BOND=p1a,nosuch.*allowed"; then
	ok "a bad UROCE_BOND is refused with what is allowed"
else
	bad "UROCE_BOND=p1a,nosuch: $out"
fi
[ $fails = 0 ] && echo PASS || echo "FAILED: $fails"
[ $fails = 0 ]
