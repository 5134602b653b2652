#!/bin/sh
# SPDX-License-Identifier: MIT
# Integration: unmodified ibv_rc_pingpong, two processes over uroce-run,
# UROCE_IP=127.0.0.2 (server) and 127.0.0.3 (client), in several modes.
#   rc_pingpong.sh BINDIR
set -u
bin=$1
run=$bin/uroce-run
. "$(dirname "$0")/../listen.sh"
command -v ibv_rc_pingpong >/dev/null || { echo "SKIP: no ibv_rc_pingpong"; exit 77; }
port=$((20000 + $$ % 10000)) # below the ephemeral range
fail=0
slog=$(mktemp)
clog=$(mktemp)
trap 'rm -f "$slog" "$clog"' EXIT

# Each run may take 180 s: 1000 round trips of 1 MiB took 17-50 ms each
# at load 12-26 on 2 cores (60 s was exceeded there); quiet, the whole
# test takes about 17 s.
one() {
	port=$((port + 1))
	UROCE_IP=127.0.0.2 timeout 180 "$run" ibv_rc_pingpong -g 0 -p $port "$@" >"$slog" 2>&1 &
	spid=$!
	wait_tcp $port
	UROCE_IP=${CLIENT_IP:-127.0.0.3} timeout 180 "$run" ibv_rc_pingpong -g 0 -p $port "$@" 127.0.0.2 >"$clog" 2>&1
	crc=$?
	wait $spid
	src=$?
	if [ $crc != 0 ] || [ $src != 0 ] || ! grep -q "iters in" "$clog" || ! grep -q "iters in" "$slog"; then
		echo "FAIL: ibv_rc_pingpong $* (client rc=$crc, server rc=$src)"
		echo "--- server"; cat "$slog"; echo "--- client"; cat "$clog"
		fail=1
	else
		echo "ok: ibv_rc_pingpong $* : $(grep 'iters in' "$clog")"
	fi
}

# -s from 1 byte to 1 MiB with -n 1000, as the issue asks.
for sz in 1 64 1024 4096 65536 1048576; do
	one -n 1000 -s $sz
done
one -n 1000 -e
one -n 1000 -c
one -n 1000 -s 8192 -e -c
one -n 200 -m 4096 -s 100000
# One shared address: both processes on 127.0.0.2 (sibling forwarding).
CLIENT_IP=127.0.0.2 one -n 1000 -s 4096
CLIENT_IP=127.0.0.2 one -n 200 -s 65536 -e
exit $fail
