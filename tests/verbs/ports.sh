#!/bin/sh
# SPDX-License-Identifier: MIT
# Integration: a device with two ports (UROCE_PORTS, docs/ports-classes.md
# "Ports"). Two namespaces joined by two veth pairs (rails), a 2-port
# device on each side: ibv_devinfo and uroce-devinfo (unmodified
# ibverbs-utils through uroce-run) see both ports; ibv_rc_pingpong -i 2
# runs over rail 2 and only rail 2 carries it, so does rping (rdma_cm) to
# port 2's address; test_ports checks the
# queries and the link events; a bad UROCE_PORTS is refused by name.
#   ports.sh BINDIR TESTDIR
set -u
bin=$1 tdir=$2
run=$bin/uroce-run
. "$(dirname "$0")/../listen.sh"
[ "$(id -u)" = 0 ] && ip netns list >/dev/null 2>&1 ||
	{ echo "SKIP: needs root and ip netns"; exit 77; }
command -v ibv_rc_pingpong >/dev/null && command -v ibv_devinfo >/dev/null ||
	{ echo "SKIP: no ibverbs-utils"; exit 77; }
a=uroce-ports-$$-a b=uroce-ports-$$-b
tmp=$(mktemp -d)
fails=0
trap 'ip netns del "$a" 2>/dev/null; ip netns del "$b" 2>/dev/null; rm -rf "$tmp"' EXIT
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
ip netns add "$a" && ip netns add "$b" || { echo "SKIP: ip netns add failed"; exit 77; }
ip -n "$a" link set lo up && ip -n "$b" link set lo up &&
ip -n "$a" link add r1a type veth peer name r1b netns "$b" &&
ip -n "$a" link add r2a type veth peer name r2b netns "$b" &&
ip -n "$a" addr add 10.93.1.1/30 dev r1a && ip -n "$b" addr add 10.93.1.2/30 dev r1b &&
ip -n "$a" addr add 10.93.2.1/30 dev r2a && ip -n "$b" addr add 10.93.2.2/30 dev r2b &&
ip -n "$a" link set r1a up && ip -n "$a" link set r2a up &&
ip -n "$b" link set r1b up && ip -n "$b" link set r2b up ||
	{ echo "FAIL the two-rail fabric"; exit 1; }
# The kernel sets a veth's operational state up to a second after its
# carrier (its link watch): wait for it (5 s at most), so that nothing
# below depends on that delay.
for i in $(seq 50); do
	[ "$( (ip netns exec "$a" cat /sys/class/net/r1a/operstate /sys/class/net/r2a/operstate
	      ip netns exec "$b" cat /sys/class/net/r1b/operstate /sys/class/net/r2b/operstate) | grep -c '^up$')" = 4 ] && break
	sleep 0.1
done
inA() { ip netns exec "$a" env UROCE_PORTS=r1a,r2a "$@"; }
inB() { ip netns exec "$b" env UROCE_PORTS=10.93.1.2,10.93.2.2 "$@"; }
tx() { ip netns exec "$b" cat "/sys/class/net/$1/statistics/tx_packets"; }

# ibv_devinfo sees both ports with their GIDs; uroce-devinfo too.
inA "$run" ibv_devinfo -v >"$tmp/devinfo" 2>&1
if grep -q "phys_port_cnt:[[:space:]]*2" "$tmp/devinfo" &&
   [ "$(grep -c 'state:[[:space:]]*PORT_ACTIVE' "$tmp/devinfo")" = 2 ] &&
   grep -q "GID\[  0\]:[[:space:]]*::ffff:10.93.2.1" "$tmp/devinfo"; then
	ok "ibv_devinfo: 2 ports, both active, port 2's GID 0 is its address"
else
	bad "ibv_devinfo"; cat "$tmp/devinfo"
fi
# The device view (uroce-view, what UCX and Open MPI read): each port's
# netdev under device/net, and in its GID's ndevs.
view=$(inA "$bin/uroce-view" 2>"$tmp/view.err")
d=$view/sys/class/infiniband/uroce0
if [ -L "$d/device/net/r1a" ] && [ -L "$d/device/net/r2a" ] &&
   [ "$(cat "$d/ports/2/gid_attrs/ndevs/0" 2>/dev/null)" = r2a ]; then
	ok "uroce-view: device/net has r1a and r2a, port 2's GID 0 is on r2a"
