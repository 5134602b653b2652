#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Collectives across a network: three ranks, each in its own lab namespace
# (tests/lab/netns.sh: h1, h2, h3 behind a forwarding switch, 1500-byte
# MTU; 9000 for one loss case, with 8 KiB packets), run coll_check's cases
# against Open MPI's results (computed first on loopback) while the switch
# drops, duplicates, reorders, delays and corrupts their packets. Then a rank's links are cut in the middle of an
# allreduce loop: the others must fail with an error, not hang. Last,
# uroce-launch --hosts starts four ranks on the three hosts (two ranks
# share h1's address) through netns.sh's rsh agent, then over ssh to an
# sshd of our own in each host, and must forward a remote rank's exit
# status and stop the other ranks.
#   coll_lab.sh BINDIR TESTDIR CASES
#   COLL_LAB_CASES="clean loss" coll_lab.sh ...   some cases only
# Every case must pass coll_check; each faulty case must also have moved
# the uroce counter (UROCE_STATS) its fault shows in: retransmissions, or
# duplicates received; so that a fault that missed the traffic fails the
# test instead of passing it. Exit 77 when
# not root, no netns or no MPI.
set -uo pipefail
BIN=$(cd "$1" && pwd)
TESTS=$(cd "$2" && pwd)
CASEFILE=$(realpath "$3")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CASES=${COLL_LAB_CASES:-"clean loss loss_jumbo9000 dup nfq nfq_sr cut launch launch_ssh"}
NP=3

[[ $(id -u) -eq 0 ]] || { echo "SKIP: the lab needs root"; exit 77; }
command -v ip >/dev/null && ip netns list >/dev/null 2>&1 || { echo "SKIP: ip netns unavailable"; exit 77; }
command -v iptables >/dev/null || { echo "SKIP: iptables not installed"; exit 77; }
command -v mpirun >/dev/null || { echo "SKIP: no mpirun (apt-get install openmpi-bin libopenmpi-dev)"; exit 77; }
[[ -x $TESTS/coll_ref_mpi ]] || { echo "SKIP: coll_ref_mpi not built (no MPI at configure time)"; exit 77; }

[[ -x $BIN/uroce-nfq ]] && export UROCE_NFQ=${UROCE_NFQ:-$BIN/uroce-nfq}
source "$HERE/../lab/netns.sh"
# Go-back-N unless a case asks for selective repeat (negotiated by
# default between uroce ends: docs/wire.md "Selective repeat negotiation").
export UROCE_SR=0
WORK=$(mktemp -d /tmp/uroce-coll-lab.XXXXXX)
cleanup() { lab_down >/dev/null 2>&1 || true; rm -rf "$WORK"; }
trap cleanup EXIT
trap 'exit 1' INT TERM
FAILS=0
PORT=$((29000 + $$ % 1000))
seed=${COLL_SEED:-$(date +%s)}
echo "seed $seed (COLL_SEED=$seed to repeat)"

# Open MPI's results for 3 ranks (in $WORK) and 4 ($WORK/4).
mkdir -p "$WORK/4"
for np in $NP 4; do
	d=$WORK
	[[ $np == 4 ]] && d=$WORK/4
	ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} timeout 120 mpirun --allow-run-as-root --oversubscribe \
		--mca btl tcp,self --mca btl_tcp_if_include lo --mca pml ob1 -np $np "$TESTS/coll_ref_mpi" "$CASEFILE" "$d" "$seed" \
		>"$WORK/mpi.log" 2>&1 || { echo "FAIL: mpirun -np $np coll_ref_mpi"; cat "$WORK/mpi.log"; exit 1; }
done
lab_up --hosts $NP --mtu 1500 >/dev/null 2>&1 || { echo "FAIL: lab_up"; exit 1; }
MASTER=$(lab_ip h1)
echo "== lab $UROCE_LAB: ranks 0-2 in h1-h3, rank 0 at $MASTER"

