#!/usr/bin/env bash
# netns.sh - fault-injection lab: hosts behind a software switch in network
# namespaces, with iptables/NFQUEUE faults applied in the switch.
#
# Topology (N = 2 or 3 hosts, LAB = lab name, e.g. ur-1234):
#
#   LAB-h1 [eth0 10.201.1.2/24] ---- [h1 10.201.1.1/24]
#   LAB-h2 [eth0 10.201.2.2/24] ---- [h2 10.201.2.1/24]  LAB-sw (forwarding)
#   LAB-h3 [eth0 10.201.3.2/24] ---- [h3 10.201.3.1/24]
#
# Each namespace has its own stack, so several labs use the same addresses
# without clashing; only namespace names (and the state dir) are unique.
#
# Used two ways:
#   CLI:      tests/lab/netns.sh up --hosts 3 ; eval "$(... up)" sets UROCE_LAB
#   library:  source tests/lab/netns.sh; lab_up --hosts 2; trap lab_down EXIT
# See docs/faults.md.

LAB_SUBNET_PREFIX=${LAB_SUBNET_PREFIX:-10.201}
LAB_STATE_ROOT=${LAB_STATE_ROOT:-/run/uroce-lab}
LAB_PORT=${LAB_PORT:-4791}
LAB_CHAIN=UROCE_LAB
LAB_DIR_SELF=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

lab_log() { echo "lab[${UROCE_LAB:-?}]: $*" >&2; }
lab_die() { echo "lab: error: $*" >&2; return 1; }

lab_usage() {
	cat <<EOF
Usage: netns.sh [--lab NAME] COMMAND [ARGS...]

Lab life cycle:
  up [--mtu N] [--hosts 2|3] [--name NAME]
                       create namespaces NAME-h1.., NAME-sw (default NAME
                       ur-<pid>); prints "export UROCE_LAB=NAME"
  down                 remove the lab (namespaces, nfq process, state)
  list                 list labs with state in $LAB_STATE_ROOT
  info                 print the lab's topology
  exec HOST CMD...     run CMD in namespace HOST (h1, h2, h3, sw)
  rsh ADDR CMD...      run CMD in the host with address ADDR (an rsh agent:
                       uroce-launch --rsh "netns.sh --lab NAME rsh")
  ip HOST              print the test address of HOST (e.g. 10.201.2.2)

Faults (applied in the switch to forwarded UDP dport $LAB_PORT unless --all;
--from HOST restricts to packets entering from HOST; --requests-only spares
RC ACK/NAK packets, BTH opcode 0x11, matched with u32; --acks-only takes
only them):
  loss PCT [--from H] [--all] [--requests-only | --acks-only]
                                drop PCT % (iptables statistic + DROP)
  dup PCT [--from H] [--all]    duplicate PCT % (mangle TEE to destination)
  nfq [--from H] [--all] -- UROCE_NFQ_ARGS...
                                send packets through uroce-nfq (NFQUEUE,
                                fail-open, bypass when not running)
  nfq-stop                      stop uroce-nfq (SIGTERM), print its summary
  mtu N                         set every lab link's MTU to N (e.g. 65000 for
                                uroce's jumbo packets; restore with mtu 1500)
  cut [HOST]                    set HOST's links down (default h2)
  restore [HOST]                set links up again (default all)
  clear                         remove all fault rules, stop uroce-nfq

The lab is found from --lab, then \$UROCE_LAB, then the only lab in
$LAB_STATE_ROOT. UROCE_NFQ names the uroce-nfq binary (default
<repo>/build/bin/uroce-nfq, then PATH).
EOF
}

# --- helpers ---------------------------------------------------------------

lab_state() { echo "$LAB_STATE_ROOT/$UROCE_LAB"; }

lab_ns() { echo "$UROCE_LAB-$1"; }

# lab_hosts: prints h1 h2 [h3] of the current lab.
lab_hosts() {
	local n
	n=$(cat "$(lab_state)/hosts")
	seq -f 'h%g' 1 "$n" | tr '\n' ' '
}

lab_host_index() {
	case "$1" in
	h[1-9]) echo "${1#h}" ;;
	*) lab_die "bad host '$1' (want h1, h2, h3)" ;;
	esac
}

# lab_ip HOST: test address of a host (sw has one per link; print link 1's).
lab_ip() {
	local i
	if [[ $1 == sw ]]; then
		echo "$LAB_SUBNET_PREFIX.1.1"
		return 0
	fi
	i=$(lab_host_index "$1") || return 1
	echo "$LAB_SUBNET_PREFIX.$i.2"
}

