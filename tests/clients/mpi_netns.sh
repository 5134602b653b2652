#!/bin/sh
# SPDX-License-Identifier: MIT
# Open MPI 4.1 (Debian's unmodified mpirun) with its ranks in two network
# namespaces, as on two machines.
#
#   mpi_netns.sh BINDIR TESTDIR ucx|ofi
#
# Makes two named network namespaces (uroce-mpi-PID-a and -b, removed at
# exit) joined by a veth pair: 10.97.1.1 and 10.97.1.2 in a, 10.97.2.1 and
# 10.97.2.2 in b (/16). mpirun starts in a with --host 10.97.1.1:2,
# 10.97.2.1:2; its daemon in b is started by this script as the rsh agent
# (--mca plm_rsh_agent), which runs the command in b with ip netns exec.
# Each rank runs mpi_check under uroce-run with UROCE_IP = the address of
# its namespace numbered by its local rank, through
#   ucx: --mca pml ucx -x UCX_TLS=rc_verbs,ud_verbs,self
#   ofi: --mca pml cm --mca mtl ofi -x FI_PROVIDER='verbs;ofi_rxm'
# Checks mpi_check's PASS line, that the ranks' uroce devices
# (UROCE_STATS=1) sent at least what the collectives must move between
# processes, and that the veth pair carried at least the half of it that
# must cross between the namespaces (ranks 0,1 in a, 2,3 in b). Needs root
# and ip netns (77 otherwise).
self=$0
case ${1:-} in
rsh) # rsh agent: [OPTIONS] HOST CMD..., HOST one of UROCE_MPI_NETNS_MAP's
	shift
	while [ "${1#-}" != "$1" ]; do shift; done
	host=$1
	shift
	ns=$(echo "$UROCE_MPI_NETNS_MAP" | tr ' ' '\n' | sed -n "s/^$host=//p")
	[ -n "$ns" ] || { echo "mpi_netns.sh rsh: no namespace for $host" >&2; exit 1; }
	exec ip netns exec "$ns" sh -c "$*" ;;
rank) # rank BINDIR PROGRAM...: the rank's own address of its namespace
	shift
	b=$1
	shift
	ip=$(ip -o -4 addr show | awk '$4 ~ /^10\.97\./ {sub(/\/.*/, "", $4); print $4}' |
		sed -n "$((${OMPI_COMM_WORLD_LOCAL_RANK:-0} + 1))p")
	[ -n "$ip" ] || { echo "mpi_netns.sh rank: no address" >&2; exit 1; }
	UROCE_IP=$ip exec "$b/uroce-run" "$@" ;;
esac

command -v mpirun >/dev/null 2>&1 ||
	{ echo "SKIP: mpirun not installed (scripts/deps.sh)"; exit 77; }
[ -x "${2:-}/mpi_check" ] ||
	{ echo "SKIP: mpi_check not built (no MPI at configure time)"; exit 77; }
[ "$(id -u)" = 0 ] && ip netns list >/dev/null 2>&1 ||
	{ echo "SKIP: needs root and ip netns"; exit 77; }
. "$(dirname "$0")/lib.sh"
tests=$2 mode=$3
a=uroce-mpi-$$-a b=uroce-mpi-$$-b
cleanup() {
	ip netns del "$a" 2>/dev/null
	ip netns del "$b" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
ip netns add "$a" && ip netns add "$b" || { echo "SKIP: ip netns add failed"; exit 77; }
ip -n "$a" link add vm0 type veth peer name vm1 netns "$b" &&
ip -n "$a" addr add 10.97.1.1/16 dev vm0 && ip -n "$a" addr add 10.97.1.2/16 dev vm0 &&
ip -n "$b" addr add 10.97.2.1/16 dev vm1 && ip -n "$b" addr add 10.97.2.2/16 dev vm1 &&
ip -n "$a" link set lo up && ip -n "$b" link set lo up &&
ip -n "$a" link set vm0 up && ip -n "$b" link set vm1 up || { bad "veth between $a and $b"; finish; }

case $mode in
ucx) set -- --mca pml ucx -x UCX_TLS=rc_verbs,ud_verbs,self -x UCX_NET_DEVICES=uroce0:1 ;;
ofi) set -- --mca pml cm --mca mtl ofi -x 'FI_PROVIDER=verbs;ofi_rxm' ;;
*) echo "usage: $0 BINDIR TESTDIR ucx|ofi"; exit 2 ;;
esac
np=4
vbytes() { ip -n "$a" -s -j link show vm0 | sed 's/.*"tx":{"bytes":\([0-9]*\).*/\1/'; }
v0=$(vbytes)
# Under ASan Open MPI's own unfreed allocations are not ours.
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} UROCE_MPI_NETNS_MAP="10.97.2.1=$b" \
	ip netns exec "$a" timeout 240 mpirun --allow-run-as-root --oversubscribe \
	-np $np --host 10.97.1.1:2,10.97.2.1:2 --mca plm_rsh_agent "sh $self rsh" \
	--mca oob_tcp_if_include vm0,vm1 "$@" -x UROCE_STATS=1 -x ASAN_OPTIONS \
	sh "$self" rank "$bin" "$tests/mpi_check" >"$tmp/out" 2>&1
rc=$?
v1=$(vbytes)
# And between the namespaces: allreduce at least one vector each way,
# alltoall the blocks of 2 ranks x 2 ranks from a to b.
cross=$(( (1 + 1000 + 262144) * 8 + 4 * (1 + 1000 + 32768) * 8 ))
veth=$((v1 - v0))
name="mpirun -np $np $mode, 2 ranks in each of 2 namespaces"
if mpi_verdict "$name" $np $rc "$tmp/out"; then
	if [ "$veth" -lt "$cross" ]; then
		bad "$name: the veth from $a carried $veth bytes, at least $cross must cross"
	else
		ok "$name: $(grep '^mpi_check:' "$tmp/out" | sed 's/^mpi_check: //'); uroce sent $tx bytes (at least $want), veth a->b $veth (at least $cross)"
	fi
fi
finish
