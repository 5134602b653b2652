#!/usr/bin/env bash
# selftest.sh - prove the fault lab with ordinary traffic (no uroce code).
#
# Usage: selftest.sh [--nfq PATH|none] [--keep]
#   --nfq PATH   uroce-nfq binary (default: $UROCE_NFQ, then build/bin);
#                "none" skips the NFQUEUE checks (uroce-nfq not built)
#   --keep       leave the lab up on exit (for debugging)
# Exit: 0 pass, 1 fail, 77 skip (not root, or no `ip netns`).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PROBE="$HERE/udpprobe.py"
NFQ=${UROCE_NFQ:-$HERE/../../build/bin/uroce-nfq}
KEEP=0

usage() { sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
	case "$1" in
	--nfq) NFQ=$2; shift 2 ;;
	--keep) KEEP=1; shift ;;
	-h|--help) usage; exit 0 ;;
	*) echo "selftest.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
	esac
done

if [[ $(id -u) -ne 0 ]]; then
	echo "SKIP: lab selftest needs root"
	exit 77
fi
if ! command -v ip >/dev/null || ! ip netns list >/dev/null 2>&1; then
	echo "SKIP: ip netns unavailable"
	exit 77
fi
for t in python3 iptables nstat ping ethtool; do
	command -v "$t" >/dev/null || { echo "FAIL: $t not installed"; exit 1; }
done

# shellcheck source=SCRIPTDIR/netns.sh
source "$HERE/netns.sh"

WORK=$(mktemp -d /tmp/uroce-lab-selftest.XXXXXX)
PIDS=()
FAILS=0
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	if [[ $KEEP -eq 1 ]]; then
		echo "lab kept: UROCE_LAB=${UROCE_LAB:-} (work dir $WORK)"
	else
		lab_down 2>/dev/null || true
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

T0=$SECONDS
lab_up --hosts 2 >/dev/null
echo "== lab $UROCE_LAB up"
H2=$(lab_ip h2)

# jget FILE KEY: one field of a JSON line (udpprobe output).
jget() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }
# sget TEXT KEY: one key=value field of the uroce-nfq summary.
sget() { grep -o "\b$2=[0-9]*" <<<"$1" | tail -1 | cut -d= -f2; }

check() { # check DESCRIPTION PYTHON-EXPRESSION
	if python3 -c "import sys; sys.exit(0 if ($2) else 1)"; then
		echo "  ok:   $1"
	else
		echo "  FAIL: $1   [$2]"
		FAILS=$((FAILS + 1))
	fi
}

# udp NAME SEND-ARGS...: receiver on h2, sender on h1; result in $WORK/NAME.json.
udp() {
	local name=$1
	shift
	rm -f "$WORK/ready"
	lab_exec h2 python3 "$PROBE" recv --idle 0.7 --timeout 20 \
		--ready "$WORK/ready" >"$WORK/$name.json" &
	PIDS+=($!)
	for _ in $(seq 1 250); do [[ -e $WORK/ready ]] && break; sleep 0.02; done
	lab_exec h1 python3 "$PROBE" send --dst "$H2" "$@" >"$WORK/$name.send.json"
	wait "${PIDS[-1]}"
	echo "  $name: $(cat "$WORK/$name.json")"
}

rtt() { # rtt NAME: median RTT h1 -> h2 -> h1 over UDP 4791 (echo on h2)
	local name=$1
	rm -f "$WORK/ready"
	# The echo waits up to 20 s for a datagram and leaves after the
	# probe's 40: with 1.5 s it had gone before a probe that took longer
	# to start (load 20), which met "Connection refused".
	lab_exec h2 python3 "$PROBE" echo --timeout 20 --count 40 --ready "$WORK/ready" >/dev/null &
	PIDS+=($!)
	# until the echo is bound (a fixed 0.2 s lost the race at load 12:
	# the first probe met "Connection refused")
	for _ in $(seq 1 250); do [[ -e $WORK/ready ]] && break; sleep 0.02; done
	lab_exec h1 python3 "$PROBE" rtt --dst "$H2" --count 40 --interval-ms 2 >"$WORK/$name.json"
	echo "  $name: $(cat "$WORK/$name.json")"
	wait "${PIDS[-1]}" || true
}

csum_errors() { lab_exec h2 nstat -saz UdpInCsumErrors | awk '/UdpInCsumErrors/ {print $2}'; }

echo "== plain forwarding"
lab_exec h1 ping -c 3 -i 0.2 -W 1 "$H2" >"$WORK/ping.txt" && pingok=1 || pingok=0
check "ping h1 -> h2 through the switch" "$pingok == 1"
udp plain --count 2000 --rate-mbps 50
check "all 2000 datagrams delivered once, in order" \
	"$(jget "$WORK/plain.json" unique) == 2000 and $(jget "$WORK/plain.json" dups) == 0 and $(jget "$WORK/plain.json" out_of_order) == 0"