counter() { grep -o "\b$2=[0-9]*" "$1" | head -n1 | cut -d= -f2 | grep . || echo 0; }
# sum NAME: a counter summed over the ranks' logs of the last run
sum() { local t=0 r; for r in $(seq 0 $((NP - 1))); do t=$((t + $(counter "$WORK/r$r.log" "$1"))); done; echo $t; }

# ranks LIMIT_S PROG ARGS...: rank r in namespace h<r+1>, all in the
# background; PIDS holds their pids, logs in $WORK/r<rank>.log.
ranks() {
	local to=$1 r h
	shift
	PORT=$((PORT + 1))
	PIDS=()
	for r in $(seq 0 $((NP - 1))); do
		h=h$((r + 1))
		RANK=$r WORLD_SIZE=$NP MASTER_ADDR=$MASTER MASTER_PORT=$PORT UROCE_IP=$(lab_ip $h) \
			UROCE_STATS=1 lab_exec $h timeout "$to" "$BIN/uroce-run" "$@" >"$WORK/r$r.log" 2>&1 &
		PIDS+=($!)
	done
}

# tails N: the last N lines of each rank's log
tails() { local r; for r in $(seq 0 $((NP - 1))); do echo "--- rank $r"; tail -n "$1" "$WORK/r$r.log"; done; }

# check NAME [COUNTER]: coll_check in all three namespaces; COUNTER, summed
# over the ranks, must not stay 0
check() {
	local name=$1 need=${2:-} t0 dt r rc bad=0 retx
	t0=$(date +%s.%N)
	ranks 240 "$TESTS/coll_check" "$CASEFILE" "$WORK" "$seed"
	for r in $(seq 0 $((NP - 1))); do
		wait "${PIDS[$r]}"
		rc=$?
		[[ $rc == 0 ]] || { echo "    rank $r exited $rc"; bad=1; }
	done
	dt=$(echo "$(date +%s.%N) - $t0" | bc)
	retx=$(sum tx_retransmit)
	grep -q "coll_check: $NP ranks, .*PASS" "$WORK/r0.log" || bad=1
	if [[ -n $need && $(sum "$need") == 0 ]]; then
		echo "    $need stayed 0: the fault did not reach the traffic"
		bad=1
	fi
	if [[ $bad == 1 ]]; then
		echo "FAIL: $name ($dt s)"
		tails 30
		FAILS=$((FAILS + 1))
		return 1
	fi
	printf 'ok: %-5s %s in %.1f s; %d packets sent, %d retransmitted (%d timeouts), %d duplicates received\n' \
		"$name" "$(grep -o "$NP ranks, [0-9]* cases" "$WORK/r0.log")" "$dt" "$(sum tx_packets)" \
		"$retx" "$(sum tx_timeouts)" "$(sum rx_duplicate)"
}

# cut: h3's links go down while the ranks loop on allreduce; the others
# (and h3's rank, which reaches nobody) must report an error within the
# collectives' timeout plus the transport's retries.
cut_case() {
	local t0 r n=0 det
	export UROCE_COLL_TIMEOUT_MS=3000
	ranks 60 "$TESTS/coll_fail" cut
	unset UROCE_COLL_TIMEOUT_MS
	for _ in $(seq 100); do
		n=$(cat "$WORK"/r*.log 2>/dev/null | grep -c "running")
		[[ $n == "$NP" ]] && break
		sleep 0.1
	done
	if [[ $n != "$NP" ]]; then
		echo "FAIL: cut: $n of $NP ranks running after 10 s"
		tails 20
		FAILS=$((FAILS + 1))
		return 1
	fi
	t0=$(date +%s.%N)
	lab_cut h3 >/dev/null 2>&1
	for r in $(seq 0 $((NP - 1))); do wait "${PIDS[$r]}"; done
	det=$(cat "$WORK"/r0.log "$WORK"/r1.log | grep -c "detected in")
	if [[ $det != 2 ]]; then
		echo "FAIL: cut: $det of the 2 connected ranks detected the cut"
		tails 20
		FAILS=$((FAILS + 1))
		return 1
	fi
	printf 'ok: cut   h3 cut off; all ranks done %.1f s later:\n' "$(echo "$(date +%s.%N) - $t0" | bc)"
	grep -h "detected in\|NOT detected" "$WORK"/r*.log | sed 's/^/    /'
}

