#!/bin/bash
# SPDX-License-Identifier: MIT
# Unmodified Debian perftest on uroce: every tool, both posting APIs, the
# flags users rely on; two processes through uroce-run.
#   matrix.sh BINDIR [quick|full|netns|subset]
# Server and client on 127.0.0.2 / 127.0.0.3 (or one shared address with
# SHARED=1). Each case must exit 0 on both sides and print its result row.
# NETNS=1: server and client in two network namespaces of the lab
# (tests/lab/netns.sh: hosts h2 and h1 behind a forwarding switch), as on
# two machines. Mode netns = NETNS=1 with a subset of the quick matrix:
# every tool, both posting APIs, -b, -e, -q 4, 64 KiB, both atomics.
# Mode subset = that subset on the addresses chosen above. Every mode
# first checks perftest's figures against the wall clock (clock, below),
# unless CLOCK=0.
# Exit 77: perftest missing, or NETNS without root / `ip netns`.
set -u
bin=$(readlink -f "$1")
mode=${2:-quick}
run=$bin/uroce-run
command -v ib_write_bw >/dev/null || { echo "SKIP: perftest not installed"; exit 77; }
[ "$mode" = netns ] && NETNS=1
sip=${SERVER_IP:-127.0.0.2}
cip=${CLIENT_IP:-127.0.0.3}
[ "${SHARED:-0}" = 1 ] && cip=$sip
# Below the ephemeral range (32768-60999), where a client socket of another
# program may hold the port ("Couldn't listen to port" in CI).
port=$((20000 + $$ % 10000))
dir=$(mktemp -d)
on_s=() on_c=() # commands that run the server / the client in its host
cleanup() {
	rm -rf "$dir"
	[ "${NETNS:-0}" = 1 ] || return 0
	local h
	for h in h1 h2; do # what runs in the lab is ours
		ip netns pids "$(lab_ns $h)" 2>/dev/null | xargs -r kill -9 2>/dev/null
	done
	lab_down 2>/dev/null
}
trap cleanup EXIT
trap 'exit 1' INT TERM
if [ "${NETNS:-0}" = 1 ]; then
	[ "$(id -u)" = 0 ] && command -v ip >/dev/null && ip netns list >/dev/null 2>&1 ||
		{ echo "SKIP: network namespaces unavailable (needs root and ip netns)"; exit 77; }
	source "$(dirname "$(readlink -f "$0")")/../lab/netns.sh"
	lab_up --hosts 2 >/dev/null 2>&1 || { echo "FAIL: lab_up"; exit 1; }
	sip=$(lab_ip h2) cip=$(lab_ip h1)
	on_s=(lab_exec h2) on_c=(lab_exec h1)
	echo "== lab $UROCE_LAB: client h1 $cip -> server h2 $sip"
fi
pass=0 fail=0

# Wait until the server listens on its TCP port (perftest's exchange).
wait_port() {
	local i
	for i in $(seq 1 200); do
		"${on_s[@]}" ss -Hltn "sport = :$1" | grep -q . && return 0
		sleep 0.05
	done
	return 1
}