lab_check_host() {
	local h=$1
	[[ $h == sw ]] && return 0
	lab_host_index "$h" >/dev/null || return 1
	[[ " $(lab_hosts) " == *" $h "* ]] || lab_die "lab $UROCE_LAB has no host $h"
}

# lab_resolve: set UROCE_LAB from the environment or the only existing lab.
lab_resolve() {
	local labs
	if [[ -n ${UROCE_LAB:-} ]]; then
		[[ -d $(lab_state) ]] || lab_die "no lab '$UROCE_LAB' (state $(lab_state) missing)"
		return
	fi
	labs=$(ls "$LAB_STATE_ROOT" 2>/dev/null || true)
	if [[ -z $labs ]]; then
		lab_die "no lab is up (run: netns.sh up)"
		return 1
	elif [[ $(wc -w <<<"$labs") -ne 1 ]]; then
		lab_die "several labs are up (${labs//$'\n'/ }); use --lab or UROCE_LAB"
		return 1
	fi
	UROCE_LAB=$labs
}

lab_sw() { ip netns exec "$(lab_ns sw)" "$@"; }

lab_nfq_bin() {
	local c
	for c in "${UROCE_NFQ:-}" "$LAB_DIR_SELF/../../build/bin/uroce-nfq"; do
		[[ -n $c && -x $c ]] && { echo "$c"; return 0; }
	done
	command -v uroce-nfq || lab_die "uroce-nfq not found (build it or set UROCE_NFQ)"
}

# --- life cycle --------------------------------------------------------------

lab_up() {
	local mtu=1500 hosts=2 name="" i h ns sw
	while [[ $# -gt 0 ]]; do
		case "$1" in
		--mtu) mtu=$2; shift 2 ;;
		--hosts) hosts=$2; shift 2 ;;
		--name) name=$2; shift 2 ;;
		-h|--help) lab_usage; return 0 ;;
		*) lab_die "up: unknown option '$1'"; return 1 ;;
		esac
	done
	[[ $hosts == 2 || $hosts == 3 ]] || { lab_die "--hosts must be 2 or 3"; return 1; }
	[[ $mtu =~ ^[0-9]+$ && $mtu -ge 576 ]] || { lab_die "bad --mtu '$mtu'"; return 1; }
	[[ $(id -u) -eq 0 ]] || { lab_die "must be root"; return 1; }
	UROCE_LAB=${name:-ur-$$}
	# Interface names must fit IFNAMSIZ; namespace names are free-form.
	[[ $UROCE_LAB =~ ^[A-Za-z0-9_.-]{1,40}$ ]] || { lab_die "bad lab name '$UROCE_LAB'"; return 1; }
	if [[ -e $(lab_state) ]] || ip netns list | grep -q "^$UROCE_LAB-"; then
		lab_die "lab '$UROCE_LAB' already exists"
		return 1
	fi
	mkdir -p "$(lab_state)"
	echo "$hosts" >"$(lab_state)/hosts"
	echo "$mtu" >"$(lab_state)/mtu"

	# Any failure below tears down what was built. The build runs in its
	# own bash so `set -e` holds there (bash ignores it in a function
	# called from an `if`).
	if ! UROCE_LAB=$UROCE_LAB LAB_SUBNET_PREFIX=$LAB_SUBNET_PREFIX \
		bash -euo pipefail -c 'source "$1"; __lab_build "$2" "$3"' \
		_ "$LAB_DIR_SELF/netns.sh" "$hosts" "$mtu"; then
		lab_log "setup failed; cleaning up"
		lab_down
		return 1
	fi
	lab_info >&2
	echo "export UROCE_LAB=$UROCE_LAB"
}