echo "== loss 5 (iptables statistic)"
lab_loss 5 2>/dev/null
udp loss --count 4000 --rate-mbps 50
lab_clear 2>/dev/null
lost=$((4000 - $(jget "$WORK/loss.json" unique)))
echo "  lost $lost of 4000 ($(awk -v l="$lost" 'BEGIN{printf "%.2f", l/40}') %)"
check "loss between 2.5 % and 8 %" "100 <= $lost <= 320"

echo "== dup 10 (TEE)"
lab_dup 10 2>/dev/null
udp dup --count 2000 --rate-mbps 50
lab_clear 2>/dev/null
dups=$(jget "$WORK/dup.json" dups)
check "duplicates between 5 % and 16 % ($dups), nothing lost" \
	"100 <= $dups <= 320 and $(jget "$WORK/dup.json" unique) == 2000"

if [[ $NFQ == none ]]; then
	echo "== NFQUEUE checks skipped: uroce-nfq not built"
else
	[[ -x $NFQ ]] || { echo "FAIL: uroce-nfq not found at $NFQ (build it, or --nfq none)"; exit 1; }
	export UROCE_NFQ=$NFQ

	echo "== nfq --delay-us 2000"
	rtt rtt0
	lab_nfq -- --delay-us 2000 --seed 1 2>/dev/null
	rtt rtt1
	sum=$(lab_nfq_stop)
	base=$(jget "$WORK/rtt0.json" median_us)
	delayed=$(jget "$WORK/rtt1.json" median_us)
	floor=$(jget "$WORK/rtt1.json" min_us)
	echo "  median RTT ${base} us -> ${delayed} us (+$((delayed - base)) us), delayed min ${floor} us"
	# The delay is a floor under every RTT; a median difference is not: on a
	# loaded machine the undelayed median alone once read 370 us (min 82).
	check "every delayed RTT takes at least 1.9 ms" "$floor >= 1900"
	# The bound above it only catches a delay gone wrong (e.g. applied per
	# queued packet): uroce-nfq's own scheduling at load 20 added 6 ms to
	# a 2 ms delay's median (4 ms was the bound then).
	check "the delay adds at most 12 ms to the median RTT" "$delayed - $base <= 12000"

	echo "== nfq --reorder 5 --dup 10"
	lab_nfq -- --reorder 5 --dup 10 --seed 2 2>/dev/null
	udp reorder --count 2000 --rate-mbps 50
	sum=$(lab_nfq_stop)
	echo "  ${sum##*$'\n'}"
	ooo=$(jget "$WORK/reorder.json" out_of_order)
	check "receiver sees out-of-order packets ($ooo; nfq reordered $(sget "$sum" reordered))" \
		"$ooo > 40 and $(jget "$WORK/reorder.json" unique) == 2000"
	check "duplicates arrive ($(jget "$WORK/reorder.json" dups) == nfq duplicated $(sget "$sum" duplicated))" \
		"$(jget "$WORK/reorder.json" dups) == $(sget "$sum" duplicated) > 100"

	echo "== nfq --corrupt 10 --fix-csum 100"
	e0=$(csum_errors)
	lab_nfq -- --corrupt 10 --fix-csum 100 --seed 3 2>/dev/null
	udp corruptfix --count 2000 --rate-mbps 50
	sum=$(lab_nfq_stop)
	echo "  ${sum##*$'\n'}"
	e1=$(csum_errors)
	c=$(sget "$sum" corrupted)
	check "corrupted payloads delivered ($(jget "$WORK/corruptfix.json" corrupted) == corrupted $c == fixed $(sget "$sum" fixed))" \
		"$(jget "$WORK/corruptfix.json" corrupted) == $c == $(sget "$sum" fixed) > 100"
	check "no UdpInCsumErrors ($((e1 - e0)))" "$e1 - $e0 == 0"

	echo "== nfq --corrupt 10 (no checksum fix)"
	lab_nfq -- --corrupt 10 --seed 4 2>/dev/null
	udp corrupt --count 2000 --rate-mbps 50
	sum=$(lab_nfq_stop)
	echo "  ${sum##*$'\n'}"
	e2=$(csum_errors)
	c=$(sget "$sum" corrupted)
	echo "  UdpInCsumErrors +$((e2 - e1)), nfq corrupted $c"
	check "kernel drops every corrupted datagram" \
		"$e2 - $e1 == $c > 100 and $(jget "$WORK/corrupt.json" corrupted) == 0 and $(jget "$WORK/corrupt.json" received) == 2000 - $c"

	echo "== nfq --rate 100 --kmin 20000 --kmax 100000 --pmax 0.2 (ECT(0) at 300 Mbit/s)"
	ecn_run() {
		lab_nfq -- --rate 100 --limit 200000 --kmin 20000 --kmax 100000 --pmax 0.2 \
			--report "$WORK/queue.csv" --seed 5 2>/dev/null
		udp ecn --count 30000 --size 1000 --rate-mbps 300 --tos 2
		sum=$(lab_nfq_stop)
	}
	ecn_run
	# uroce-nfq must take and pass all 30000 packets (37 000 a second); a
	# sanitized build beside other tests on 2 cores can fall behind (CI saw
	# 81 Mbit/s once), and what it releases late stretches the receiver's
	# span: its rate falls below the port's. Such a run is repeated once;
	# the limits checked are the same.
	if python3 -c "import sys; sys.exit(0 if $(jget "$WORK/ecn.json" rate_mbps) < 85 else 1)"; then
		echo "  receiver rate $(jget "$WORK/ecn.json" rate_mbps) Mbit/s < 85: uroce-nfq was starved? once more"
		ecn_run
	fi
	echo "  ${sum##*$'\n'}"
	echo "  sender $(jget "$WORK/ecn.send.json" rate_mbps) Mbit/s, receiver $(jget "$WORK/ecn.json" rate_mbps) Mbit/s, CE $(jget "$WORK/ecn.json" ce), ECT(0) $(jget "$WORK/ecn.json" ect0)"
	rows=$(($(wc -l <"$WORK/queue.csv") - 1))
	echo "  queue report: $rows rows, last: $(tail -1 "$WORK/queue.csv")"
	# The limit is the upper bound; below it the receiver's rate follows
	# how often uroce-nfq gets a CPU (52-58 Mbit/s in both tries once,
	# beside five engineers' work), so the lower bound only says that
	# the shaper passes traffic at a rate of its order.
	check "egress rate limited to ~100 Mbit/s" "40 <= $(jget "$WORK/ecn.json" rate_mbps) <= 105"
	check "CE marks arrive (receiver $(jget "$WORK/ecn.json" ce) == nfq marked $(sget "$sum" marked))" \
		"$(jget "$WORK/ecn.json" ce) == $(sget "$sum" marked) > 0"
	check "tail drops above --limit" "$(sget "$sum" tail_dropped) > 0 and $(sget "$sum" max_queue_bytes) <= 200000"
	check "queue report written" "$rows > 10 and '$(head -1 "$WORK/queue.csv")' == 'time_us,queue_bytes,marks,drops'"

	# --ce-mark: the queue copies headers only, a marked packet leaves
	# with fwmark 1 and the ECN rule sets CE (bench/cc_wire.sh's way).
	echo "== nfq --ce-mark 1 (headers only; iptables ECN --ecn-ip-ect 3 sets CE)"
	lab_sw iptables -t mangle -A POSTROUTING -m mark --mark 1 -j ECN --ecn-ip-ect 3
	lab_nfq -- --rate 100 --limit 200000 --kmin 20000 --kmax 100000 --pmax 0.2 \
		--ce-mark 1 --seed 5 2>/dev/null
	udp ecn --count 30000 --size 1000 --rate-mbps 300 --tos 2
	sum=$(lab_nfq_stop)
	lab_sw iptables -t mangle -D POSTROUTING -m mark --mark 1 -j ECN --ecn-ip-ect 3
	echo "  ${sum##*$'\n'}"
	echo "  receiver $(jget "$WORK/ecn.json" rate_mbps) Mbit/s, CE $(jget "$WORK/ecn.json" ce), ECT(0) $(jget "$WORK/ecn.json" ect0), received $(jget "$WORK/ecn.json" received)"
	check "--ce-mark: CE marks arrive (receiver $(jget "$WORK/ecn.json" ce) == nfq marked $(sget "$sum" marked))" \
		"$(jget "$WORK/ecn.json" ce) == $(sget "$sum" marked) > 0"
	check "--ce-mark: the queue counts whole packets (max $(sget "$sum" max_queue_bytes) <= 200000, tail drops $(sget "$sum" tail_dropped))" \
		"$(sget "$sum" tail_dropped) > 0 and 100000 < $(sget "$sum" max_queue_bytes) <= 200000"
	check "--ce-mark: every packet arrives whole or is dropped" \
		"$(jget "$WORK/ecn.json" received) + $(sget "$sum" tail_dropped) == 30000"
fi

echo "== cut / restore"
lab_cut h2 2>/dev/null
lab_exec h1 ping -c 1 -W 1 "$H2" >/dev/null 2>&1 && cutok=0 || cutok=1
lab_restore 2>/dev/null
lab_exec h1 ping -c 1 -W 1 "$H2" >/dev/null 2>&1 && restok=1 || restok=0
check "cut link blocks traffic, restore brings it back" "$cutok == 1 and $restok == 1"

echo "== done in $((SECONDS - T0)) s: $FAILS failure(s)"
[[ $FAILS -eq 0 ]]
