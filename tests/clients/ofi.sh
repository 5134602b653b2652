#!/bin/sh
# SPDX-License-Identifier: MIT
# libfabric 1.17 (Debian's unmodified fi_info / fi_pingpong) on uroce.
#
#   ofi.sh BINDIR
#
# libfabric's verbs provider offers FI_EP_MSG only for a device address on
# an UP, non-loopback interface, so the test makes its own network
# namespace with a veth pair (v0 10.99.0.1, v1 10.99.0.2) and runs there
# (needs root or user namespaces; skipped otherwise).
# 1. fi_info -p verbs lists FI_EP_MSG on domain uroce0 (UROCE_IP=10.99.0.1);
#    with the device on loopback only (127.0.0.2) it does not, as on Linux.
# 2. fi_info -p 'verbs;ofi_rxm' lists FI_EP_RDM on uroce0.
# 3. fi_pingpong -p 'verbs;ofi_rxm' -e rdm (default FI_UNIVERSE_SIZE, so
#    ofi_rxm's CQ of (rx+tx) x 1024 entries must fit max_cqe), and -p verbs
#    -e msg: both sides exit 0, every size line shows all iterations
#    acknowledged, and the client's uroce counters moved the payload both
#    ways (UROCE_STATS=1).
if [ "${UROCE_OFI_NS:-}" != 1 ]; then
	command -v fi_info >/dev/null 2>&1 && command -v fi_pingpong >/dev/null 2>&1 ||
		{ echo "SKIP: fi_info/fi_pingpong not installed (scripts/deps.sh)"; exit 77; }
	unshare -n true 2>/dev/null || { echo "SKIP: cannot unshare a network namespace"; exit 77; }
	exec env UROCE_OFI_NS=1 unshare -n sh "$0" "$@"
fi
. "$(dirname "$0")/lib.sh"
ip link set lo up &&
ip link add v0 type veth peer name v1 &&
ip addr add 10.99.0.1/24 dev v0 && ip addr add 10.99.0.2/24 dev v1 &&
ip link set v0 up && ip link set v1 up || { echo "SKIP: no veth"; exit 77; }

# fi_info prints one "type:" line per info; count those on domain uroce0.
eps() { # FILE TYPE
	awk -v t="$2" '/^    domain:/ {d = $2} /^    type:/ && $2 == t && d == "uroce0" {n++} END {print n + 0}' "$1"
}
UROCE_IP=10.99.0.1 timeout 60 "$bin/uroce-run" fi_info -p verbs >"$tmp/info.out" 2>&1
n=$(eps "$tmp/info.out" FI_EP_MSG)
[ "$n" -ge 1 ] && ok "fi_info -p verbs: $n FI_EP_MSG on uroce0" ||
	{ bad "fi_info -p verbs: no FI_EP_MSG on uroce0"; show "$tmp/info.out"; }
UROCE_IP=127.0.0.2 timeout 60 "$bin/uroce-run" fi_info -p verbs >"$tmp/lo.out" 2>&1
n=$(eps "$tmp/lo.out" FI_EP_MSG)
[ "$n" -eq 0 ] && ok "fi_info -p verbs with the device on lo: no FI_EP_MSG (as Linux)" ||
	bad "fi_info -p verbs lists FI_EP_MSG for a loopback-only device"
UROCE_IP=10.99.0.1 timeout 60 "$bin/uroce-run" fi_info -p 'verbs;ofi_rxm' >"$tmp/rxm.out" 2>&1
n=$(eps "$tmp/rxm.out" FI_EP_RDM)
[ "$n" -ge 1 ] && ok "fi_info -p 'verbs;ofi_rxm': $n FI_EP_RDM on uroce0" ||
	{ bad "fi_info -p 'verbs;ofi_rxm': no FI_EP_RDM on uroce0"; show "$tmp/rxm.out"; }

# pingpong PROV EP [ARGS]: the client checks every size line "N =N".
pingpong() {
	prov=$1 ep=$2
	shift 2
	name="fi_pingpong -p '$prov' -e $ep $*"
	UROCE_STATS=1 UROCE_IP=10.99.0.1 timeout 120 "$bin/uroce-run" \
		fi_pingpong -p "$prov" -e "$ep" "$@" >"$tmp/s.out" 2>&1 &
	spid=$!
	sleep 1
	UROCE_STATS=1 UROCE_IP=10.99.0.2 timeout 120 "$bin/uroce-run" \
		fi_pingpong -p "$prov" -e "$ep" "$@" 10.99.0.1 >"$tmp/c.out" 2>&1
	crc=$?
	wait $spid
	src=$?
	# bytes #sent #ack total ...: payload one way = bytes x sent.
	want=$(awk '$3 ~ /^=/ {b = $1; m = 1; if (b ~ /k$/) m = 1024; if (b ~ /m$/) m = 1048576;
		sub(/[km]$/, "", b); s += b * m * $2} END {print s + 0}' "$tmp/c.out")
	lines=$(awk '$3 ~ /^=/' "$tmp/c.out" | wc -l)
	acked=$(awk '$3 ~ /^=/ && "=" $2 == $3' "$tmp/c.out" | wc -l)
	tx=$(counter "$tmp/c.out" tx_bytes)
	rx=$(counter "$tmp/c.out" rx_bytes)
	if [ $crc -ne 0 ] || [ $src -ne 0 ]; then
		bad "$name: client rc=$crc server rc=$src"; show "$tmp/c.out"; show "$tmp/s.out"
	elif [ "$lines" -eq 0 ] || [ "$acked" -ne "$lines" ]; then
		bad "$name: $acked of $lines size lines fully acknowledged"; show "$tmp/c.out"
	elif [ "$tx" -lt "$want" ] || [ "$rx" -lt "$want" ]; then
		bad "$name: uroce moved tx $tx rx $rx bytes, payload is $want each way"; show "$tmp/c.out"
	else
		ok "$name: $lines sizes, payload $want B each way, uroce tx $tx rx $rx"
	fi
}
pingpong 'verbs;ofi_rxm' rdm
pingpong 'verbs;ofi_rxm' rdm -S 65536 -I 200
pingpong verbs msg
finish