# __lab_build HOSTS MTU: run under `bash -e` by lab_up.
__lab_build() {
	local hosts=$1 mtu=$2 i h ns sw
	sw=$(lab_ns sw)
	ip netns add "$sw"
	ip -n "$sw" link set lo up
	ip netns exec "$sw" sysctl -qw net.ipv4.ip_forward=1
	ip netns exec "$sw" sysctl -qw net.ipv4.conf.all.rp_filter=0
	ip netns exec "$sw" sysctl -qw net.ipv4.conf.default.rp_filter=0
	ip netns exec "$sw" sysctl -qw net.ipv4.conf.all.send_redirects=0
	ip netns exec "$sw" sysctl -qw net.ipv4.conf.default.send_redirects=0
	for i in $(seq 1 "$hosts"); do
		h=h$i
		ns=$(lab_ns "$h")
		ip netns add "$ns"
		ip -n "$ns" link set lo up
		ip netns exec "$ns" sysctl -qw net.ipv4.conf.all.rp_filter=0
		ip netns exec "$ns" sysctl -qw net.ipv4.conf.default.rp_filter=0
		# Created directly inside the namespaces, so names never clash
		# between labs and nothing appears in the caller's namespace.
		ip link add name eth0 netns "$ns" mtu "$mtu" type veth \
			peer name "$h" netns "$sw" mtu "$mtu"
		ip -n "$ns" addr add "$LAB_SUBNET_PREFIX.$i.2/24" dev eth0
		ip -n "$sw" addr add "$LAB_SUBNET_PREFIX.$i.1/24" dev "$h"
		ip -n "$ns" link set eth0 up
		ip -n "$sw" link set "$h" up
		ip -n "$ns" route add default via "$LAB_SUBNET_PREFIX.$i.1"
		# Host verifies UDP checksums in software. (NFQUEUE-mangled
		# packets are CHECKSUM_NONE anyway; this keeps it so for any
		# other path, e.g. TEE clones.)
		ip netns exec "$ns" ethtool -K eth0 rx off >/dev/null 2>&1 || true
	done
	# Our own chains, so `clear` only touches lab rules.
	ip netns exec "$sw" iptables -N "$LAB_CHAIN"
	ip netns exec "$sw" iptables -A FORWARD -j "$LAB_CHAIN"
	ip netns exec "$sw" iptables -t mangle -N "$LAB_CHAIN"
	ip netns exec "$sw" iptables -t mangle -A PREROUTING -j "$LAB_CHAIN"
}

lab_info() {
	local h i
	echo "lab $UROCE_LAB: switch namespace $(lab_ns sw), mtu $(cat "$(lab_state)/mtu")"
	for h in $(lab_hosts); do
		i=${h#h}
		echo "  $(lab_ns "$h"): eth0 $LAB_SUBNET_PREFIX.$i.2/24 gw $LAB_SUBNET_PREFIX.$i.1" \
			"<-> $(lab_ns sw):$h $LAB_SUBNET_PREFIX.$i.1/24"
	done
}

# lab_down: remove the lab. Safe to call repeatedly and from an EXIT trap.
lab_down() {
	local ns
	[[ -n ${UROCE_LAB:-} ]] || return 0
	lab_nfq_stop >/dev/null 2>&1 || true
	for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$UROCE_LAB-\(sw\|h[0-9]\)$" || true); do
		ip netns del "$ns" 2>/dev/null || true
	done
	rm -rf "${LAB_STATE_ROOT:?}/$UROCE_LAB"
	lab_log "removed"
}

lab_list() {
	ls "$LAB_STATE_ROOT" 2>/dev/null || true
}

lab_exec() {
	local h=$1
	shift
	lab_check_host "$h" || return 1
	ip netns exec "$(lab_ns "$h")" "$@"
}

# lab_rsh ADDR CMD...: run CMD in the host whose address is ADDR, as ssh
# would on a machine: the words joined and run by sh. uroce-launch --rsh
# "netns.sh --lab L rsh" --hosts ADDR1,ADDR2 starts its remote ranks this
# way, and mpirun --mca plm_rsh_agent its daemons.
lab_rsh() {
	local a=$1 h
	shift
	for h in $(lab_hosts); do
		if [[ $(lab_ip "$h") == "$a" ]]; then
			exec ip netns exec "$(lab_ns "$h")" sh -c "$*"
		fi
	done
	lab_die "lab $UROCE_LAB has no host at $a"
}

# --- faults ------------------------------------------------------------------

# __lab_match: parse --from/--all into iptables match arguments (array LAB_M);
# leaves the other arguments in LAB_REST.
__lab_match() {
	local from="" all=0 req=0 ack=0
	LAB_REST=()
	while [[ $# -gt 0 ]]; do
		case "$1" in
		--from) from=$2; shift 2 ;;
		--all) all=1; shift ;;
		--requests-only) req=1; shift ;;
		--acks-only) ack=1; shift ;;
		--) LAB_REST+=("$@"); break ;;
		*) LAB_REST+=("$1"); shift ;;
		esac
	done
	LAB_M=()
	if [[ -n $from ]]; then
		lab_check_host "$from" || return 1
		LAB_M+=(-i "$from")
	fi
	[[ $all -eq 1 ]] || LAB_M+=(-p udp --dport "$LAB_PORT")
	# The first BTH byte (the opcode) is the first byte after the 8-byte
	# UDP header: skip the IP header (IHL x 4), then read at offset 8.
	[[ $all -eq 0 || $req -eq 0 && $ack -eq 0 ]] || LAB_M+=(-p udp)
	[[ $req -eq 0 ]] || LAB_M+=(-m u32 ! --u32 "0>>22&0x3C@8>>24=0x11")
	[[ $ack -eq 0 ]] || LAB_M+=(-m u32 --u32 "0>>22&0x3C@8>>24=0x11")
}

