#!/bin/sh
# SPDX-License-Identifier: MIT
# Integration: unmodified ibv_ud_pingpong and ibv_srq_pingpong, two
# processes over uroce-run, UROCE_IP=127.0.0.2 (server) / 127.0.0.3 (client).
# lo has MTU 65536, so the device MTU is 4096 and ud_pingpong's default
# size fits; on a 1500-byte link use -s 1024 (tests/faults does).
#   ud_srq_pingpong.sh BINDIR
set -u
bin=$1
run=$bin/uroce-run
. "$(dirname "$0")/../listen.sh"
command -v ibv_ud_pingpong >/dev/null && command -v ibv_srq_pingpong >/dev/null ||
	{ echo "SKIP: no ibv_ud_pingpong/ibv_srq_pingpong (ibverbs-utils)"; exit 77; }
port=$((20000 + ($$ * 7) % 10000)) # below the ephemeral range
fail=0
slog=$(mktemp)
clog=$(mktemp)
trap 'rm -f "$slog" "$clog"' EXIT

one() {
	prog=$1
	shift
	port=$((port + 1))
	UROCE_STATS=1 UROCE_IP=127.0.0.2 timeout 60 "$run" "$prog" -g 0 -p $port "$@" >"$slog" 2>&1 &
	spid=$!
	wait_tcp $port
	UROCE_STATS=1 UROCE_IP=127.0.0.3 timeout 60 "$run" "$prog" -g 0 -p $port "$@" 127.0.0.2 >"$clog" 2>&1
	crc=$?
	wait $spid
	src=$?
	if [ $crc != 0 ] || [ $src != 0 ] || ! grep -q "iters in" "$clog" || ! grep -q "iters in" "$slog"; then
		echo "FAIL: $prog $* (client rc=$crc, server rc=$src)"
		echo "--- server"; cat "$slog"; echo "--- client"; cat "$clog"
		fail=1
	else
		echo "ok: $prog $* : $(grep 'iters in' "$clog")"
		grep 'counters' "$clog" | sed 's/^/    client /'
	fi
}

one ibv_ud_pingpong -n 300
one ibv_ud_pingpong -n 300 -s 4096
one ibv_ud_pingpong -n 1000 -s 1 -e
one ibv_srq_pingpong -n 500 -q 4
one ibv_srq_pingpong -n 500
one ibv_srq_pingpong -n 500 -q 8 -s 65536 -e
exit $fail
