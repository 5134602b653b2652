#!/bin/sh
# SPDX-License-Identifier: MIT
# Open MPI 4.1 (Debian's unmodified mpirun) with each rank on uroce.
#
#   mpi.sh BINDIR TESTDIR ucx|ofi
#
# Runs TESTDIR/mpi_check (MPI_Allreduce and MPI_Alltoall at three sizes,
# every element checked on every rank) on 2 and 4 ranks, each rank under
# uroce-run with its own UROCE_IP, through
#   ucx: --mca pml ucx -x UCX_TLS=rc_verbs,ud_verbs,self
#        -x UCX_NET_DEVICES=uroce0:1 (ranks on 127.0.0.10..13)
#   ofi: --mca pml cm --mca mtl ofi -x FI_PROVIDER='verbs;ofi_rxm'
#        (ranks on 10.99.0.1..4 of a veth pair: libfabric's verbs MSG
#        endpoints need a non-loopback interface)
# in a network namespace of its own (needs root or user namespaces; 77
# otherwise). Checks mpi_check's PASS line and that the ranks' uroce
# devices (UROCE_STATS=1) sent at least what the collectives must move
# between processes, so no other transport (shared memory, TCP) did it.
# The btl openib of Debian's Open MPI cannot use any RoCE device (built
# without rdmacm; docs/verbs.md): it is not tested.
if [ "${UROCE_MPI_NS:-}" != 1 ]; then
	command -v mpirun >/dev/null 2>&1 ||
		{ echo "SKIP: mpirun not installed (scripts/deps.sh)"; exit 77; }
	[ -x "${2:-}/mpi_check" ] ||
		{ echo "SKIP: mpi_check not built (no MPI at configure time)"; exit 77; }
	unshare -n true 2>/dev/null || { echo "SKIP: cannot unshare a network namespace"; exit 77; }
	exec env UROCE_MPI_NS=1 unshare -n sh "$0" "$@"
fi
. "$(dirname "$0")/lib.sh"
tests=$2 mode=$3
ip link set lo up || exit 1
if [ "$mode" = ofi ]; then
	ip link add v0 type veth peer name v1 &&
	ip addr add 10.99.0.1/24 dev v0 && ip addr add 10.99.0.3/24 dev v0 &&
	ip addr add 10.99.0.2/24 dev v1 && ip addr add 10.99.0.4/24 dev v1 &&
	ip link set v0 up && ip link set v1 up || { echo "SKIP: no veth"; exit 77; }
fi

run() { # NP
	np=$1
	case $mode in
	ucx)
		set -- --mca pml ucx -x UCX_TLS=rc_verbs,ud_verbs,self \
			-x UCX_NET_DEVICES=uroce0:1
		ip='127.0.0.$((10 + OMPI_COMM_WORLD_RANK))' ;;
	ofi)
		set -- --mca pml cm --mca mtl ofi -x 'FI_PROVIDER=verbs;ofi_rxm'
		ip='10.99.0.$((1 + OMPI_COMM_WORLD_RANK))' ;;
	esac
	# Under ASan Open MPI's own unfreed allocations are not ours.
	ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} timeout 180 mpirun \
		--allow-run-as-root --oversubscribe -np "$np" "$@" \
		-x UROCE_STATS=1 -x ASAN_OPTIONS \
		sh -c "UROCE_IP=$ip"' exec "$0" "$@"' "$bin/uroce-run" \
		"$tests/mpi_check" >"$tmp/out" 2>&1
	rc=$?
	name="mpirun -np $np $mode"
	mpi_verdict "$name" "$np" $rc "$tmp/out" &&
		ok "$name: $(grep '^mpi_check:' "$tmp/out" | sed 's/^mpi_check: //'); uroce sent $tx bytes (at least $want needed)"
}
run 2
run 4
finish