__lab_prob() {
	local pct=$1
	[[ $pct =~ ^[0-9]+(\.[0-9]+)?$ ]] || { lab_die "bad percentage '$pct'"; return 1; }
	awk -v p="$pct" 'BEGIN { if (p > 100) exit 1; printf "%.6f\n", p / 100 }' ||
		{ lab_die "percentage over 100"; return 1; }
}

lab_loss() {
	local p
	__lab_match "$@" || return 1
	[[ ${#LAB_REST[@]} -eq 1 ]] || { lab_die "usage: loss PCT [--from H] [--all] [--requests-only | --acks-only]"; return 1; }
	p=$(__lab_prob "${LAB_REST[0]}") || return 1
	lab_sw iptables -A "$LAB_CHAIN" "${LAB_M[@]}" \
		-m statistic --mode random --probability "$p" -j DROP || return 1
	lab_log "loss ${LAB_REST[0]}% on forwarded ${LAB_M[*]:-all}"
}

# TEE clones the packet in mangle PREROUTING and routes the clone to the
# destination host as gateway; the original is forwarded normally, so the
# destination sees the packet twice. One rule per destination host.
lab_dup() {
	local p h i
	__lab_match "$@" || return 1
	[[ ${#LAB_REST[@]} -eq 1 ]] || { lab_die "usage: dup PCT [--from H] [--all]"; return 1; }
	p=$(__lab_prob "${LAB_REST[0]}") || return 1
	for h in $(lab_hosts); do
		i=${h#h}
		lab_sw iptables -t mangle -A "$LAB_CHAIN" "${LAB_M[@]}" \
			-d "$LAB_SUBNET_PREFIX.$i.2" \
			-m statistic --mode random --probability "$p" \
			-j TEE --gateway "$LAB_SUBNET_PREFIX.$i.2"
	done
	lab_log "dup ${LAB_REST[0]}% on forwarded ${LAB_M[*]:-all} (TEE)"
}

lab_nfq() {
	local bin q=0 st pid i a
	__lab_match "$@" || return 1
	bin=$(lab_nfq_bin) || return 1
	st=$(lab_state)
	if [[ -f $st/nfq.pid ]] && kill -0 "$(cat "$st/nfq.pid")" 2>/dev/null; then
		lab_die "uroce-nfq already running (nfq-stop first)"
		return 1
	fi
	# Pick up --queue N so the rule and the program agree.
	for ((i = 0; i < ${#LAB_REST[@]}; i++)); do
		a=${LAB_REST[$i]}
		case "$a" in
		--queue) q=${LAB_REST[$((i + 1))]} ;;
		--queue=*) q=${a#--queue=} ;;
		esac
	done
	[[ ${LAB_REST[0]:-} == -- ]] && LAB_REST=("${LAB_REST[@]:1}")
	# A plain command (not a function) so $! is uroce-nfq itself:
	# ip netns exec execs the program after entering the namespace.
	ip netns exec "$(lab_ns sw)" "$bin" --queue "$q" "${LAB_REST[@]}" \
		</dev/null >"$st/nfq.log" 2>&1 &
	pid=$!
	echo "$pid" >"$st/nfq.pid"
	# Wait until the queue is bound before steering packets to it.
	for i in $(seq 1 100); do
		grep -q "^uroce-nfq: ready" "$st/nfq.log" 2>/dev/null && break
		if ! kill -0 "$pid" 2>/dev/null; then
			cat "$st/nfq.log" >&2
			rm -f "$st/nfq.pid"
			lab_die "uroce-nfq exited"
			return 1
		fi
		sleep 0.05
	done
	lab_sw iptables -A "$LAB_CHAIN" "${LAB_M[@]}" \
		-j NFQUEUE --queue-num "$q" --queue-bypass
	lab_log "nfq queue $q on forwarded ${LAB_M[*]:-all}: $bin ${LAB_REST[*]} (pid $pid, log $st/nfq.log)"
}

# lab_nfq_stop: remove NFQUEUE rules, SIGTERM uroce-nfq, print its output.
lab_nfq_stop() {
	local st pid i
	st=$(lab_state)
	[[ -f $st/nfq.pid ]] || return 0
	pid=$(cat "$st/nfq.pid")
	# Drop the steering rules first so no packet is queued to a dying process
	# (--queue-bypass would accept them anyway).
	lab_sw iptables -S "$LAB_CHAIN" 2>/dev/null | grep -- '-j NFQUEUE' |
		sed 's/^-A /-D /' | while read -r rule; do
			eval "lab_sw iptables $rule"
		done
	kill -TERM "$pid" 2>/dev/null || true
	for i in $(seq 1 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	rm -f "$st/nfq.pid"
	cat "$st/nfq.log"
}

lab_cut() {
	local h=${1:-h2}
	lab_check_host "$h" || return 1
	ip -n "$(lab_ns sw)" link set "$h" down
	ip -n "$(lab_ns "$h")" link set eth0 down
	lab_log "link $h cut"
}

lab_restore() {
	local h hs
	hs=${1:-$(lab_hosts)}
	for h in $hs; do
		lab_check_host "$h" || return 1
		ip -n "$(lab_ns "$h")" link set eth0 up
		ip -n "$(lab_ns sw)" link set "$h" up
		# Link-down flushed the default route; put it back.
		ip -n "$(lab_ns "$h")" route replace default via "$LAB_SUBNET_PREFIX.${h#h}.1"
	done
	lab_log "links up: $hs"
}

lab_mtu() {
	local n=${1:-} h
	[[ $n =~ ^[0-9]+$ && $n -ge 576 && $n -le 65535 ]] || { lab_die "usage: mtu N (576..65535)"; return 1; }
	for h in $(lab_hosts); do
		ip -n "$(lab_ns "$h")" link set eth0 mtu "$n"
		ip -n "$(lab_ns sw)" link set "$h" mtu "$n"
	done
	echo "$n" >"$(lab_state)/mtu"
	lab_log "mtu $n on every link"
}

lab_clear() {
	lab_nfq_stop >/dev/null || true
	lab_sw iptables -F "$LAB_CHAIN"
	lab_sw iptables -t mangle -F "$LAB_CHAIN"
	lab_log "fault rules cleared"
}

# --- CLI -----------------------------------------------------------------------

lab_main() {
	local cmd
	if [[ ${1:-} == --lab ]]; then
		UROCE_LAB=$2
		shift 2
	fi
	cmd=${1:-}
	[[ -n $cmd ]] || { lab_usage >&2; return 2; }
	shift
	case "$cmd" in
	-h|--help|help) lab_usage; return 0 ;;
	up) lab_up "$@"; return ;;
	list) lab_list; return ;;
	down)
		# A named lab is removed even if its state dir is gone.
		[[ -n ${UROCE_LAB:-} ]] || lab_resolve || return 1
		lab_down
		return
		;;
	esac
	lab_resolve || return 1
	case "$cmd" in
	info) lab_info ;;
	exec) [[ $# -ge 2 ]] || { lab_die "usage: exec HOST CMD..."; return 2; }; lab_exec "$@" ;;
	rsh) [[ $# -ge 2 ]] || { lab_die "usage: rsh ADDR CMD..."; return 2; }; lab_rsh "$@" ;;
	ip) lab_ip "${1:?usage: ip HOST}" ;;
	loss) lab_loss "$@" ;;
	dup) lab_dup "$@" ;;
	nfq) lab_nfq "$@" ;;
	nfq-stop) lab_nfq_stop ;;
	mtu) lab_mtu "$@" ;;
	cut) lab_cut "$@" ;;
	restore) lab_restore "$@" ;;
	clear) lab_clear ;;
	*) echo "netns.sh: unknown command '$cmd'" >&2; lab_usage >&2; return 2 ;;
	esac
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	set -euo pipefail
	lab_main "$@"
fi