# launch_run NAME RSH [CMD...]: uroce-launch's remote path (--hosts,
# --rsh RSH, the launcher started under CMD) across the lab: the cases
# with 4 ranks on the 3 hosts, then a rank that exits 3, which must come
# back as the launcher's status with the other ranks stopped. --no-shm:
# the lab's hosts are namespaces of one machine, whose ranks would
# otherwise reach each other through /dev/shm and CMA, not the veths.
launch_run() {
	local name=$1 rsh=$2 hosts rc left res i
	shift 2
	hosts=$(lab_ip h1),$(lab_ip h2),$(lab_ip h3)
	"$@" "$BIN/uroce-launch" -n 4 --hosts "$hosts" --rsh "$rsh" --timeout 120 --no-shm \
		"$TESTS/coll_check" "$CASEFILE" "$WORK/4" "$seed" >"$WORK/launch.log" 2>&1
	rc=$?
	if [[ $rc != 0 ]] || ! grep -q "coll_check: 4 ranks, .*PASS" "$WORK/launch.log"; then
		echo "FAIL: $name: uroce-launch -n 4 --hosts $hosts coll_check (status $rc)"
		tail -n 30 "$WORK/launch.log"
		FAILS=$((FAILS + 1))
		return 1
	fi
	res=$(grep -o "4 ranks, [0-9]* cases: PASS" "$WORK/launch.log")
	"$@" "$BIN/uroce-launch" -n 3 --hosts "$hosts" --rsh "$rsh" --timeout 30 \
		sh -c '[ "$RANK" = 1 ] && exit 3; exec sleep 27' >"$WORK/launch.log" 2>&1
	rc=$?
	# Remote ends stop once their agent's connection closes.
	for i in $(seq 50); do
		left=$(pgrep -f -x "sleep 27" | wc -l)
		[[ $left == 0 ]] && break
		sleep 0.1
	done
	if [[ $rc != 3 || $left != 0 ]]; then
		echo "FAIL: $name: a remote rank's status 3 came back as $rc, $left ranks left running"
		cat "$WORK/launch.log"
		pkill -f -x "sleep 27"
		FAILS=$((FAILS + 1))
		return 1
	fi
	echo "ok: $name uroce-launch -n 4 --hosts $hosts --rsh '$rsh': $res"
	echo "    a remote rank's exit status 3 forwarded, the other ranks stopped within $(((i - 1) * 100)) ms"
}

# launch_ssh: the same over real ssh, uroce-launch's default agent: an
# sshd of our own in each host's namespace (key, host key and configs in
# $WORK, port 2222) and the launcher in h1. Without a terminal, ssh alone
# would leave the other ranks running when a rank fails.
launch_ssh() {
	local sshd=/usr/sbin/sshd k="$WORK/ssh" h i pids=() up=1
	if [[ ! -x $sshd ]] || ! command -v ssh >/dev/null; then
		echo "SKIP: launch_ssh: no sshd (apt-get install openssh-server)"
		return 0
	fi
	mkdir -p "$k" /run/sshd
	ssh-keygen -q -t ed25519 -N '' -f "$k/id" && ssh-keygen -q -t ed25519 -N '' -f "$k/host" &&
		cp "$k/id.pub" "$k/authorized_keys" || { echo "FAIL: launch_ssh: ssh-keygen"; FAILS=$((FAILS + 1)); return 1; }
	printf '%s\n' "Host *" "Port 2222" "User root" "IdentityFile $k/id" "IdentitiesOnly yes" \
		"UserKnownHostsFile /dev/null" "StrictHostKeyChecking no" "LogLevel ERROR" >"$k/config"
	for h in h1 h2 h3; do
		printf '%s\n' "ListenAddress $(lab_ip $h):2222" "HostKey $k/host" \
			"AuthorizedKeysFile $k/authorized_keys" "PermitRootLogin prohibit-password" \
			"PasswordAuthentication no" "KbdInteractiveAuthentication no" "UsePAM no" \
			"StrictModes no" "PidFile $k/sshd-$h.pid" >"$k/sshd-$h"
		# In the foreground (-D) as our child, so that we reap it.
		ip netns exec "$(lab_ns $h)" "$sshd" -D -f "$k/sshd-$h" -E "$k/sshd-$h.log" &
		pids+=($!)
	done
	for h in h1 h2 h3; do
		for i in $(seq 50); do
			grep -q "Server listening" "$k/sshd-$h.log" 2>/dev/null && break
			sleep 0.1
		done
		grep -q "Server listening" "$k/sshd-$h.log" 2>/dev/null ||
			{ echo "FAIL: launch_ssh: sshd in $h"; cat "$k/sshd-$h.log"; up=0; }
	done
	[[ $up == 1 ]] && launch_run launch_ssh "ssh -o BatchMode=yes -F $k/config" ip netns exec "$(lab_ns h1)"
	kill "${pids[@]}" 2>/dev/null
	wait "${pids[@]}" 2>/dev/null
	[[ $up == 1 ]] || FAILS=$((FAILS + 1))
	return 0
}

