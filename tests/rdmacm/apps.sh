#!/bin/sh
# SPDX-License-Identifier: MIT
# Integration: unmodified rdma_cm programs through uroce-run (RC and, with
# udaddy, UD over RDMA_PS_UDP): the server on
# UROCE_IP=127.0.0.2, the client on 127.0.0.3 (two loopback addresses) and
# then on 127.0.0.2 too (one shared address: CM MADs forwarded by slot).
#   apps.sh BINDIR
set -u
bin=$1
run=$bin/uroce-run
. "$(dirname "$0")/../listen.sh"
command -v rping >/dev/null || { echo "SKIP: no rping (rdmacm-utils)"; exit 77; }
fail=0
slog=$(mktemp)
clog=$(mktemp)
trap 'rm -f "$slog" "$clog"' EXIT

# pair NAME PORT SERVER-CMD -- CLIENT-CMD: both must exit 0 and print $expect.
pair() {
	name=$1; lport=$2; shift 2
	scmd=""
	while [ "$1" != "--" ]; do scmd="$scmd $1"; shift; done
	shift
	UROCE_IP=127.0.0.2 timeout 60 "$run" $scmd >"$slog" 2>&1 &
	spid=$!
	wait_cm $lport
	UROCE_IP=$cip timeout 60 "$run" "$@" >"$clog" 2>&1
	crc=$?
	wait $spid
	src=$?
	if [ $crc != 0 ] || [ $src != 0 ] || ! grep -q -- "$expect" "$clog"; then
		echo "FAIL: $name ($cip) client rc=$crc, server rc=$src"
		echo "--- server:$scmd"; cat "$slog"; echo "--- client: $*"; cat "$clog"
		fail=1
	else
		echo "ok: $name ($cip): $(grep -- "$expect" "$clog" | tail -1)"
	fi
}

for cip in 127.0.0.3 127.0.0.2; do
	expect="rdma-ping-99:"
	pair rping 7174 rping -s -a 127.0.0.2 -v -C 100 -- rping -c -a 127.0.0.2 -C 100 -v
	expect="return status 0"
	pair ucmatose 7471 ucmatose -- ucmatose -s 127.0.0.2
	expect="rdma_client: end 0"
	pair rdma_client 7471 rdma_server -- rdma_client -s 127.0.0.2
	# RDMA_PS_UDP: SIDR REQ/REP, then UD SENDs both ways.
	expect="return status 0"
	pair udaddy 7174 udaddy -- udaddy -s 127.0.0.2
	if command -v ib_write_bw >/dev/null; then
		expect="^ 65536"
		pair ib_write_bw 18515 ib_write_bw -R -n 500 -- ib_write_bw -R -n 500 127.0.0.2
		pair ib_read_bw 18515 ib_read_bw -R -n 500 -- ib_read_bw -R -n 500 127.0.0.2
		expect="^ 2 "
		pair ib_send_lat 18515 ib_send_lat -R -n 500 -- ib_send_lat -R -n 500 127.0.0.2
	fi
done

# No listener on the port: REJECTED (invalid service ID) at once.
UROCE_IP=127.0.0.2 timeout 20 "$run" rping -s -a 127.0.0.2 -p 9999 -C 1 >/dev/null 2>&1 &
spid=$!
wait_cm 9999
out=$(UROCE_IP=127.0.0.3 timeout 10 "$run" rping -c -a 127.0.0.2 -p 9998 -C 1 -v 2>&1)
rc=$?
kill $spid 2>/dev/null; wait $spid 2>/dev/null
if [ $rc = 124 ] || ! echo "$out" | grep -q "RDMA_CM_EVENT_REJECTED, error 8"; then
	echo "FAIL: rping to a port without listener (rc=$rc): $out"
	fail=1
else
	echo "ok: no listener -> RDMA_CM_EVENT_REJECTED, error 8"
fi
exit $fail
