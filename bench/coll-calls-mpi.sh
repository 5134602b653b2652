#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Per-call medians of one collective: uroce (shared memory, uroce-launch's
# default, or RoCEv2 over UDP with LAUNCH=--no-shm) against Open MPI (vader
# BTL, or TCP with MCA), and optionally a second uroce build, in the same
# run: RUNS alternating runs of each, every size's median call time over
# ITERS timed calls after WARMUP (rank 0's clock, uroce-coll-perf -C /
# coll-mpi-perf -C), then per side the median over runs of those medians
# as busbw (nccl-tests factors), uroce/MPI, and the 1-minute load average
# at the start of each uroce run. On a loaded machine the mean of a few
# calls (bench/coll.sh) carries whichever
# preemption fell into it; the per-call median shows the call itself.
#   bench/coll-calls-mpi.sh OP NP RUNS [SIZES...]
#   e.g. bench/coll-calls-mpi.sh alltoall 2 5 -b 64K -e 64M -f 4
# Env: ITERS (100), WARMUP (20), BUILD (build), BUILD_B (a second uroce
# build, e.g. main's, shown as uroce_b), MCA (default "--mca btl vader,self
# --mca pml ob1"), LAUNCH (more uroce-launch options for both uroce sides,
# e.g. --no-shm: RoCEv2 over UDP, the path that crosses hosts). The MPI
# side is named after its BTL: vader, or tcp when MCA names tcp, e.g.
#   LAUNCH=--no-shm MCA="--mca btl tcp,self --mca pml ob1" \
#     bench/coll-calls-mpi.sh allreduce 2 5 -b 64K -e 16M -f 4
# Needs mpirun and build/bench/coll-mpi-perf.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OP=$1 NP=$2 RUNS=$3
shift 3
[ $# -gt 0 ] || set -- -b 64K -e 64M -f 4
B=${BUILD:-build}
# shellcheck disable=SC2206
MCA=(${MCA:---mca btl vader,self --mca pml ob1})
# shellcheck disable=SC2206
LAUNCH=(${LAUNCH:-})
MPI=vader
[[ " ${MCA[*]} " == *tcp* ]] && MPI=tcp
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
# calls WHO RUN LOAD < -C output: "WHO RUN SIZE MEDIAN_US LOAD" per size.
calls() {
	python3 -c '
import re, statistics, sys
who, run, load = sys.argv[1:4]
for l in sys.stdin:
    m = re.match(r"# calls of (\d+) B \(us, rank 0; (\d+) warm-up, then \d+ timed\):(.*)", l)
    if m:
        t = [float(x) for x in m.group(3).split()][int(m.group(2)):]
        print(who, run, m.group(1), "%.2f" % statistics.median(t), load)
' "$@"
}
load() { cut -d' ' -f1 /proc/loadavg; }
for run in $(seq "$RUNS"); do
	sides="uroce ${BUILD_B:+uroce_b} mpi"
	for side in $sides; do
		l=$(load)
		case $side in
		uroce) timeout 900 "$B/bin/uroce-launch" -n "$NP" --no-prefix "${LAUNCH[@]}" "$B/bin/uroce-coll-perf" "$@" \
			-n "${ITERS:-100}" -w "${WARMUP:-20}" -C -o "$OP" ;;
		uroce_b) timeout 900 "$BUILD_B/bin/uroce-launch" -n "$NP" --no-prefix "${LAUNCH[@]}" "$BUILD_B/bin/uroce-coll-perf" "$@" \
			-n "${ITERS:-100}" -w "${WARMUP:-20}" -C -o "$OP" ;;
		mpi) timeout 900 mpirun --allow-run-as-root --oversubscribe "${MCA[@]}" \
			--bind-to core:overload-allowed --map-by core -np "$NP" "$B/bench/coll-mpi-perf" "$@" \
			-n "${ITERS:-100}" -w "${WARMUP:-20}" -C -o "$OP" 2>/dev/null ;;
		esac | calls "${side/mpi/$MPI}" "$run" "$l" >>"$tmp"
	done
done
echo "# $OP, $NP ranks, $RUNS runs, $* -n ${ITERS:-100} -w ${WARMUP:-20}; $B${BUILD_B:+, uroce_b: $BUILD_B}${LAUNCH[*]:+; uroce-launch ${LAUNCH[*]}}; mpi: ${MCA[*]}; $(date -u +%FT%TZ)"
python3 - "$tmp" "$OP" "$NP" "$MPI" <<'PY'
import collections, statistics, sys
path, op, n, mpi = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
f = 2 * (n - 1) / n if op == "allreduce" else (n - 1) / n
t, loads = collections.defaultdict(list), collections.defaultdict(list)
for line in open(path):
    who, run, size, us, load = line.split()
    t[who, int(size)].append(float(us))
    if who == "uroce":
        loads[int(size)].append(load)
whos = [w for w in ("uroce", "uroce_b", mpi) if any(k[0] == w for k in t)]
print("| size (B) | " + " | ".join(w + " busbw" for w in whos) + " | uroce/%s | load (uroce runs) |" % mpi)
print("|---:|" + "---:|" * len(whos) + "---:|---|")
for s in sorted({k[1] for k in t}):
    bw = {w: s / statistics.median(t[w, s]) / 1e3 * f for w in whos if t.get((w, s))}
    r = bw.get("uroce", 0) / bw[mpi] if bw.get(mpi) else float("nan")
    print("| %d | " % s + " | ".join("%.3f" % bw.get(w, float("nan")) for w in whos)
          + " | %.2f | %s |" % (r, ", ".join(loads[s])))
PY
