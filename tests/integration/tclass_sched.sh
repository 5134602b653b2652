#!/bin/sh
# SPDX-License-Identifier: MIT
# The transmit scheduler of traffic classes (docs/ports-classes.md), one
# process on loopback (bench/tclass_sched.c, a few seconds). Counts, no
# timing verdicts:
# 1. UROCE_TC_STRICT=5 under UROCE_RATE_LIMIT_MBPS=1000: a ping-pong in
#    DSCP 46 (priority 5) next to a bulk WRITE stream in class 0. The
#    scheduler holds the bulk QP (tx_prio0_held > 0) and hardly ever the
#    ping-pong: at most 1 % of its packets (a thread preempted between
#    reading the clock and asking, under ASan on a loaded host, finds the
#    bucket past its headroom: 2 of 2524 once); bytes are counted per
#    priority.
# 2. Bad settings are refused with their name and what is allowed: the
#    device does not open.
#   tclass_sched.sh BINDIR BENCHDIR
set -u
bin=$1 bench=$2
run=$bin/uroce-run
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
export UROCE_IP=127.0.79.2

UROCE_STATS=1 UROCE_TC_STRICT=5 UROCE_RATE_LIMIT_MBPS=1000 \
	timeout 60 "$run" "$bench/tclass-sched" lat -n 300 >"$dir/out" 2>&1
rc=$?
cnt() { tr ' ' '\n' <"$dir/out" | sed -n "s/^$1=//p" | tail -1; }
p0h=$(cnt tx_prio0_held) p5h=$(cnt tx_prio5_held) p5b=$(cnt tx_prio5_bytes)
p0b=$(cnt tx_prio0_bytes) p5p=$(cnt tx_prio5_pkts)
echo "strict 5: rc $rc, held prio0 ${p0h:-0} prio5 ${p5h:-0} (of ${p5p:-0} packets), bytes prio0 ${p0b:-0} prio5 ${p5b:-0}"
if [ $rc != 0 ] || [ "${p0h:-0}" -eq 0 ] ||
   [ $((${p5h:-0} * 100)) -gt "${p5p:-0}" ] ||
   [ "${p5b:-0}" -eq 0 ] || [ "${p0b:-0}" -eq 0 ]; then
	echo "FAIL: the scheduler's counters"; cat "$dir/out"; fail=1
fi

refused() { # setting value words-of-the-message
	env "$1=$2" UROCE_RATE_LIMIT_MBPS=1000 timeout 20 "$run" \
		"$bench/tclass-sched" share -s 0.1 >"$dir/bad" 2>&1
	if [ $? = 0 ] || ! grep -q "$1=$2.*$3" "$dir/bad"; then
		echo "FAIL: $1=$2 not refused with \"$3\""; cat "$dir/bad"; fail=1
	else
		echo "refused: $(grep "$1" "$dir/bad" | head -1)"
	fi
}
refused UROCE_TC_STRICT 8 "0..7"
refused UROCE_TC_STRICT 5,5 "0..7"
refused UROCE_TC_WEIGHTS 3,0 "1..100"
refused UROCE_TC_MIN_MBPS x "400000"
refused UROCE_TC_TRUST l2 "dscp|pcp"
exit $fail