one() { # tool args...
	local tool=$1; shift
	port=$((port + 1))
	UROCE_IP=$sip "${on_s[@]}" timeout 60 "$run" "$tool" -p $port "$@" >"$dir/s" 2>&1 &
	local s=$!
	# Under load the server may take more than a fixed pause to listen
	# ("Couldn't connect to 127.0.0.2:...", seen at load 7).
	wait_port $port
	UROCE_IP=$cip "${on_c[@]}" timeout 60 "$run" "$tool" -p $port "$@" "$sip" >"$dir/c" 2>&1
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

# Figures against the wall clock. perftest turns cycle counts into time
# with a CPU rate it reads from /proc/cpuinfo or measures; a wrong rate
# would scale every figure. In duration mode (-D 3 -f 1) it samples for
# D - 2 x margin = 1 s of real time (its alarm): the iterations it reports
# at its own average rate must span that second. For bandwidth, the bytes
# the client's device moved in both directions (UROCE_STATS=1 counters,
# headers included) over the whole D must also come to about its average
# rate: within 0.4..2.5 x, since the margins around the sampled second
# run at whatever rate the machine's load allows (1.70 x was seen in CI
# beside a compile, where the sample window ran slower than its margins).
# A wrong CPU rate is caught by the sample window itself (0.5..2 x: the
# alarm and the last iterations land late on a loaded machine: ib_read_lat
# once read outside 0.8..1.25 under ASan beside other work, and a run
# beside other work 1.46; a CPU rate read wrongly from /proc/cpuinfo, a
# throttled core's "cpu MHz" or a base clock against a turbo one, is off
# by 2 x and more).
# clock TOOL K ARGS... (K: the round trips per iteration that its latency
# figure stands for, 2 where it prints half a round trip; 0: bandwidth)
clock() {
	local tool=$1 k=$2 d=3 m=1; shift 2
	local f0=$fail
	UROCE_STATS=1 one "$tool" -x 0 -D $d -f $m -F "$@"
	[ $fail = $f0 ] || return
	local unit=1048576 row tx rx
	grep -q 'Gb/sec' "$dir/c" && unit=125000000
	row=$(grep -E '^ +[0-9]+ +[0-9]+ ' "$dir/c" | tail -n 1)
	tx=$(grep -o 'tx_bytes=[0-9]*' "$dir/c" | tail -n 1 | cut -d= -f2)
	rx=$(grep -o 'rx_bytes=[0-9]*' "$dir/c" | tail -n 1 | cut -d= -f2)
	if echo "$row" | awk -v k="$k" -v u="$unit" -v d=$d -v win=$((d - 2 * m)) \
		-v tx="${tx:-0}" -v rx="${rx:-0}" '{
		if (k > 0) { w = $2 * k * $3 / 1e6; dev = 1 }
		else { r = $4 * u; w = $1 * $2 / r; dev = (tx + rx) / d / r }
		printf "  %.3f s of samples", w
		if (k == 0) printf ", device bytes %.2f x the average", dev
		printf "\n"
		exit !(w > 0.5 * win && w < 2 * win && dev > 0.4 && dev < 2.5) }'; then
		echo "ok   $tool: figures agree with the wall clock"
	else
		pass=$((pass - 1))
		fail=$((fail + 1))
		echo "FAIL $tool: figures disagree with the wall clock ($((d - 2 * m)) s of samples expected): $row"
	fi
}

n=200
# The clock is perftest's and the machine's, not the addressing's: the
# quick matrix checks it, the other modes (CLOCK=0) skip it (CI's time).
if [ "${CLOCK:-1}" = 1 ]; then
	clock ib_write_bw 0 -s 65536
	clock ib_send_lat 2
	clock ib_read_lat 1
fi
if [ "$mode" = netns ] || [ "$mode" = subset ]; then
	# Every tool with both posting APIs, and -b, -e, -q 4, 64 KiB and both
	# atomics once each: a third of the quick matrix.
	one ib_write_bw -x 0 -n $n -F
	one ib_write_bw -x 0 -n $n -F -b --use_old_post_send
	one ib_read_bw -x 0 -n $n -F -q 4 --use_old_post_send
	one ib_read_bw -x 0 -n $n -F -e
	one ib_send_bw -x 0 -n $n -F -s 65536 --report_gbits
	one ib_send_bw -x 0 -n $n -F -e --use_old_post_send
	one ib_write_lat -x 0 -n $n -F --use_old_post_send
	one ib_read_lat -x 0 -n $n -F -s 4096
	one ib_send_lat -x 0 -n $n -F
	one ib_send_lat -x 0 -n $n -F -s 4096 --use_old_post_send
	one ib_atomic_bw -x 0 -n $n -F -A CMP_AND_SWAP
	one ib_atomic_bw -x 0 -n $n -F -A FETCH_AND_ADD --use_old_post_send
	one ib_atomic_lat -x 0 -n $n -F -A FETCH_AND_ADD
	one ib_atomic_lat -x 0 -n $n -F -A CMP_AND_SWAP --use_old_post_send
	echo "$pass passed, $fail failed"
	[ $fail = 0 ]
	exit
fi
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
# Doorbell batching: 64-byte WRITEs with up to 128 in flight leave up to 32
# to a system call (src/io/engine.c, post_holds); the client's tx_held
# counter (printed at exit with UROCE_STATS=1) says it happened.
export UROCE_STATS=1
one ib_write_bw -x 0 -n 5000 -F -s 64
unset UROCE_STATS
if grep -q 'tx_held=[1-9]' "$dir/c"; then
	echo "ok   doorbell batching: $(grep -o 'tx_held=[0-9]*' "$dir/c")"
else
	fail=$((fail + 1))
	echo "FAIL doorbell batching: no tx_held in the client's counters"
fi
echo "$pass passed, $fail failed"
[ $fail = 0 ]
