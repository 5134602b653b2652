#!/usr/bin/env bash
# Old against new in one run: the same unmodified perftest cases through two
# builds' uroce-run, alternating A and B run by run, medians and B/A ratios.
# For refactors that must not change the data path (issue 39).
#   bench/ab.sh A_BUILD B_BUILD [RUNS]   (default 5)
#   e.g. bench/ab.sh ../wt-base/build build 7
# Loopback only (127.0.0.2 <-> 127.0.0.3); say which machine in the results.
set -uo pipefail
A=${1:?usage: bench/ab.sh A_BUILD B_BUILD [RUNS]}
B=${2:?usage: bench/ab.sh A_BUILD B_BUILD [RUNS]}
RUNS=${3:-5}
for d in "$A" "$B"; do
	[[ -x $d/bin/uroce-run ]] || { echo "bench/ab.sh: no $d/bin/uroce-run (build it first)" >&2; exit 2; }
done
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || { echo "bench/ab.sh: RUNS must be a positive integer, not '$RUNS'" >&2; exit 2; }
out=$(mktemp -d)
trap 'pkill -P $$ 2>/dev/null; rm -rf "$out"' EXIT
port=$((30000 + $$ % 10000))

median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) {print "nan"; exit} m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; print m}'; }

pair() { # build tool args... -> client output
	local run=$1/bin/uroce-run tool=$2
	shift 2
	port=$((port + 1))
	UROCE_IP=127.0.0.2 timeout 60 "$run" "$tool" -p $port "$@" >"$out/srv" 2>&1 &
	local s=$!
	sleep 0.5
	UROCE_IP=127.0.0.3 timeout 60 "$run" "$tool" -p $port "$@" 127.0.0.2 2>&1
	wait $s
}
bw() { # build size -> Gbit/s
	local n=20000
	[[ $2 -ge 1048576 ]] && n=3000
	pair "$1" ib_write_bw -x 0 -s "$2" -n $n -F --report_gbits | awk -v s="$2" '$1==s {print $4}'
}
lat() { # build tool -> median usec (8 B)
	pair "$1" "$2" -x 0 -s 8 -n 20000 -F | awk '$1=="8" {print $5}'
}

# AB_CASES: a subset, e.g. "bw64:bw:64 send_lat:lat:ib_send_lat".
read -ra CASES <<<"${AB_CASES:-bw64:bw:64 bw8k:bw:8192 bw64k:bw:65536 bw1m:bw:1048576 send_lat:lat:ib_send_lat write_lat:lat:ib_write_lat}"
for ((r = 1; r <= RUNS; r++)); do
	for c in "${CASES[@]}"; do
		IFS=: read -r name fn arg <<<"$c"
		for side in A B; do
			d=$A; [[ $side == B ]] && d=$B
			v=$($fn "$d" "$arg")
			echo "${v:-nan}" >>"$out/$name.$side"
		done
	done
	echo "run $r of $RUNS done: $(for c in "${CASES[@]}"; do n=${c%%:*}; echo -n "$n $(tail -1 "$out/$n.A")/$(tail -1 "$out/$n.B") "; done)" >&2
done
printf '| case | A | B | B/A |\n|---|---:|---:|---:|\n'
for c in "${CASES[@]}"; do
	IFS=: read -r name fn arg <<<"$c"
	a=$(median <"$out/$name.A") b=$(median <"$out/$name.B")
	unit="Gbit/s"; [[ $fn == lat ]] && unit="us"
	printf '| %s (%s) | %s | %s | %s |\n' "$name" "$unit" "$a" "$b" \
		"$(awk -v a="$a" -v b="$b" 'BEGIN {if (a > 0) printf "%.2f", b / a; else print "nan"}')"
done
