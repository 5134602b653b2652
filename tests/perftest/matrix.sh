#!/bin/bash
# SPDX-License-Identifier: MIT
# Unmodified Debian perftest on uroce: every tool, both posting APIs, the
# flags users rely on; two processes through uroce-run.
#   matrix.sh BINDIR [quick|full]
# Server and client on 127.0.0.2 / 127.0.0.3 (or one shared address with
# SHARED=1). Each case must exit 0 on both sides and print its result row.
set -u
bin=$(readlink -f "$1")
mode=${2:-quick}
run=$bin/uroce-run
command -v ib_write_bw >/dev/null || { echo "SKIP: perftest not installed"; exit 77; }
sip=${SERVER_IP:-127.0.0.2}
cip=${CLIENT_IP:-127.0.0.3}
[ "${SHARED:-0}" = 1 ] && cip=$sip
port=$((30000 + $$ % 20000))
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
pass=0 fail=0

one() { # tool args...
	local tool=$1; shift
	port=$((port + 1))
	UROCE_IP=$sip timeout 60 "$run" "$tool" -p $port "$@" >"$dir/s" 2>&1 &
	local s=$!
	sleep 0.4
	UROCE_IP=$cip timeout 60 "$run" "$tool" -p $port "$@" "$sip" >"$dir/c" 2>&1
	local c=$?
	wait $s
	local r=$?
	# A result row starts with the message size.
	local row
	row=$(grep -E '^ +[0-9]+ +[0-9]+ ' "$dir/c" | tail -n 1)
	if [ $c = 0 ] && [ $r = 0 ] && [ -n "$row" ]; then
		pass=$((pass + 1))
		echo "ok   $tool $* |$(echo "$row" | tr -s ' ')"
	else
		fail=$((fail + 1))
		echo "FAIL $tool $* (client $c, server $r)"
		echo "--- server"; tail -n 15 "$dir/s"; echo "--- client"; tail -n 15 "$dir/c"
	fi
}

n=200
for api in "" "--use_old_post_send"; do
	for t in ib_write_bw ib_read_bw ib_send_bw; do
		one $t -x 0 -n $n -F $api
		one $t -x 0 -n $n -F -s 65536 --report_gbits $api
		one $t -x 0 -n $n -F -q 4 $api
		one $t -x 0 -n $n -F -b $api
		[ "$mode" = full ] && one $t -x 0 -n 50 -F -a $api
		[ "$mode" = full ] && one $t -x 0 -D 1 -F $api
	done
	one ib_send_bw -x 0 -n $n -F -e $api
	one ib_read_bw -x 0 -n $n -F -e $api
	for t in ib_write_lat ib_read_lat ib_send_lat; do
		one $t -x 0 -n $n -F $api
		one $t -x 0 -n $n -F -s 4096 $api
		[ "$mode" = full ] && one $t -x 0 -n 50 -F -a $api
		[ "$mode" = full ] && one $t -x 0 -D 1 -F $api
	done
	for a in CMP_AND_SWAP FETCH_AND_ADD; do
		one ib_atomic_bw -x 0 -n $n -F -A $a $api
		one ib_atomic_lat -x 0 -n $n -F -A $a $api
	done
done
echo "$pass passed, $fail failed"
[ $fail = 0 ]
