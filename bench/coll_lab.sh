#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# liburoce_coll vs Open MPI (TCP BTL) across a network: three hosts of the
# namespace lab (tests/lab/netns.sh, veths through a forwarding switch),
# one rank per host, both launched from h1 through the lab's rsh agent
# (uroce-launch --hosts --rsh, mpirun --mca plm_rsh_agent). Allreduce and
# alltoall, 4 KiB .. 16 MiB (x4), REPS runs alternating, median per size.
#   bench/coll_lab.sh [ITERS]     env REPS (3), MTU (1500; 9000 for jumbo
#                                 frames: uroce then sends 8 KiB packets)
# Prints a markdown table. Open MPI gets mpi_yield_when_idle=1: each
# namespace is its own node to it, so it does not see that its three
# ranks share two cores, and without yielding a 4 KiB allreduce took
# 11 ms. uroce's ranks are not bound either (remote ranks never are).
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
B=$(cd "$HERE/../build/bin" && pwd)
ITERS=${1:-10}
REPS=${REPS:-3}
MTU=${MTU:-1500}
[[ $(id -u) -eq 0 ]] || { echo "coll_lab.sh: needs root (network namespaces)"; exit 77; }
command -v mpirun >/dev/null || { echo "coll_lab.sh: apt-get install openmpi-bin libopenmpi-dev"; exit 1; }
for t in uroce-launch uroce-coll-perf ../bench/coll-mpi-perf; do
	[[ -x $B/$t ]] || { echo "coll_lab.sh: build $B/$t first"; exit 1; }
done
source "$HERE/../tests/lab/netns.sh"
lab_up --hosts 3 --mtu "$MTU" >/dev/null 2>&1 || { echo "coll_lab.sh: lab_up failed"; exit 1; }
WORK=$(mktemp -d)
trap 'lab_down >/dev/null 2>&1; rm -rf "$WORK"' EXIT
RSH="$HERE/../tests/lab/netns.sh --lab $UROCE_LAB rsh"
HOSTS=$(lab_ip h1),$(lab_ip h2),$(lab_ip h3)
sizes="-b 4K -e 16M -f 4"

# median FILE: per size (column 1), the median of column 2
median() {
	sort -k1,1n -k2,2g "$1" | awk '
		function out() { if (n) print s, v[int((n + 1) / 2)] }
		$1 != s { out(); s = $1; n = 0 }
		{ v[++n] = $2 }
		END { out() }'
}

# mpi OP: one Open MPI run; its first launch in a new lab sometimes fails
# ("ORTE does not know how to route a message"), so a failed run is retried.
mpi() {
	local try
	for try in 1 2 3; do
		lab_exec h1 timeout 600 mpirun --allow-run-as-root --oversubscribe --bind-to none \
			--mca plm_rsh_agent "$RSH" --host "$HOSTS" -np 3 --mca routed direct \
			--mca btl tcp,self --mca pml ob1 --mca btl_tcp_if_include eth0 \
			--mca oob_tcp_if_include eth0 --mca mpi_yield_when_idle 1 \
			"$B/../bench/coll-mpi-perf" $sizes -n "$ITERS" -w 3 -o "$1" >"$WORK/mpi.log" 2>&1
		grep -q '^ *[0-9]' "$WORK/mpi.log" && break
		echo "coll_lab.sh: mpirun failed (try $try):" >&2
		tail -n 5 "$WORK/mpi.log" >&2
	done
	awk '!/^#/ && NF >= 5 {print $1, $3}' "$WORK/mpi.log"
}

for op in allreduce alltoall; do
	: >"$WORK/u-$op"
	: >"$WORK/m-$op"
	for rep in $(seq "$REPS"); do
		echo "== $op run $rep/$REPS" >&2
		lab_exec h1 timeout 600 "$B/uroce-launch" -n 3 --hosts "$HOSTS" --rsh "$RSH" --no-prefix \
			"$B/uroce-coll-perf" $sizes -n "$ITERS" -w 3 -o $op |
			awk '!/^#/ && NF >= 9 {print $1, $6}' >>"$WORK/u-$op"
		mpi $op >>"$WORK/m-$op"
	done
done

echo "# Collectives across the namespace lab ($(date +%F))"
echo
pre=
[[ $MTU != 1500 ]] && pre="MTU=$MTU "
echo "\`${pre}bench/coll_lab.sh $ITERS\` at $(git -C "$HERE/.." rev-parse --short HEAD), MTU $MTU, $(nproc) cores ($(uname -r)),"
echo "$(mpirun --version | head -1). 3 ranks, one per lab host; $REPS runs each, uroce and"
echo "MPI alternating; median time per call (us) of the runs' averages over $ITERS"
echo "iterations after 3 warm-up calls; float32 sum, out of place."
for op in allreduce alltoall; do
	echo
	echo "## $op, 3 ranks"
	echo
	echo "| size (B) | uroce (us) | Open MPI (us) | MPI time / uroce time |"
	echo "|---:|---:|---:|---:|"
	median "$WORK/m-$op" >"$WORK/m.med"
	median "$WORK/u-$op" | awk -v m="$WORK/m.med" '
		BEGIN { while ((getline l < m) > 0) { split(l, f, " "); t[f[1]] = f[2] } }
		{ mt = ($1 in t) ? t[$1] : 0
		  a = mt ? sprintf("%.1f", mt) : "-"
		  r = (mt && $2 > 0) ? sprintf("%.2f", mt / $2) : "-"
		  printf "| %s | %.1f | %s | %s |\n", $1, $2, a, r }'
done
