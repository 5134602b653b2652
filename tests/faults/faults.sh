#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fault suite: uroce between two lab namespaces (tests/lab/netns.sh) under
# loss, reordering, duplication, corruption and a dead peer. ur_integrity
# (server in h2, client in h1) verifies every byte, atomic and completion;
# the uroce counters (UROCE_STATS=1) give retransmissions and ICRC drops.
# Also ibv_rc_pingpong under 1 % loss, ibv_ud_pingpong -s 1024 and
# ibv_srq_pingpong across the namespaces.
#   faults.sh BINDIR            FAULTS_MIB (default 64) per case
#   FAULTS_CASES="loss1 corrupt" faults.sh BINDIR   run some cases only
# Exit 77 when not root or no netns.
set -uo pipefail
BIN=$(cd "$1" && pwd)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/../listen.sh"
MIB=${FAULTS_MIB:-64}
CASES=${FAULTS_CASES:-"clean loss0.1 loss1 loss5 loss1_jumbo loss1_jumbo9000 reorder reorder_sr dup1 corrupt foreign_id deadpeer rc_pingpong ud_pingpong srq_pingpong"}
# Cases listed here run twice: with --no-read (must pass) and with READs
# (XFAIL unless FAULTS_STRICT=1). Empty since issue 4 (READs under
# reordering / loss / corruption ended in RETRY_EXC_ERR) was fixed.
READ_XFAIL=" "

[[ $(id -u) -eq 0 ]] || { echo "SKIP: the fault suite needs root"; exit 77; }
command -v ip >/dev/null && ip netns list >/dev/null 2>&1 || { echo "SKIP: ip netns unavailable"; exit 77; }
for t in iptables nstat; do
	command -v $t >/dev/null || { echo "SKIP: $t not installed"; exit 77; }
done
[[ -x $BIN/../tests/ur_integrity ]] || { echo "FAIL: $BIN/../tests/ur_integrity not built"; exit 1; }

