# Sourced by the two-link tests (route_mtu.sh, spray.sh): two network
# namespaces $a and $b joined by two veth links p1 and p2, each host's
# address a /32 on lo (10.NET.0.1 and .2), one route each way over both
# links (ECMP). Sets a, b, tmp, fails, ok(), bad(); skips (77) without
# root or ip netns.
#   twolink NAME NET [MTU1 MTU2]
twolink() {
	local net=$2 m1=${3:-1500} m2=${4:-1500}
	[ "$(id -u)" = 0 ] && ip netns list >/dev/null 2>&1 ||
		{ echo "SKIP: needs root and ip netns"; exit 77; }
	a=uroce-$1-$$-a b=uroce-$1-$$-b
	tmp=$(mktemp -d)
	fails=0
	trap 'ip netns del "$a" 2>/dev/null; ip netns del "$b" 2>/dev/null; rm -rf "$tmp"' EXIT
	# ctest's timeout ends a test with SIGTERM, and sh runs no EXIT trap
	# on a signal: two such runs left their namespaces behind.
	trap 'exit 143' TERM INT HUP
	ip netns add "$a" && ip netns add "$b" || { echo "SKIP: ip netns add failed"; exit 77; }
	for ns in "$a" "$b"; do
		ip -n "$ns" link set lo up
		ip netns exec "$ns" sysctl -qw net.ipv4.fib_multipath_hash_policy=1
	done
	ip -n "$a" link add p1a type veth peer name p1b netns "$b" &&
	ip -n "$a" link add p2a type veth peer name p2b netns "$b" &&
	ip -n "$a" link set p1a mtu "$m1" && ip -n "$b" link set p1b mtu "$m1" &&
	ip -n "$a" link set p2a mtu "$m2" && ip -n "$b" link set p2b mtu "$m2" &&
	ip -n "$a" addr add 10.$net.1.1/30 dev p1a && ip -n "$b" addr add 10.$net.1.2/30 dev p1b &&
	ip -n "$a" addr add 10.$net.2.1/30 dev p2a && ip -n "$b" addr add 10.$net.2.2/30 dev p2b &&
	ip -n "$a" link set p1a up && ip -n "$a" link set p2a up &&
	ip -n "$b" link set p1b up && ip -n "$b" link set p2b up &&
	ip -n "$a" addr add 10.$net.0.1/32 dev lo && ip -n "$b" addr add 10.$net.0.2/32 dev lo &&
	ip -n "$a" route add 10.$net.0.2/32 nexthop via 10.$net.1.2 dev p1a nexthop via 10.$net.2.2 dev p2a &&
	ip -n "$b" route add 10.$net.0.1/32 nexthop via 10.$net.1.1 dev p1b nexthop via 10.$net.2.1 dev p2b ||
		{ echo "FAIL the two-link fabric"; exit 1; }
}
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