else
	bad "uroce-view: $(ls "$d/device/net" 2>&1) $(cat "$tmp/view.err")"
fi
inA "$bin/uroce-devinfo" -v >"$tmp/udevinfo" 2>&1
if grep -q "phys_port_cnt:[[:space:]]*2" "$tmp/udevinfo" &&
   grep -q "port:[[:space:]]*2" "$tmp/udevinfo"; then
	ok "uroce-devinfo: 2 ports"
else
	bad "uroce-devinfo"; cat "$tmp/udevinfo"
fi

# RC on port 2: every packet on rail 2, (almost) none on rail 1 (ARP and
# IPv6 neighbour messages are a few).
r1=$(tx r1b) r2=$(tx r2b)
inA timeout 30 "$run" ibv_rc_pingpong -i 2 -g 0 -n 200 >"$tmp/s" 2>&1 &
spid=$!
wait_tcp 18515 ip netns exec "$a"
inB timeout 30 "$run" ibv_rc_pingpong -i 2 -g 0 -n 200 10.93.2.1 >"$tmp/c" 2>&1
crc=$?
wait $spid
src=$?
d1=$(($(tx r1b) - r1)) d2=$(($(tx r2b) - r2))
if [ $crc = 0 ] && [ $src = 0 ] && grep -q "iters in" "$tmp/c" &&
   grep -q "GID ::ffff:10.93.2.1" "$tmp/c" && [ $d2 -ge 200 ] && [ $d1 -lt 20 ]; then
	ok "ibv_rc_pingpong -i 2: rail 2 sent $d2 packets, rail 1 $d1"
else
	bad "ibv_rc_pingpong -i 2 (client rc=$crc, server rc=$src, rail 1 +$d1, rail 2 +$d2)"
	echo "--- server"; cat "$tmp/s"; echo "--- client"; cat "$tmp/c"
fi

# rdma_cm picks the port that owns the address: rping to port 2's.
if command -v rping >/dev/null; then
	r1=$(tx r1b) r2=$(tx r2b)
	inA timeout 30 "$run" rping -s -a 10.93.2.1 -C 5 -v >"$tmp/s" 2>&1 &
	spid=$!
	wait_cm 7174 ip netns exec "$a"
	inB timeout 30 "$run" rping -c -a 10.93.2.1 -C 5 -v >"$tmp/c" 2>&1
	crc=$?
	wait $spid
	src=$?
	d1=$(($(tx r1b) - r1)) d2=$(($(tx r2b) - r2))
	if [ $crc = 0 ] && [ $src = 0 ] && grep -q "rdma-ping-4" "$tmp/c" &&
	   [ $d2 -ge 10 ] && [ $d1 -lt 10 ]; then
		ok "rping to port 2's address: rail 2 sent $d2 packets, rail 1 $d1"
	else
		bad "rping to port 2's address (client rc=$crc, server rc=$src, rail 1 +$d1, rail 2 +$d2)"
		echo "--- server"; cat "$tmp/s"; echo "--- client"; cat "$tmp/c"
	fi
fi

# The queries, a UD AV of the other port, and link down/up events.
if inA "$tdir/test_ports" r2a 10.93.1.1 10.93.2.1 >"$tmp/t" 2>&1; then
	ok "$(tail -1 "$tmp/t")"
else
	bad "test_ports"; cat "$tmp/t"
fi

# A device of one port (UROCE_IP) raises the same events.
if ip netns exec "$a" env UROCE_IP=10.93.1.1 "$tdir/test_ports" --one r1a 10.93.1.1 >"$tmp/t" 2>&1; then
	ok "$(tail -1 "$tmp/t")"
else
	bad "test_ports --one"; cat "$tmp/t"
fi

# A bad value is refused, naming the setting and what it allows.
ip netns exec "$a" env UROCE_PORTS=r1a,nosuch9 "$run" ibv_devinfo >"$tmp/bad" 2>&1
if grep -q 'UROCE_PORTS=r1a,nosuch9: "nosuch9" is neither' "$tmp/bad" &&
   grep -q "allowed: 1 to 8 interface names or IP addresses" "$tmp/bad"; then
	ok "UROCE_PORTS=r1a,nosuch9 refused"
else
	bad "UROCE_PORTS=r1a,nosuch9 not refused by name"; cat "$tmp/bad"
fi
[ $fails = 0 ] || exit 1
