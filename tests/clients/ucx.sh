#!/bin/sh
# SPDX-License-Identifier: MIT
# UCX 1.13 (Debian's unmodified ucx_info / ucx_perftest) on uroce.
#
#   ucx.sh BINDIR [quick]
#
# 1. ucx_info -d under uroce-run lists memory domain uroce0 with rc_verbs
#    and ud_verbs on uroce0:1; with the device view off (UROCE_VIEW=0) it
#    does not (the view is what UCX needs, not something else).
# 2. ucx_perftest server (127.0.0.2) and client (127.0.0.3) run tag_lat,
#    tag_bw, ucp_put_bw and ucp_get over UCX_TLS=rc_verbs,ud_verbs and over
#    ud_verbs alone, UCX_NET_DEVICES=uroce0:1, with UCX's UD DGID check on
#    (its default): both exit 0, the client prints its Final line, and the
#    client's uroce counters (UROCE_STATS=1) moved at least the payload in
#    the direction the test sends it, so no other transport carried it.
. "$(dirname "$0")/lib.sh"
need ucx_info ucx_perftest
mode=${2:-full}
port=13420

info() {
	UROCE_IP=127.0.0.2 timeout 60 "$bin/uroce-run" ucx_info -d >"$tmp/info.out" 2>&1
}

info
if grep -q '^# Memory domain: uroce0$' "$tmp/info.out" &&
   grep -A1 'Transport: rc_verbs' "$tmp/info.out" | grep -q 'Device: uroce0:1' &&
   grep -A1 'Transport: ud_verbs' "$tmp/info.out" | grep -q 'Device: uroce0:1'; then
	ok "ucx_info -d: uroce0:1 with rc_verbs and ud_verbs"
else
	bad "ucx_info -d: no uroce0:1 with rc_verbs and ud_verbs"; show "$tmp/info.out"
fi
UROCE_VIEW=0 UROCE_IP=127.0.0.2 timeout 60 "$bin/uroce-run" ucx_info -d >"$tmp/noview.out" 2>&1
if grep -q 'Memory domain: uroce0' "$tmp/noview.out"; then
	bad "ucx_info -d lists uroce0 without the device view (test cannot tell)"
else
	ok "ucx_info -d without the view: no uroce0 (as before the view)"
fi

# perf TLS TEST SIZE ITERS DIR: DIR = tx (client sends the payload), rx
# (client receives it: get) or both (latency: ping-pong).
perf() {
	tls=$1 t=$2 size=$3 n=$4 dir=$5
	port=$((port + 1))
	name="ucx_perftest $t -s $size UCX_TLS=$tls"
	export UCX_TLS=$tls UCX_NET_DEVICES=uroce0:1 UCX_UD_VERBS_ETH_DGID_CHECK=y UROCE_STATS=1
	UROCE_IP=127.0.0.2 timeout 120 "$bin/uroce-run" ucx_perftest -p $port \
		>"$tmp/s.out" 2>&1 &
	spid=$!
	sleep 1
	UROCE_IP=127.0.0.3 timeout 120 "$bin/uroce-run" ucx_perftest -p $port \
		127.0.0.2 -t "$t" -s "$size" -n "$n" >"$tmp/c.out" 2>&1
	crc=$?
	wait $spid
	src=$?
	unset UCX_TLS UCX_NET_DEVICES UCX_UD_VERBS_ETH_DGID_CHECK UROCE_STATS
	tx=$(counter "$tmp/c.out" tx_bytes)
	rx=$(counter "$tmp/c.out" rx_bytes)
	want=$((size * n))
	case $dir in
	tx) moved=$tx ;;
	rx) moved=$rx ;;
	both) moved=$((tx < rx ? tx : rx)) ;;
	esac
	if [ $crc -ne 0 ] || [ $src -ne 0 ]; then
		bad "$name: client rc=$crc server rc=$src"; show "$tmp/c.out"; show "$tmp/s.out"
	elif ! grep -q '^Final: *'"$n"' ' "$tmp/c.out"; then
		bad "$name: no Final line for $n iterations"; show "$tmp/c.out"
	elif [ "$moved" -lt "$want" ]; then
		bad "$name: uroce moved $moved bytes ($dir), payload is $want"; show "$tmp/c.out"
	else
		ok "$name: $(sed -n 's/^Final: *//p' "$tmp/c.out" | awk '{print "avg lat " $3 " us, " $5 " MB/s"}'), uroce tx $tx rx $rx bytes"
	fi
}

for tls in rc_verbs,ud_verbs ud_verbs; do
	perf $tls tag_lat 8 1000 both
	perf $tls tag_bw 65536 300 tx
	[ "$mode" = quick ] && continue
	perf $tls ucp_put_bw 65536 300 tx
	perf $tls ucp_get 65536 100 rx
done
finish
