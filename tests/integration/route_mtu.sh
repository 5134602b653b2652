#!/bin/sh
# A host whose RoCE address sits on lo (a /32 behind its uplinks, as
# data-centre hosts with ECMP have it) sends through the uplinks: the
# device's MTU must be the smallest of the routes' egress interfaces, not
# lo's. Two namespaces joined by two veths (MTU 1500 and 9000) under one
# ECMP route each way, the addresses 10.96.0.1/32 and 10.96.0.2/32 on lo:
#  - ibv_devinfo shows active_mtu 1024 (1500 - 80 bytes of headers);
#  - with only the 9000-byte link left, 4096;
#  - ib_write_bw -s 65536 (perftest takes the port's active MTU) moves its
#    messages over the 1500-byte link (it failed with "transport retry
#    counter exceeded": 4096-byte requests on a 1500-byte path);
#  - a 127.0.0.x device keeps lo's MTU (4096).
#   route_mtu.sh BINDIR
bin=${1:?usage: route_mtu.sh BINDIR}
. "$(dirname "$0")/twolink.sh"
. "$(dirname "$0")/../listen.sh"
twolink mtu 96 1500 9000

mtu() { # NS IP -> active_mtu of the device
	ip netns exec "$1" env UROCE_IP="$2" "$bin/uroce-run" ibv_devinfo -v 2>&1 |
		sed -n 's/.*active_mtu:[[:space:]]*\([0-9]*\).*/\1/p' | head -n1
}
m=$(mtu "$a" 10.96.0.1)
[ "$m" = 1024 ] && ok "address on lo, ECMP over 1500 and 9000 bytes: active_mtu $m" ||
	bad "address on lo, ECMP over 1500 and 9000 bytes: active_mtu '$m', want 1024"
m=$(mtu "$a" 127.0.0.5)
[ "$m" = 4096 ] && ok "a 127.0.0.x device keeps lo's MTU: $m" || bad "127.0.0.5: active_mtu '$m', want 4096"

# The peers' traffic over the 1500-byte link alone (an ECMP hash may pick
# either path; this one must be carried too).
ip -n "$a" route replace 10.96.0.2/32 via 10.96.1.2 dev p1a &&
ip -n "$b" route replace 10.96.0.1/32 via 10.96.1.1 dev p1b || bad "route over p1"
ip netns exec "$b" env UROCE_IP=10.96.0.2 timeout 20 "$bin/uroce-run" \
	ib_write_bw -x 0 -s 65536 -n 200 -p 18620 >"$tmp/s" 2>&1 &
s=$!
wait_tcp 18620 ip netns exec "$b"
ip netns exec "$a" env UROCE_IP=10.96.0.1 timeout 20 "$bin/uroce-run" \
	ib_write_bw -x 0 -s 65536 -n 200 -p 18620 10.96.0.2 >"$tmp/c" 2>&1
c=$?
wait $s
sr=$?
if [ $c = 0 ] && [ $sr = 0 ] && grep -q '^ 65536 *200 ' "$tmp/c"; then
	ok "ib_write_bw -s 65536 over the 1500-byte path: $(grep '^ 65536 *200 ' "$tmp/c" | tr -s ' ')"
else
	bad "ib_write_bw -s 65536 over the 1500-byte path (client rc=$c, server rc=$sr)"; tail -n 5 "$tmp/c" "$tmp/s"
fi

# Every route of the main table counts (the device may reach any of
# them), the 1500-byte link's own subnet too: with that link gone, 9000.
ip -n "$a" route replace 10.96.0.2/32 via 10.96.2.2 dev p2a &&
ip -n "$a" addr flush dev p1a && ip -n "$a" link set p1a down
m=$(mtu "$a" 10.96.0.1)
[ "$m" = 4096 ] && ok "only the 9000-byte path: active_mtu $m" ||
	bad "only the 9000-byte path: active_mtu '$m', want 4096"
[ $fails = 0 ] || { echo "$fails check(s) failed"; exit 1; }
