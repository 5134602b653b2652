#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration: unmodified rping and ib_send_lat -R on uroce against a fake
# Linux rxe peer (rxe_peer) that plays the other side of the golden
# rxe-to-rxe captures rdma_cm_rping.pcap and rdma_cm_send_lat.pcap, CM and
# RC data: uroce as the server (the fake is
# rxe's client) and as the client (the fake is rxe's server). rping -V
# checks the data it wrote back; the fake checks every packet of uroce's
# against the capture (PSNs as Linux's CM sets them, QPNs, RETH, payload,
# ICRC). This is the exchange that failed against a Linux host in
# shared/wire/interop/.
#   rxe_replay.sh BINDIR
set -u
bin=$1
command -v rping >/dev/null || { echo "SKIP: no rping (rdmacm-utils)"; exit 77; }
cap=${UROCE_GOLDEN_DIR:-../shared/wire/rxe}/rdma_cm_rping.pcap
[ -r "$cap" ] || { echo "FAIL: no capture $cap"; exit 1; }
us=127.0.0.4
peer=127.0.0.5
export UROCE_PORT=24791 # both sides; a test port of its own
fail=0
slog=$(mktemp)
plog=$(mktemp)
trap 'rm -f "$slog" "$plog"' EXIT

# The capture: rping -C 2 -S 64 on port 7174 (0x1c06).
echo "== uroce rping server, rxe client (capture side: active)"
UROCE_IP=$us timeout 60 "$bin/uroce-run" rping -s -a $us -p 7174 -C 2 -S 64 -V -v \
	>"$slog" 2>&1 &
spid=$!
timeout 60 "$bin/rxe_peer" "$cap" active $peer $us >"$plog" 2>&1
prc=$?
[ $prc = 0 ] || kill $spid 2>/dev/null # it would wait for a peer that gave up
wait $spid
src=$?
cat "$plog"
# The server read the capture's data: rping -v prints it.
pings=$(grep -c -e "server ping data: rdma-ping-0: ABCDEFGHIJKLMNOPQR" -e "server ping data: rdma-ping-1: BCDEFGHIJKLMNOPQRS" "$slog")
if [ $prc != 0 ] || [ $src != 0 ] || [ "$pings" != 2 ]; then
	echo "FAIL: uroce server: rxe_peer rc=$prc, rping rc=$src, $pings of 2 pings"
	echo "--- rping -s:"; cat "$slog"
	fail=1
else
	echo "ok: uroce server: $(grep -c 'server ping data' "$slog") pings read and written back"
fi

echo "== uroce rping client, rxe server (capture side: passive)"
timeout 60 "$bin/rxe_peer" "$cap" passive $peer $us >"$plog" 2>&1 &
ppid=$!
sleep 0.2 # its socket is bound before our REQ (rping does not retry)
UROCE_IP=$us timeout 60 "$bin/uroce-run" rping -c -a $peer -p 7174 -C 2 -S 64 -V -v \
	>"$slog" 2>&1
crc=$?
[ $crc = 0 ] || kill $ppid 2>/dev/null
wait $ppid
prc=$?
cat "$plog"
pings=$(grep -c "ping data: rdma-ping-[01]: " "$slog")
if [ $prc != 0 ] || [ $crc != 0 ] || [ "$pings" != 2 ]; then
	echo "FAIL: uroce client: rxe_peer rc=$prc, rping rc=$crc, $pings of 2 pings"
	echo "--- rping -c:"; cat "$slog"
	fail=1
else
	echo "ok: uroce client: 2 pings verified (-V) against the fake rxe server"
fi

# perftest over rdma_cm (rdma_cm_send_lat.pcap: ib_send_lat -R -n 5 -F,
# port 18515): two connections, one for perftest's exchange and one for
# the test, and 2-byte SENDs both ways.
if command -v ib_send_lat >/dev/null; then
	cap2=${cap%/*}/rdma_cm_send_lat.pcap
	echo "== uroce ib_send_lat -R server, rxe client"
	UROCE_IP=$us timeout 60 "$bin/uroce-run" ib_send_lat -R -n 5 -F >"$slog" 2>&1 &
	spid=$!
	timeout 60 "$bin/rxe_peer" "$cap2" active $peer $us >"$plog" 2>&1
	prc=$?
	[ $prc = 0 ] || kill $spid 2>/dev/null
	wait $spid
	src=$?
	cat "$plog"
	if [ $prc != 0 ] || [ $src != 0 ] || ! grep -q "^ 2 *5 " "$slog"; then
		echo "FAIL: uroce ib_send_lat server: rxe_peer rc=$prc, ib_send_lat rc=$src"
		echo "--- ib_send_lat:"; cat "$slog"
		fail=1
	else
		echo "ok: uroce ib_send_lat server: $(grep '^ 2 *5 ' "$slog")"
	fi
	echo "== uroce ib_send_lat -R client, rxe server"
	timeout 60 "$bin/rxe_peer" "$cap2" passive $peer $us >"$plog" 2>&1 &
	ppid=$!
	sleep 0.2
	UROCE_IP=$us timeout 60 "$bin/uroce-run" ib_send_lat -R -n 5 -F $peer >"$slog" 2>&1
	crc=$?
	[ $crc = 0 ] || kill $ppid 2>/dev/null
	wait $ppid
	prc=$?
	cat "$plog"
	if [ $prc != 0 ] || [ $crc != 0 ] || ! grep -q "^ 2 *5 " "$slog"; then
		echo "FAIL: uroce ib_send_lat client: rxe_peer rc=$prc, ib_send_lat rc=$crc"
		echo "--- ib_send_lat:"; cat "$slog"
		fail=1
	else
		echo "ok: uroce ib_send_lat client: $(grep '^ 2 *5 ' "$slog")"
	fi
fi
exit $fail