for c in $CASES; do
	lab_clear >/dev/null 2>&1
	lab_restore >/dev/null 2>&1
	case $c in
	clean) check clean ;;
	loss) lab_loss 2 >/dev/null 2>&1; check loss tx_retransmit ;;
	loss_jumbo9000)
		# Ethernet jumbo frames: the library's jumbo offer gives 8 KiB
		# packets (docs/wire.md), which the senders' byte and packet
		# counts must show, with go-back-N over them under 2 % loss.
		lab_mtu 9000 >/dev/null 2>&1
		lab_loss 2 >/dev/null 2>&1
		if check loss_jumbo9000 tx_retransmit; then
			avg=$(( $(sum tx_bytes) / ($(sum tx_packets) + 1) ))
			echo "    $avg bytes per packet sent on average"
			if ((avg < 4200)); then
				echo "FAIL: loss_jumbo9000: $avg bytes per packet, so no 8 KiB packets"
				FAILS=$((FAILS + 1))
			fi
		fi
		lab_mtu 1500 >/dev/null 2>&1
		;;
	dup) lab_dup 2 >/dev/null 2>&1; check dup rx_duplicate ;;
	nfq | nfq_sr)
		# nfq_sr: the same faults with selective repeat at every rank
		# (docs/wire.md "Extensions"): far fewer packets go again than
		# with go-back-N, which resends all it had in flight.
		lab_nfq -- --loss 1 --reorder 2 --reorder-gap 3 --delay-us 100 --jitter-us 50 \
			--corrupt 0.5 --seed "$seed" >/dev/null 2>&1
		[[ $c == nfq_sr ]] && export UROCE_SR=1
		check $c tx_retransmit
		export UROCE_SR=0
		echo "    switch: $(lab_nfq_stop 2>&1 | tail -n 1)"
		[[ $c == nfq ]] && GBN_RETX=$(sum tx_retransmit)
		if [[ $c == nfq_sr && -n ${GBN_RETX:-} && $(sum tx_retransmit) -ge $((GBN_RETX / 4)) ]]; then
			echo "FAIL: nfq_sr: $(sum tx_retransmit) retransmitted, go-back-N $GBN_RETX (want < 1/4)"
			FAILS=$((FAILS + 1))
		fi
		;;
	cut) cut_case ;;
	launch) launch_run launch "$HERE/../lab/netns.sh --lab $UROCE_LAB rsh" ;;
	launch_ssh) launch_ssh ;;
	*) echo "FAIL: unknown case $c"; FAILS=$((FAILS + 1)) ;;
	esac
done
[[ $FAILS == 0 ]] && echo "coll_lab: all passed" || echo "coll_lab: $FAILS failed"
exit $((FAILS > 0))