source "$HERE/../lab/netns.sh"
# Go-back-N unless a case asks for selective repeat (negotiated by
# default between uroce ends: docs/wire.md "Selective repeat negotiation").
export UROCE_SR=0
WORK=$(mktemp -d /tmp/uroce-faults.XXXXXX)
FAILS=0
PORT=$((19000 + $$ % 1000))
cleanup() { lab_down 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
trap 'exit 1' INT TERM
lab_up --hosts 2 --mtu 1500 >/dev/null 2>&1 || { echo "FAIL: lab_up"; exit 1; }
IP1=$(lab_ip h1)
IP2=$(lab_ip h2)
echo "== lab $UROCE_LAB: client h1 $IP1 -> server h2 $IP2, $MIB MiB per case"

# counters FILE NAME: value of a uroce counter in a UROCE_STATS line (0 if absent)
counter() { grep -o "\b$2=[0-9]*" "$1" | head -n1 | cut -d= -f2 | grep . || echo 0; }
# switch_drops [acks|data]: packets the switch's loss rules dropped since
# lab_clear; all of them, or those of the rule that takes only ACK/NAKs
# (u32 "...=0x11"), or those of every other rule
switch_drops() {
	lab_sw iptables -w -L "$LAB_CHAIN" -v -n -x 2>/dev/null |
		awk -v k="${1:-all}" '$3 != "DROP" { next }
			{ ack = ($0 ~ /u32 "/) }
			k == "all" || (k == "acks") == ack { n += $1 }
			END { print n + 0 }'
}
# rcvbuf_errors NS: datagrams its kernel dropped for a full socket buffer
rcvbuf_errors() { lab_exec "$1" nstat -saz UdpRcvbufErrors Udp6RcvbufErrors 2>/dev/null | awk '{n += $2} END {print n + 0}'; }
# backlog_drops: packets the kernel dropped at a full input backlog
# (netdev_max_backlog; veth delivers through it), machine-wide: a loaded
# machine's, not the fabric's.
backlog_drops() {
	local n=0 _a d _r
	while read -r _a d _r; do n=$((n + 0x$d)); done </proc/net/softnet_stat
	echo $n
}
csum_errors() { lab_exec "$1" nstat -saz UdpInCsumErrors 2>/dev/null | awk '/UdpInCsumErrors/ {print $2}'; }

# integrity NAME [ur_integrity client args...]: one transfer, both sides
# verified. Sets RES_* for the summary.
integrity() {
	local name=$1 sl=$WORK/$1.server cl=$WORK/$1.client spid crc src rb0
	shift
	rb0=$(( $(rcvbuf_errors h1) + $(rcvbuf_errors h2) + $(backlog_drops) ))
	PORT=$((PORT + 1))
	UROCE_STATS=1 UROCE_IP=$IP2 lab_exec h2 timeout 200 "$BIN/uroce-run" "$BIN/../tests/ur_integrity" \
		-p $PORT >"$sl" 2>&1 &
	spid=$!
	sleep 0.3
	UROCE_STATS=1 UROCE_IP=$IP1 lab_exec h1 timeout 200 "$BIN/uroce-run" "$BIN/../tests/ur_integrity" \
		-p $PORT -m "$MIB" "$@" "$IP2" >"$cl" 2>&1
	crc=$?
	[[ $crc == 0 ]] || kill $spid 2>/dev/null
	wait $spid
	src=$?
	RES_LINE=$(grep '^moved' "$cl")
	RES_RETX=$(( $(counter "$cl" tx_retransmit) + $(counter "$sl" tx_retransmit) ))
	RES_TO=$(( $(counter "$cl" tx_timeouts) + $(counter "$sl" tx_timeouts) ))
	RES_REASK=$(( $(counter "$cl" tx_reask) + $(counter "$sl" tx_reask) ))
	RES_RNR=$(( $(counter "$cl" rx_nak_rnr) + $(counter "$sl" rx_nak_rnr) ))
	RES_NAKSEQ=$(( $(counter "$cl" rx_nak_seq) + $(counter "$sl" rx_nak_seq) ))
	RES_DUP=$(( $(counter "$cl" rx_duplicate) + $(counter "$sl" rx_duplicate) ))
	RES_ICRC=$(( $(counter "$cl" rx_drop_icrc) + $(counter "$sl" rx_drop_icrc) ))
	# Lost on the hosts, not by the switch: sends the kernel refused
	# (tx_drop_io), datagrams it dropped at a full receive buffer or a
	# full input backlog (a receiver starved of CPU on a loaded machine).
	RES_HOSTLOST=$(( $(counter "$cl" tx_drop_io) + $(counter "$sl" tx_drop_io) +
		$(rcvbuf_errors h1) + $(rcvbuf_errors h2) + $(backlog_drops) - rb0 ))
	RES_UNVER=$(( $(counter "$cl" rx_unverified_icrc) + $(counter "$sl" rx_unverified_icrc) ))
	RES_MBPS=$(sed -n 's/.*= \([0-9.]*\) Mbit\/s.*/\1/p' "$cl")
	if [[ $crc != 0 || $src != 0 ]] || ! grep -q "all verified" "$cl" || ! grep -q "^server: verified" "$sl"; then
		if [[ ${XFAIL:-0} == 1 ]]; then
			echo "XFAIL: $name: $(grep FAIL "$cl" "$sl" | head -n1 | sed 's/.*FAIL: //')"
			return 1
		fi
		echo "FAIL: $name (client rc=$crc, server rc=$src)"
		echo "--- server"; cat "$sl"; echo "--- client"; cat "$cl"
		FAILS=$((FAILS + 1))
		return 1
	fi
	printf 'ok: %-8s %s\n    retransmitted %d packets (%d timeouts), %d duplicates received, %d ICRC drops\n' \
		"$name" "$RES_LINE" "$RES_RETX" "$RES_TO" "$RES_DUP" "$RES_ICRC"
}

# stuck_state: each host's uroce counters (every running process) and
# kernel UDP drops, and the switch's iptables counters.
stuck_state() {
	local h
	for h in h1 h2; do
		echo "[$h] uroce-stat -a"
		lab_exec $h "$BIN/uroce-stat" -a
		echo "[$h] kernel UDP counters"
		lab_exec $h nstat -saz 2>/dev/null | grep -E 'Udp(InDatagrams|RcvbufErrors|InErrors|NoPorts|SndbufErrors)'
	done
	echo "[switch] iptables"
	lab_sw iptables -w -L -v -n -x 2>/dev/null
}

pingpong() {
	local name=$1 prog=$2 sl=$WORK/$1.pserver cl=$WORK/$1.pclient crc src
	shift 2
	PORT=$((PORT + 1))
	# UROCE_GSO=0: one packet per datagram, so that the switch's
	# requests-only loss never takes an ACK that shares a GSO datagram
	# with a request (veths carry GSO runs whole through netfilter).
	# stdbuf -oL: what the programs printed survives timeout's kill.
	UROCE_GSO=0 UROCE_STATS=1 UROCE_IP=$IP2 lab_exec h2 timeout 120 stdbuf -oL "$BIN/uroce-run" $prog -g 0 -p $PORT "$@" >"$sl" 2>&1 &
	local spid=$!
	wait_tcp $PORT lab_exec h2
	# A pingpong that hangs (ibv_ud_pingpong never resends a lost
	# datagram) is killed without printing its counters: take them
	# from the running processes first, with the kernel's UDP drops.
	(sleep "${FAULTS_STUCK_S:-100}"; stuck_state) >"$WORK/$name.stuck" 2>&1 &
	local wpid=$!
	UROCE_GSO=0 UROCE_STATS=1 UROCE_IP=$IP1 lab_exec h1 timeout 120 stdbuf -oL "$BIN/uroce-run" $prog -g 0 -p $PORT "$@" "$IP2" >"$cl" 2>&1
	crc=$?
	wait $spid
	src=$?
	kill $wpid 2>/dev/null
	wait $wpid 2>/dev/null
	if [[ $crc != 0 || $src != 0 ]] || ! grep -q "iters in" "$cl"; then
		echo "FAIL: $name: $prog $* (client rc=$crc, server rc=$src)"
		echo "--- server"; cat "$sl"; echo "--- client"; cat "$cl"
		[[ -s $WORK/$name.stuck ]] && { echo "--- still running after ${FAULTS_STUCK_S:-100} s"; cat "$WORK/$name.stuck"; }
		FAILS=$((FAILS + 1))
		return 1
	fi
	echo "ok: $name: $prog $*: $(grep 'iters in' "$cl"); retransmitted $(( $(counter "$cl" tx_retransmit) + $(counter "$sl" tx_retransmit) ))"
}

# twice NAME: for READ_XFAIL cases, first without READs (must pass), then
# the full mix as an expected failure; otherwise once. RES_* of the pass
# that verified.
twice() {
	local r=0 save
	if [[ $READ_XFAIL == *" $1 "* && ${FAULTS_STRICT:-0} != 1 ]]; then
		integrity "$1-noread" --no-read || r=1
		save=("$RES_RETX" "$RES_TO" "$RES_DUP" "$RES_ICRC" "$RES_MBPS")
		XFAIL=1 integrity "$1" && save=("$RES_RETX" "$RES_TO" "$RES_DUP" "$RES_ICRC" "$RES_MBPS")
		RES_RETX=${save[0]} RES_TO=${save[1]} RES_DUP=${save[2]} RES_ICRC=${save[3]} RES_MBPS=${save[4]}
		return $r
	fi
	integrity "$1"
}

CLEAN_MBPS=
for c in $CASES; do
	lab_clear >/dev/null 2>&1
	case $c in
	clean)
		integrity clean && CLEAN_MBPS=$RES_MBPS
		# Nothing is lost or reordered on the way: a retransmission
		# that no timeout caused means a QP's packets left out of PSN
		# order (a 64 KiB message is 64 packets at MTU 1024, a whole
		# transmit batch). A timeout can fire on a loaded 2-core
		# machine (ASan, other work: once 323 packets of go-back-N
		# after a stall), and so can a full socket buffer (once 66
		# packets resent, no timeout, load average 7), so
		# retransmissions count only without either.
		# An RNR NAK (a receiver that had not reposted, on a loaded
		# machine) is a resend the network did not cause either.
		[[ $RES_RETX -eq 0 || $RES_TO -gt 0 || $RES_HOSTLOST -gt 0 || $RES_RNR -gt 0 ]] || { echo "FAIL: clean: $RES_RETX packets retransmitted on a loss-free network, no timeout, RNR NAK or host drop behind them ($RES_NAKSEQ sequence-error NAKs)"; FAILS=$((FAILS + 1)); }
		[[ $RES_HOSTLOST -eq 0 ]] || echo "    clean: $RES_HOSTLOST packets dropped by the hosts' kernels (a loaded machine), $RES_RETX packets resent" 
		[[ $RES_TO -eq 0 ]] || echo "    clean: $RES_TO retransmission timeouts (a loaded machine), $RES_RETX packets resent"
		[[ $RES_RNR -eq 0 ]] || echo "    clean: $RES_RNR RNR NAKs (a receiver late to repost on a loaded machine), $RES_RETX packets resent" ;;
	loss0.1|loss1|loss5)
		# Two rules with the same chance, so that the drops of ACKs
		# are told apart from the rest.
		lab_loss "${c#loss}" --requests-only 2>/dev/null
		lab_loss "${c#loss}" --acks-only 2>/dev/null
		twice "$c" && [[ -n $CLEAN_MBPS && $c == loss1 ]] &&
			awk -v a="$RES_MBPS" -v b="$CLEAN_MBPS" 'BEGIN { printf "    goodput under 1%% loss: %.2f of loss-free (%s / %s Mbit/s)\n", a / b, a, b }'
		# A dropped request or response must cost a retransmission
		# (or a repeated ask for an atomic's answer); a dropped ACK
		# need not, as the next one covers it (a CI run dropped one
		# packet at 0.1 % and nothing was resent). At 0.1 % the
		# switch may drop nothing (a GSO run crosses it as one
		# packet: a few thousand of them), which proves nothing.
		drops=$(switch_drops data)
		if [[ $drops -eq 0 ]]; then
			echo "    the switch dropped no request or response this time (random, ${c#loss} %; $(switch_drops acks) ACKs): retransmissions not checked"
		elif [[ $((RES_RETX + RES_REASK)) -eq 0 ]]; then
			echo "FAIL: $c: the switch dropped $drops requests or responses ($(switch_drops acks) ACKs), no retransmissions counted"; FAILS=$((FAILS + 1))
		else
			echo "    the switch dropped $drops requests or responses and $(switch_drops acks) ACKs"
		fi ;;
	loss1_jumbo|loss1_jumbo9000)
		# 1 % loss with jumbo packets (the default, UROCE_JUMBO=auto
		# at both ends: negotiated by the hellos, docs/wire.md "Jumbo
		# packets") over links whose MTU carries them: 16 KiB packets
		# at MTU 65000, 8 KiB at 9000 (Ethernet jumbo frames,
		# UROCE_JUMBO=1 there), with
		# selective repeat (also the default) holding and resending
		# them; the client's average packet shows that they were used.
		if [[ $c == loss1_jumbo ]]; then mtu=65000 min=8192; else mtu=9000 min=4200; fi
		lab_mtu $mtu 2>/dev/null
		lab_loss 1 2>/dev/null
		# auto offers them only on links of 16 KiB (ur_qp.c): 9000 asks
		[[ $c == loss1_jumbo9000 ]] && export UROCE_JUMBO=1
		integrity "$c"
		unset UROCE_JUMBO
		lab_mtu 1500 2>/dev/null
		avg=$(( $(counter "$WORK/$c.client" tx_bytes) / ($(counter "$WORK/$c.client" tx_packets) + 1) ))
		if [[ $RES_RETX -le 0 || $avg -le $min ]]; then
			echo "FAIL: $c: $RES_RETX retransmitted, $avg bytes per packet sent (want > 0, > $min)"
			FAILS=$((FAILS + 1))
		else
			echo "    $avg bytes per packet sent by the client"
		fi ;;
	reorder)
		lab_nfq -- --reorder 2 --reorder-gap 3 --seed 7 2>/dev/null
		twice reorder && GBN_REORDER_RETX=$RES_RETX
		lab_nfq_stop 2>/dev/null | sed 's/^/    /' ;;
	reorder_sr)
		# The same reordering with selective repeat enabled at both
		# ends (docs/wire.md "Extensions"): early packets are held, not
		# NAKed, so far fewer packets go again than with go-back-N.
		lab_nfq -- --reorder 2 --reorder-gap 3 --seed 7 2>/dev/null
		export UROCE_SR=1
		integrity reorder_sr
		export UROCE_SR=0
		lab_nfq_stop 2>/dev/null | sed 's/^/    /'
		if [[ -n ${GBN_REORDER_RETX:-} && $RES_RETX -ge $((GBN_REORDER_RETX / 4)) ]]; then
			echo "FAIL: reorder_sr: $RES_RETX retransmitted, go-back-N $GBN_REORDER_RETX (want < 1/4)"
			FAILS=$((FAILS + 1))
		fi ;;
	dup1)
		lab_dup 1 2>/dev/null
		integrity dup1
		[[ $RES_DUP -gt 0 ]] || { echo "FAIL: dup1: no duplicates counted"; FAILS=$((FAILS + 1)); } ;;
	corrupt)
		local_k1=$(csum_errors h1); local_k2=$(csum_errors h2)
		lab_nfq -- --corrupt 1 --fix-csum 50 --seed 11 2>/dev/null
		twice corrupt
		lab_nfq_stop 2>/dev/null | sed 's/^/    /'
		k=$(( $(csum_errors h1) - local_k1 + $(csum_errors h2) - local_k2 ))
		echo "    kernel dropped $k corrupted packets (UdpInCsumErrors), uroce dropped $RES_ICRC on ICRC"
		[[ $RES_ICRC -gt 0 ]] || { echo "FAIL: corrupt: no ICRC drops counted"; FAILS=$((FAILS + 1)); }
		# Every packet delivered was verified, from the first one on.
		[[ $RES_UNVER -eq 0 ]] || { echo "FAIL: corrupt: $RES_UNVER packets accepted unverified"; FAILS=$((FAILS + 1)); } ;;
	foreign_id)
		# Every packet leaves the switch with a random IPv4 ID, as
		# Linux rxe and NICs send, which the receiver's UDP socket does
		# not show and the ICRC covers: each is verified by recovering
		# the ID from its ICRC (docs/wire.md), and 1 % are corrupted
		# behind a fixed UDP checksum: those, and only those, dropped.
		lab_nfq -- --scramble-id --corrupt 1 --fix-csum 100 --seed 13 2>/dev/null
		integrity foreign_id
		sum=$(lab_nfq_stop 2>/dev/null)
		echo "$sum" | sed 's/^/    /'
		ids=$(echo "$sum" | grep -o 'ids_set=[0-9]*' | cut -d= -f2)
		bad=$(echo "$sum" | grep -o 'corrupted=[0-9]*' | cut -d= -f2)
		echo "    $ids packets with a random IP ID, $bad corrupted; uroce dropped $RES_ICRC on ICRC, accepted $RES_UNVER unverified"
		if [[ ${ids:-0} -le 0 || $RES_ICRC -le 0 || $RES_ICRC -gt ${bad:-0} || $RES_UNVER -ne 0 ]]; then
			echo "FAIL: foreign_id: want IDs rewritten, 0 < ICRC drops <= corrupted, none unverified"
			FAILS=$((FAILS + 1))
		fi ;;
	deadpeer)
		# timeout 12 (16.8 ms), retry_cnt 3: the QP must fail within
		# (3 + 1) x 4 x 16.8 ms = 268 ms of the cut (IBTA allows up to 4x).
		PORT=$((PORT + 1))
		UROCE_IP=$IP2 lab_exec h2 timeout 30 "$BIN/uroce-run" "$BIN/../tests/ur_integrity" -p $PORT \
			>"$WORK/dead.server" 2>&1 &
		spid=$!
		sleep 0.3
		UROCE_IP=$IP1 lab_exec h1 timeout 30 "$BIN/uroce-run" "$BIN/../tests/ur_integrity" -p $PORT \
			-m 100000 -t 12 -r 3 --expect-error "$IP2" >"$WORK/dead.client" 2>&1 &
		cpid=$!
		sleep 1.5
		lab_cut h2 2>/dev/null
		wait $cpid
		crc=$?
		kill $spid 2>/dev/null; wait $spid 2>/dev/null
		lab_restore 2>/dev/null
		line=$(grep '^dead peer' "$WORK/dead.client")
		ms=$(sed -n 's/.* \([0-9.]*\) ms after.*/\1/p' <<<"$line")
		if [[ $crc != 0 || -z $ms ]] || ! grep -q RETRY_EXC <<<"${line^^}" && ! grep -q "retry counter" <<<"$line"; then
			echo "FAIL: deadpeer (rc=$crc)"; cat "$WORK/dead.client"; FAILS=$((FAILS + 1))
		# Measured from the last good completion, not from when the
		# unanswered packet left (a little earlier), so the lower bound
		# keeps a margin: it only catches a QP that gives up far too
		# soon, whatever the load. The spec's bound (268 ms) is checked
		# on virtual time (test_transport err_dead_peer: the four
		# timeouts' times and count); here the engines' timers run as
		# late as the machine's load makes them (594 ms at load 12-20,
		# 1426 ms at load 11-13 in a release run beside other work), so
		# the upper bound only catches a QP that retries without end.
		elif awk -v m="$ms" 'BEGIN { exit !(m >= 50 && m <= 5000) }'; then
			echo "ok: deadpeer: $line (spec: 67..268 ms; here 50..5000)"
		else
			echo "FAIL: deadpeer: $line outside 50..5000 ms (spec: 67..268)"; FAILS=$((FAILS + 1))
		fi ;;
	# The pingpong programs end without a handshake: whichever side
	# finishes first exits, and if the ACK of the other side's last
	# message were dropped then, nothing would be left to resend it and
	# that side would end in "retry counter exceeded", on hardware too.
	# So these cases drop requests only (and send without GSO, see
	# pingpong()); ur_integrity's cases drop ACKs.
	rc_pingpong)
		lab_loss 1 --requests-only 2>/dev/null || { echo "FAIL: lab_loss --requests-only (u32 match)"; FAILS=$((FAILS + 1)); continue; }
		pingpong rc_pingpong ibv_rc_pingpong -n 500 -s 4096 ;;
	ud_pingpong)
		pingpong ud_pingpong ibv_ud_pingpong -n 500 -s 1024 ;;
	srq_pingpong)
		lab_loss 1 --requests-only 2>/dev/null || { echo "FAIL: lab_loss --requests-only (u32 match)"; FAILS=$((FAILS + 1)); continue; }
		pingpong srq_pingpong ibv_srq_pingpong -n 300 -q 4 ;;
	*) echo "unknown case $c"; FAILS=$((FAILS + 1)) ;;
	esac
done
lab_clear >/dev/null 2>&1
echo "== $FAILS failure(s)"
[[ $FAILS -eq 0 ]]
