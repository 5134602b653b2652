#!/bin/bash
# SPDX-License-Identifier: MIT
# Unmodified clients over uroce beside the same clients over TCP, on one
# machine (loopback), in one run:
#   UCX:      ucx_perftest tag_lat 8 B, tag_bw 64 KiB and 1 MiB,
#             UCX_TLS=rc_verbs,ud_verbs (each side under uroce-run, 127.0.0.2
#             and 127.0.0.3) beside UCX_TLS=tcp (lo);
#   Open MPI: coll-mpi-perf allreduce busbw, 4 ranks, --mca pml ucx over
#             uroce beside --mca pml ob1 --mca btl tcp,self.
# Each figure is the median of REPS runs (default 3), uroce and TCP
# alternating. The uroce runs also count the bytes their devices sent
# (UROCE_STATS=1): a run where they did not carry the payload is marked.
#
#   bench/clients.sh [BINDIR [OUT]]   (default build/bin,
#                    bench/results/<date>-clients.md)
#
# Runs in a network namespace of its own (unshare -n, loopback only).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
B=$(cd "${1:-$HERE/../build/bin}" && pwd)
OUT=${2:-$HERE/results/$(date -u +%F)-clients.md}
REPS=${REPS:-3}
if [[ ${UROCE_BENCH_NS:-} != 1 ]]; then
	for c in ucx_perftest mpirun; do
		command -v $c >/dev/null || { echo "clients.sh: $c not installed (scripts/deps.sh)"; exit 1; }
	done
	[[ -x $B/../bench/coll-mpi-perf ]] || { echo "clients.sh: $B/../bench/coll-mpi-perf not built (libopenmpi-dev)"; exit 1; }
	exec env UROCE_BENCH_NS=1 unshare -n "$0" "$B" "$OUT"
fi
ip link set lo up || exit 1
load0=$(cut -d' ' -f1-3 /proc/loadavg)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
port=15000

counter() { sed -n "s/.*uroce: .*counters:.* $2=\([0-9][0-9]*\).*/\1/p" "$1" | awk '{s += $1} END {printf "%.0f\n", s}'; }
median() { sort -g | awk '{v[++n] = $1} END {if (!n) print "-"; else print (n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2)}'; }

# ucx TRANSPORT TEST SIZE ITERS: prints "typical_lat_us avg_lat_us MB/s"
# of the client's Final line ("- - -" if the run failed).
ucx() {
	local tr=$1 t=$2 size=$3 n=$4 run=()
	port=$((port + 1))
	if [[ $tr == uroce ]]; then
		export UCX_TLS=rc_verbs,ud_verbs UCX_NET_DEVICES=uroce0:1 UROCE_STATS=1
		UROCE_IP=127.0.0.2 timeout 300 "$B/uroce-run" ucx_perftest -p $port >"$tmp/s.out" 2>&1 &
		run=(env UROCE_IP=127.0.0.3 "$B/uroce-run")
	else
		export UCX_TLS=tcp UCX_NET_DEVICES=lo
		timeout 300 ucx_perftest -p $port >"$tmp/s.out" 2>&1 &
	fi
	local spid=$!
	sleep 1
	timeout 300 "${run[@]}" ucx_perftest -p $port 127.0.0.2 -t "$t" -s "$size" -n "$n" >"$tmp/c.out" 2>&1
	wait $spid
	unset UCX_TLS UCX_NET_DEVICES UROCE_STATS
	local f
	f=$(sed -n 's/^Final: *//p' "$tmp/c.out")
	if [[ -z $f ]]; then
		echo "run failed: ucx $tr $t $size" >&2; tail -n 5 "$tmp/c.out" >&2
		echo "- - -"; return
	fi
	if [[ $tr == uroce ]]; then
		local tx rx
		tx=$(counter "$tmp/c.out" tx_bytes) rx=$(counter "$tmp/c.out" rx_bytes)
		((tx + rx >= size * n)) || echo "warning: uroce moved only tx $tx rx $rx bytes (ucx $t $size)" >&2
	fi
	echo "$f" | awk '{print $2, $3, $5}'
}

# mpi TRANSPORT: coll-mpi-perf allreduce, 4 ranks; prints "size busbw" lines.
NP=4 SIZES="-b 64K -e 16M -f 4 -n 20 -w 5"
mpi() {
	if [[ $1 == uroce ]]; then
		timeout 600 mpirun --allow-run-as-root --oversubscribe -np $NP --mca pml ucx \
			-x UCX_TLS=rc_verbs,ud_verbs,self -x UCX_NET_DEVICES=uroce0:1 -x UROCE_STATS=1 \
			sh -c 'UROCE_IP=127.0.0.$((10 + OMPI_COMM_WORLD_RANK)) exec "$0" "$@"' \
			"$B/uroce-run" "$B/../bench/coll-mpi-perf" $SIZES -o allreduce >"$tmp/m.out" 2>&1
	else
		timeout 600 mpirun --allow-run-as-root --oversubscribe -np $NP --mca pml ob1 \
			--mca btl tcp,self --mca btl_tcp_if_include lo \
			"$B/../bench/coll-mpi-perf" $SIZES -o allreduce >"$tmp/m.out" 2>&1
	fi || { echo "run failed: mpi $1" >&2; tail -n 5 "$tmp/m.out" >&2; }
	if [[ $1 == uroce ]]; then
		local tx
		tx=$(counter "$tmp/m.out" tx_bytes)
		# 16 MiB allreduce x 25 calls: at least (NP-1)/NP of it leaves each rank.
		((tx >= 25 * 16777216 * (NP - 1) / NP)) || echo "warning: uroce sent only $tx bytes (mpi)" >&2
		echo "$(counter "$tmp/m.out" tx_retransmit) $(counter "$tmp/m.out" tx_timeouts) $tx" >>"$tmp/mpi-retx"
	fi
	awk '!/^#/ && NF >= 5 && $1 ~ /^[0-9]+$/ {print $1, $5}' "$tmp/m.out"
}

