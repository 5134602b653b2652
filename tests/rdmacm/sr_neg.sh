#!/bin/sh
# SPDX-License-Identifier: MIT
# Integration: selective repeat negotiated between two uroce processes
# connected by rdma_cm (docs/wire.md "Selective repeat negotiation"):
# unmodified rping -V (it checks the data it reads back) on two loopback
# addresses, the device counters printed at exit (UROCE_STATS=1).
#  - UROCE_SR=auto on both ends: each sent a hello and took the other's
#    (tx_sr_hello, rx_sr_hello on both), none gave up (sr_neg_timeout);
#  - UROCE_SR=0 on the server (a standard peer as far as the client can
#    tell): the client's hellos go unanswered (tx_sr_hello, no
#    rx_sr_hello on either end), the server sends none, and the data
#    is still verified.
#   sr_neg.sh BINDIR
set -u
bin=$1
run=$bin/uroce-run
command -v rping >/dev/null || { echo "SKIP: no rping (rdmacm-utils)"; exit 77; }
fail=0
slog=$(mktemp)
clog=$(mktemp)
trap 'rm -f "$slog" "$clog"' EXIT
# UROCE_SR=auto on both (not yet the default: docs/wire.md).
export UROCE_SHM=0 UROCE_STATS=1 UROCE_SR=auto

wait_listen() {
	i=0
	while [ $i -lt 200 ]; do
		grep -q "00010000 0005 01 .*@uroce-cm/.*/$1\$" /proc/net/unix && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

# cnt LOG NAME: the counter NAME's value in LOG's counter lines (sum), 0 if absent.
cnt() {
	grep -o " $2=[0-9]*" "$1" | awk -F= '{ s += $2 } END { print s + 0 }'
}

# pair NAME SERVER-ENV: rping -V -C 50 between 127.0.0.2 and 127.0.0.3.
pair() {
	name=$1
	env UROCE_IP=127.0.0.2 ${2:-} timeout 60 "$run" rping -s -a 127.0.0.2 -p 7175 -V -C 50 >"$slog" 2>&1 &
	spid=$!
	wait_listen 7175
	UROCE_IP=127.0.0.3 timeout 60 "$run" rping -c -a 127.0.0.2 -p 7175 -V -C 50 -v >"$clog" 2>&1
	crc=$?
	wait $spid
	src=$?
	if [ $crc != 0 ] || [ $src != 0 ] || ! grep -q "rdma-ping-49:" "$clog"; then
		echo "FAIL: $name: client rc=$crc, server rc=$src"
		echo "--- server"; cat "$slog"; echo "--- client"; cat "$clog"
		fail=1
		return 1
	fi
	sh=$(cnt "$slog" tx_sr_hello) sr=$(cnt "$slog" rx_sr_hello)
	ch=$(cnt "$clog" tx_sr_hello) cr=$(cnt "$clog" rx_sr_hello)
	st=$(cnt "$slog" sr_neg_timeout) ct=$(cnt "$clog" sr_neg_timeout)
	echo "  $name: server hellos sent $sh, taken $sr, gave up $st; client sent $ch, taken $cr, gave up $ct"
	return 0
}

if pair "both auto"; then
	if [ "$sh" -ge 1 ] && [ "$sr" -ge 1 ] && [ "$ch" -ge 1 ] && [ "$cr" -ge 1 ] &&
	   [ "$st" = 0 ] && [ "$ct" = 0 ]; then
		echo "ok: both auto: negotiated (hellos sent and taken on both ends), data verified"
	else
		echo "FAIL: both auto: not negotiated"; cat "$slog" "$clog"; fail=1
	fi
fi
if pair "server UROCE_SR=0" UROCE_SR=0; then
	if [ "$ch" -ge 1 ] && [ "$cr" = 0 ] && [ "$sh" = 0 ] && [ "$sr" = 0 ]; then
		echo "ok: server UROCE_SR=0: the client's hellos unanswered, plain go-back-N, data verified"
	else
		echo "FAIL: server UROCE_SR=0: hellos answered or sent by the server"; cat "$slog" "$clog"; fail=1
	fi
fi
exit $fail
