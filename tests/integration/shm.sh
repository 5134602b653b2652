#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration: the same-host shared-memory path (UROCE_SHM=1, src/io/shm.c)
# with real programs over uroce-run:
#  - ur_integrity (SEND, WRITE, READ, atomics; every byte checked), with the
#    default lanes and with lanes smaller than a window (full lanes drop,
#    the transport retransmits);
#  - ibv_rc_pingpong -c between two processes on one address (siblings:
#    lanes by slot) and ibv_ud_pingpong (UD);
#  - one side without UROCE_SHM: both fall back to UDP;
#  - a receiver killed with SIGKILL leaves its file, the next device sweeps it.
# The counters (UROCE_STATS=1) must show the packets went the way expected.
#   shm.sh BINDIR
set -u
bin=$1
run=$bin/uroce-run
. "$(dirname "$0")/../listen.sh"
port=$((21000 + $$ % 9000))
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -d /dev/shm ] && [ -w /dev/shm ] || { echo "SKIP: no writable /dev/shm"; exit 77; }

# counter FILE NAME: the sum of NAME over the counter lines in FILE.
counter() {
	grep -o "[ :]$2=[0-9]*" "$1" | awk -F= '{s += $2} END {print s + 0}'
}

# pair NAME SERVER_ENV CLIENT_ENV CLIENT_IP -- PROG ARGS: server on 127.0.0.2,
# client on CLIENT_IP; both must exit 0. Logs in $tmp/NAME.{s,c}.
pair() {
	local name=$1 senv=$2 cenv=$3 cip=$4
	shift 5
	port=$((port + 1))
	env $senv UROCE_STATS=1 UROCE_IP=127.0.0.2 timeout 120 "$run" "$@" -p $port \
		>"$tmp/$name.s" 2>&1 &
	local spid=$!
	wait_tcp $port
	env $cenv UROCE_STATS=1 UROCE_IP=$cip timeout 120 "$run" "$@" -p $port 127.0.0.2 \
		>"$tmp/$name.c" 2>&1
	local crc=$?
	wait $spid
	local src=$?
	if [ $crc != 0 ] || [ $src != 0 ]; then
		echo "FAIL: $name: $* (client rc=$crc, server rc=$src)"
		echo "--- server"; tail -20 "$tmp/$name.s"; echo "--- client"; tail -20 "$tmp/$name.c"
		fail=1
		return 1
	fi
	return 0
}

# expect NAME WHAT COND: COND (an arithmetic test over $rx, $tx, $drop,
# $retx) must hold for the pair's counters, summed over both sides.
expect() {
	local name=$1 what=$2 cond=$3
	cat "$tmp/$name.s" "$tmp/$name.c" >"$tmp/$name.all"
	rx=$(counter "$tmp/$name.all" rx_shm)
	tx=$(counter "$tmp/$name.all" tx_shm)
	drop=$(counter "$tmp/$name.all" tx_drop_shm)
	retx=$(counter "$tmp/$name.all" tx_retransmit)
	if (( $cond )); then
		echo "ok: $name: $what (tx_shm=$tx rx_shm=$rx tx_drop_shm=$drop tx_retransmit=$retx)"
	else
		echo "FAIL: $name: $what: want $cond (tx_shm=$tx rx_shm=$rx tx_drop_shm=$drop tx_retransmit=$retx)"
		fail=1
	fi
}

I=$bin/../tests/ur_integrity
[ -x "$I" ] || { echo "FAIL: $I not built"; exit 1; }
# (About 14,000 packets of 4 KiB, 8,000 with jumbo packets, negotiated by
# default between uroce ends: docs/wire.md "Jumbo packets".)
if pair integrity UROCE_SHM=1 UROCE_SHM=1 127.0.0.3 -- "$I" -m 64; then
	expect integrity "all packets through shared memory" \
		'rx > 5000 && rx == tx && drop == 0'
fi
# 64 KiB lanes against a 2 MiB window: lanes fill, packets drop, the
# transport resends, and every byte still checks.
if pair small "UROCE_SHM=1 UROCE_SHM_RING_KB=64" "UROCE_SHM=1 UROCE_SHM_RING_KB=64" \
	127.0.0.3 -- "$I" -m 16; then
	expect small "full lanes drop and are recovered" 'drop > 0 && retx > 0 && rx > 1000'
fi
if command -v ibv_rc_pingpong >/dev/null; then
	# One address, two processes: each its own slot and lanes.
	if pair siblings UROCE_SHM=1 UROCE_SHM=1 127.0.0.2 -- ibv_rc_pingpong -g 0 -n 500 -s 65536 -c; then
		expect siblings "siblings on one address" 'rx > 1000 && drop == 0'
	fi
	if pair mixed UROCE_SHM=1 UROCE_SHM=0 127.0.0.3 -- ibv_rc_pingpong -g 0 -n 500 -s 4096 -c; then
		expect mixed "a peer without UROCE_SHM: UDP both ways" 'rx == 0 && tx == 0'
	fi
fi
if command -v ibv_ud_pingpong >/dev/null; then
	if pair ud UROCE_SHM=1 UROCE_SHM=1 127.0.0.3 -- ibv_ud_pingpong -g 0 -n 500 -s 1024 -c; then
		expect ud "UD datagrams" 'rx >= 1000 && drop == 0'
	fi
fi

# A receiver killed with SIGKILL cannot unlink its file; the next device
# that opens finds its owner gone and removes it.
UROCE_SHM=1 UROCE_IP=127.0.0.9 "$run" "$I" -p $((port + 50)) >/dev/null 2>&1 &
kpid=$!
for _ in $(seq 50); do
	f=$(ls /dev/shm/uroce-*-127.0.0.9-* 2>/dev/null | grep -v fifo | head -1)
	[ -n "$f" ] && break
	sleep 0.1
done
if [ -z "${f:-}" ]; then
	echo "FAIL: sweep: no lane file for a device on 127.0.0.9"
	fail=1
	kill $kpid 2>/dev/null
else
	pkill -KILL -P $kpid 2>/dev/null
	kill -KILL $kpid 2>/dev/null
	wait $kpid 2>/dev/null
	sleep 0.2
	if [ ! -e "$f" ]; then
		echo "FAIL: sweep: $f went with its process (the test proves nothing)"
		fail=1
	else
		UROCE_SHM=1 UROCE_IP=127.0.0.10 "$run" "$bin/uroce-devinfo" >/dev/null 2>&1
		if [ -e "$f" ]; then
			echo "FAIL: sweep: $f of a dead receiver is still there"
			fail=1
		else
			echo "ok: sweep: a dead receiver's lane file removed by the next device"
		fi
	fi
fi
exit $fail