tests=("tag_lat 8 20000" "tag_bw 65536 5000" "tag_bw 1048576 1000")
for rep in $(seq "$REPS"); do
	for tr in uroce tcp; do
		for i in "${!tests[@]}"; do
			echo "== run $rep/$REPS: ucx $tr ${tests[$i]}" >&2
			ucx $tr ${tests[$i]} >>"$tmp/ucx-$tr-$i"
		done
		echo "== run $rep/$REPS: mpi $tr" >&2
		mpi $tr >>"$tmp/mpi-$tr"
	done
done

# col FILE N: median of column N over the runs, and the runs in brackets.
col() {
	echo "$(awk -v c=$2 '{print $c}' "$1" | grep -v '^-$' | median) ($(awk -v c=$2 '{print $c}' "$1" | paste -sd, | sed 's/,/, /g'))"
}
model=$(lscpu | sed -n 's/^Model name: *//p' | head -n1)
{
	echo "# Clients over uroce beside the same clients over TCP ($(date -u +%F))"
	echo
	echo "Machine: $model, $(nproc) CPUs, Linux $(uname -r); one machine, loopback, in a network namespace of its own. Load average before / after the run: $load0 / $(cut -d' ' -f1-3 /proc/loadavg) (other work shares the machine: the runs in brackets show the spread)."
	echo "$(ucx_info -v | sed -n 's/^# *//p' | head -n1); $(mpirun --version | head -n1)."
	echo "uroce: $(git -C "$HERE" log -1 --format='%h %s' 2>/dev/null)."
	echo
	echo "Command: \`bench/clients.sh\` (medians of $REPS runs, uroce and TCP alternating; each run's figure in brackets)."
	echo
	echo "## UCX (\`ucx_perftest\`, client on 127.0.0.3, server on 127.0.0.2)"
	echo
	echo "uroce: \`UCX_TLS=rc_verbs,ud_verbs UCX_NET_DEVICES=uroce0:1\`, each side under \`uroce-run\`; TCP: \`UCX_TLS=tcp UCX_NET_DEVICES=lo\`."
	echo
	echo "| test | uroce | TCP |"
	echo "|---|---|---|"
	for i in "${!tests[@]}"; do
		set -- ${tests[$i]}
		if [[ $1 == tag_lat ]]; then
			echo "| tag_lat $2 B, $3 iterations: typical / average latency (us) | $(col "$tmp/ucx-uroce-$i" 1) / $(col "$tmp/ucx-uroce-$i" 2) | $(col "$tmp/ucx-tcp-$i" 1) / $(col "$tmp/ucx-tcp-$i" 2) |"
		else
			echo "| tag_bw $(($2 / 1024)) KiB, $3 iterations: bandwidth (MB/s) | $(col "$tmp/ucx-uroce-$i" 3) | $(col "$tmp/ucx-tcp-$i" 3) |"
		fi
	done
	echo
	echo "## Open MPI allreduce busbw (\`coll-mpi-perf $SIZES -o allreduce\`, $NP ranks, float32 sum)"
	echo
	echo "uroce: \`--mca pml ucx -x UCX_TLS=rc_verbs,ud_verbs,self -x UCX_NET_DEVICES=uroce0:1\`, rank r under \`uroce-run\` on 127.0.0.(10+r); TCP: \`--mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo\`."
	echo
	echo "The uroce runs' devices (all ranks, UROCE_STATS counters): packets retransmitted / retransmission timeouts / bytes sent per run: $(awk '{printf "%s%s / %s / %s", (NR > 1 ? "; " : ""), $1, $2, $3}' "$tmp/mpi-retx")."
	echo
	echo "| size (B) | uroce busbw (GB/s) | TCP busbw (GB/s) |"
	echo "|---|---|---|"
	for s in $(awk '{print $1}' "$tmp/mpi-tcp" "$tmp/mpi-uroce" | sort -nu); do
		u="$(awk -v s=$s '$1 == s {print $2}' "$tmp/mpi-uroce" | median) ($(awk -v s=$s '$1 == s {print $2}' "$tmp/mpi-uroce" | paste -sd, | sed 's/,/, /g'))"
		t="$(awk -v s=$s '$1 == s {print $2}' "$tmp/mpi-tcp" | median) ($(awk -v s=$s '$1 == s {print $2}' "$tmp/mpi-tcp" | paste -sd, | sed 's/,/, /g'))"
		echo "| $s | $u | $t |"
	done
} >"$OUT"
cat "$OUT"
