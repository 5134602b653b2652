#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# liburoce_coll vs Open MPI (TCP BTL) across a network: NP (2 or 3) hosts
# of the namespace lab (tests/lab/netns.sh, veths through a forwarding
# switch), one rank per host, both launched from h1 through the lab's rsh agent
# (uroce-launch --hosts --rsh, mpirun --mca plm_rsh_agent). Allreduce and
# alltoall, SIZES (4 KiB .. 16 MiB, x4), REPS runs alternating; per size
# the median over runs of rank 0's per-call median (-C).
#   bench/coll_lab.sh [ITERS]     env REPS (3), MTU (1500; 9000 for jumbo
#                                 frames: uroce then sends 8 KiB packets),
#                                 NP (3), SIZES ("-b 4K -e 16M -f 4")
# Prints a markdown table. Open MPI gets mpi_yield_when_idle=1: each
# namespace is its own node to it, so it does not see that its three
# ranks share two cores, and without yielding a 4 KiB allreduce took
# 11 ms. uroce's ranks are not bound either (remote ranks never are).
# uroce runs with --no-shm: the lab's hosts are namespaces of one machine,
# so without it the collectives library finds its peers on this host and
# moves everything through shared segments (algo "shared_segment", no
# packets), which is not the network path this bench is about. And uroce
# gets UROCE_COLL_SPIN_US=30 (the spin it picks itself when its local
# ranks outnumber the CPUs) for the reason Open MPI gets its yield: with
# the default 1 ms spin a waiting rank holds a CPU that the rank it waits
# for, in another "host" and another session (its sched_yield does not
# hand the CPU across sessions: coll9), needed; 2 ranks at load 15,
# 64 KiB allreduce 1201 against 225 us a call with a 50 us spin, 256 KiB
# all-to-all 2251 against 343. Which short spin is best swings with the
# load (bench/results/2026-12-07-coll10.md).
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
B=$(cd "$HERE/../build/bin" && pwd)
ITERS=${1:-10}
REPS=${REPS:-3}
MTU=${MTU:-1500}
NP=${NP:-3}
[[ $NP == 2 || $NP == 3 ]] || { echo "coll_lab.sh: NP must be 2 or 3 (one rank per lab host)"; exit 2; }
[[ $(id -u) -eq 0 ]] || { echo "coll_lab.sh: needs root (network namespaces)"; exit 77; }
command -v mpirun >/dev/null || { echo "coll_lab.sh: apt-get install openmpi-bin libopenmpi-dev"; exit 1; }
for t in uroce-launch uroce-coll-perf ../bench/coll-mpi-perf; do
	[[ -x $B/$t ]] || { echo "coll_lab.sh: build $B/$t first"; exit 1; }
done
source "$HERE/../tests/lab/netns.sh"
lab_up --hosts "$NP" --mtu "$MTU" >/dev/null 2>&1 || { echo "coll_lab.sh: lab_up failed"; exit 1; }
WORK=$(mktemp -d)
trap 'lab_down >/dev/null 2>&1; rm -rf "$WORK"' EXIT
RSH="$HERE/../tests/lab/netns.sh --lab $UROCE_LAB rsh"
HOSTS=$(lab_ip h1),$(lab_ip h2)
[[ $NP == 3 ]] && HOSTS+=,$(lab_ip h3)
sizes=${SIZES:--b 4K -e 16M -f 4}

# calls < -C output: "SIZE MEDIAN_US" per size, the median of rank 0's
# timed calls (a mean over a few calls carries whichever preemption fell
# into it on this shared machine).
calls() {
	python3 -c '
import re, statistics, sys
for l in sys.stdin:
    m = re.match(r"# calls of (\d+) B \(us, rank 0; (\d+) warm-up, then \d+ timed\):(.*)", l)
    if m:
        t = [float(x) for x in m.group(3).split()][int(m.group(2)):]
        print(m.group(1), "%.2f" % statistics.median(t))
'
}

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
			--mca plm_rsh_agent "$RSH" --host "$HOSTS" -np "$NP" --mca routed direct \
			--mca btl tcp,self --mca pml ob1 --mca btl_tcp_if_include eth0 \
			--mca oob_tcp_if_include eth0 --mca mpi_yield_when_idle 1 \
			"$B/../bench/coll-mpi-perf" $sizes -n "$ITERS" -w 3 -C -o "$1" >"$WORK/mpi.log" 2>&1
		grep -q '^ *[0-9]' "$WORK/mpi.log" && break
		echo "coll_lab.sh: mpirun failed (try $try):" >&2
		tail -n 5 "$WORK/mpi.log" >&2
	done
	calls <"$WORK/mpi.log"
}

loads=
for op in allreduce alltoall; do
	: >"$WORK/u-$op"
	: >"$WORK/m-$op"
	for rep in $(seq "$REPS"); do
		echo "== $op run $rep/$REPS" >&2
		loads+=" $(cut -d' ' -f1 /proc/loadavg)"
		lab_exec h1 env UROCE_COLL_SPIN_US="${UROCE_COLL_SPIN_US:-30}" timeout 600 "$B/uroce-launch" -n "$NP" --hosts "$HOSTS" --rsh "$RSH" --no-prefix --no-shm \
			"$B/uroce-coll-perf" $sizes -n "$ITERS" -w 3 -C -o $op |
			calls >>"$WORK/u-$op"
		mpi $op >>"$WORK/m-$op"
	done
done

echo "# Collectives across the namespace lab ($(date +%F))"
echo
pre=
[[ $MTU != 1500 ]] && pre="MTU=$MTU "
[[ $NP != 3 ]] && pre+="NP=$NP "
[[ $sizes != "-b 4K -e 16M -f 4" ]] && pre+="SIZES=\"$sizes\" "
echo "\`${pre}bench/coll_lab.sh $ITERS\` at $(git -C "$HERE/.." rev-parse --short HEAD), MTU $MTU, $(nproc) cores ($(uname -r)),"
echo "$(mpirun --version | head -1). $NP ranks, one per lab host; $REPS runs each, uroce and"
echo "MPI alternating; per size the median over runs of rank 0's median call"
echo "time (us) over $ITERS calls after 3 warm-up calls; float32 sum, out of place."
echo "uroce: uroce-launch --no-shm (RoCEv2 over the veths), UROCE_COLL_SPIN_US=${UROCE_COLL_SPIN_US:-30};"
echo "Open MPI: --mca btl tcp,self --mca pml ob1, mpi_yield_when_idle 1."
echo "1-minute load at each uroce run (allreduce's, then alltoall's):$loads."
for op in allreduce alltoall; do
	echo
	echo "## $op, $NP ranks"
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
