#!/bin/sh
# Spraying on a real ECMP fabric (docs/wire.md "Spraying"). Two namespaces
# joined by two veth pairs, the hosts' addresses on lo (/32) and one route
# each way over both links, the kernel hashing UDP ports
# (fib_multipath_hash_policy=1). ur_integrity moves 48 MiB of SEND, WRITE,
# READ and atomics and checks every byte, once on one path and once
# sprayed:
#  - UROCE_SR=1 UROCE_PATHS=16: both links carry at least 1/20 of the
#    bytes a->b, every byte verified, no QP error (the kernel's hash of 16
#    random ports puts none on one of the links once in 32,768 runs);
#  - without UROCE_PATHS: one link carries nearly all (one QP, one port);
#  - UROCE_PATHS=4 without UROCE_SR=1 is refused with its reason.
#   spray.sh BINDIR
bin=${1:?usage: spray.sh BINDIR}
[ "$(id -u)" = 0 ] && ip netns list >/dev/null 2>&1 ||
	{ echo "SKIP: needs root and ip netns"; exit 77; }
a=uroce-spray-$$-a b=uroce-spray-$$-b
tmp=$(mktemp -d)
fails=0
cleanup() { ip netns del "$a" 2>/dev/null; ip netns del "$b" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
ip netns add "$a" && ip netns add "$b" || { echo "SKIP: ip netns add failed"; exit 77; }
for ns in "$a" "$b"; do
	ip -n "$ns" link set lo up
	ip netns exec "$ns" sysctl -qw net.ipv4.fib_multipath_hash_policy=1
done
ip -n "$a" link add p1a type veth peer name p1b netns "$b" &&
ip -n "$a" link add p2a type veth peer name p2b netns "$b" &&
ip -n "$a" addr add 10.95.1.1/30 dev p1a && ip -n "$b" addr add 10.95.1.2/30 dev p1b &&
ip -n "$a" addr add 10.95.2.1/30 dev p2a && ip -n "$b" addr add 10.95.2.2/30 dev p2b &&
for l in p1a p2a; do ip -n "$a" link set $l up; done &&
for l in p1b p2b; do ip -n "$b" link set $l up; done &&
ip -n "$a" addr add 10.95.0.1/32 dev lo && ip -n "$b" addr add 10.95.0.2/32 dev lo &&
ip -n "$a" route add 10.95.0.2/32 nexthop via 10.95.1.2 dev p1a nexthop via 10.95.2.2 dev p2a &&
ip -n "$b" route add 10.95.0.1/32 nexthop via 10.95.1.1 dev p1b nexthop via 10.95.2.1 dev p2b ||
	{ bad "the two-path fabric"; exit 1; }

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

if run "sprayed" UROCE_SR=1 UROCE_PATHS=16; then
	tot=$((P1 + P2))
	if [ $((P1 * 20)) -ge $tot ] && [ $((P2 * 20)) -ge $tot ]; then
		ok "UROCE_SR=1 UROCE_PATHS=16: all verified; link 1 carried $P1 bytes, link 2 $P2"
	else
		bad "UROCE_SR=1 UROCE_PATHS=16: link 1 carried $P1 bytes, link 2 $P2 (each at least 1/20)"
	fi
fi
if run "one path"; then
	tot=$((P1 + P2)) small=$P1
	[ $P2 -lt $small ] && small=$P2
	if [ $((small * 10)) -le $tot ]; then
		ok "one port: all verified; link 1 carried $P1 bytes, link 2 $P2"
	else
		bad "one port: link 1 carried $P1 bytes, link 2 $P2 (one link nearly all)"
	fi
fi
out=$(ip netns exec "$a" env UROCE_IP=10.95.0.1 UROCE_PATHS=4 "$bin/uroce-run" ibv_devinfo 2>&1)
case $out in
*"UROCE_PATHS=4 needs UROCE_SR=1"*) ok "UROCE_PATHS=4 without UROCE_SR=1 refused: $(echo "$out" | grep -m1 UROCE_PATHS)" ;;
*) bad "UROCE_PATHS=4 without UROCE_SR=1: $(echo "$out" | head -n 3)" ;;
esac
[ $fails = 0 ] || { echo "$fails check(s) failed"; exit 1; }
