#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# docs/deploy.md played across network namespaces: two "hosts" (namespaces
# joined by a veth pair, 9000-byte MTU), each with the guide's firewall
# (INPUT dropped but for UDP 4791, the program's TCP port and established
# traffic), then:
#  - uroce-devinfo with UROCE_IP shows the address as GID 0 and active_mtu
#    4096 (from the 9000-byte MTU);
#  - ibv_rc_pingpong -g 0 from one host to the other;
#  - uroce-launch --hosts hostA,hostB with host NAMES (a private /etc/hosts
#    in a mount namespace): each rank gets its host's address as UROCE_IP,
#    rank 0's as MASTER_ADDR, and uroce-coll-perf -c 1 runs across them;
#  - a loopback name in a job across hosts is refused, naming it.
#   deploy.sh BINDIR
# Exit 77 when not root or without ip netns / iptables.
set -u
bin=$(cd "$1" && pwd)
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (network namespaces)"; exit 77; }
command -v ip >/dev/null && ip netns list >/dev/null 2>&1 || { echo "SKIP: no ip netns"; exit 77; }
command -v iptables >/dev/null || { echo "SKIP: no iptables"; exit 77; }
command -v ibv_rc_pingpong >/dev/null || { echo "FAIL: no ibv_rc_pingpong (ibverbs-utils)"; exit 1; }
tmp=$(mktemp -d)
pfx=ur-dep-$$
A=10.77.0.1 B=10.77.0.2 port=$((20000 + $$ % 10000))
cleanup() {
	ip netns del "$pfx-hostA" 2>/dev/null
	ip netns del "$pfx-hostB" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
fail=0
inA() { ip netns exec "$pfx-hostA" "$@"; }
inB() { ip netns exec "$pfx-hostB" "$@"; }

# Two hosts on one link, jumbo frames (guide: steps 2 and 4).
ip netns add "$pfx-hostA" && ip netns add "$pfx-hostB" &&
	ip link add "$pfx-a" netns "$pfx-hostA" type veth peer name "$pfx-b" netns "$pfx-hostB" &&
	inA ip link set "$pfx-a" name eth0 && inB ip link set "$pfx-b" name eth0 &&
	inA ip addr add $A/24 dev eth0 && inB ip addr add $B/24 dev eth0 &&
	inA ip link set eth0 mtu 9000 up && inB ip link set eth0 mtu 9000 up &&
	inA ip link set lo up && inB ip link set lo up ||
	{ echo "FAIL: cannot set up the namespaces"; exit 1; }
# The guide's firewall on both hosts (step 3).
for h in inA inB; do
	$h iptables -P INPUT DROP &&
		$h iptables -A INPUT -i lo -j ACCEPT &&
		$h iptables -A INPUT -p udp --dport 4791 -j ACCEPT &&
		$h iptables -A INPUT -p tcp --dport $port -j ACCEPT &&
		$h iptables -A INPUT -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT ||
		{ echo "FAIL: iptables in the namespace"; exit 1; }
done

# Step 2 and 4: the device is the address, the MTU follows the link.
out=$(UROCE_IP=$B inB "$bin/uroce-devinfo" 2>&1)
if echo "$out" | grep -q "GID\[  0\]:.*::ffff:$B" && echo "$out" | grep -q "active_mtu:[[:space:]]*4096"; then
	echo "ok: uroce-devinfo on hostB: GID 0 ::ffff:$B, active_mtu 4096"
else
	echo "FAIL: uroce-devinfo on hostB:"; echo "$out"; fail=1
fi

# Step 6: ibv_rc_pingpong across the hosts, through the firewalls.
UROCE_IP=$A inA timeout 60 "$bin/uroce-run" ibv_rc_pingpong -g 0 -p $port -n 200 >"$tmp/s" 2>&1 &
s=$!
for _ in $(seq 50); do inA ss -Hltn "sport = :$port" | grep -q . && break; sleep 0.1; done
UROCE_IP=$B inB timeout 60 "$bin/uroce-run" ibv_rc_pingpong -g 0 -p $port -n 200 $A >"$tmp/c" 2>&1
crc=$?
wait $s
src=$?
if [ $crc = 0 ] && [ $src = 0 ]; then
	echo "ok: ibv_rc_pingpong hostB -> hostA: $(grep iters "$tmp/c")"
else
	echo "FAIL: ibv_rc_pingpong across the hosts: client $crc, server $src"
	tail -5 "$tmp/s" "$tmp/c"; fail=1
fi

# Step 7: uroce-launch with host names. The names resolve through a private
# /etc/hosts (a mount namespace: the machine's file is untouched); the rsh
# agent runs a rank in the namespace of its host, as ssh would on it.
printf '%s\n' "127.0.0.1 localhost" "$A hostA" "$B hostB" >"$tmp/hosts"
cat >"$tmp/rsh" <<RSH
#!/bin/sh
h=\$1
shift
exec ip netns exec "$pfx-\$h" sh -c "\$*"
RSH
chmod +x "$tmp/rsh"
launch() { # launch ARGS...: uroce-launch with the private /etc/hosts
	unshare -m sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' "$tmp/hosts" \
		"$bin/uroce-launch" --rsh "$tmp/rsh" --timeout 60 --port $port "$@"
}
launch -n 2 --hosts hostA,hostB sh -c 'echo "env UROCE_IP=$UROCE_IP MASTER_ADDR=$MASTER_ADDR"' \
	>"$tmp/env" 2>&1
if grep -qx "\[0\] env UROCE_IP=$A MASTER_ADDR=$A" "$tmp/env" &&
	grep -qx "\[1\] env UROCE_IP=$B MASTER_ADDR=$A" "$tmp/env"; then
	echo "ok: uroce-launch --hosts hostA,hostB: each rank has its host's address"
else
	echo "FAIL: uroce-launch --hosts hostA,hostB, the ranks' addresses:"; cat "$tmp/env"; fail=1
fi
if launch -n 2 --hosts hostA,hostB "$bin/uroce-coll-perf" -b 4K -e 256K -f 8 -n 3 -w 1 -c 1 \
	>"$tmp/coll" 2>&1 && grep -q "262144" "$tmp/coll"; then
	echo "ok: uroce-launch --hosts hostA,hostB uroce-coll-perf -c 1 across the hosts"
else
	echo "FAIL: uroce-coll-perf across the hosts:"; tail -20 "$tmp/coll"; fail=1
fi
launch -n 2 --hosts localhost,hostB true >"$tmp/lo" 2>&1
rc=$?
if [ $rc = 2 ] && grep -qF "'localhost' is 127.0.0.1, a loopback address the other hosts cannot reach" "$tmp/lo"; then
	echo "ok: a loopback host in a job across hosts is refused: $(tail -1 "$tmp/lo")"
else
	echo "FAIL: localhost,hostB: exit $rc: $(cat "$tmp/lo")"; fail=1
fi
exit $fail
