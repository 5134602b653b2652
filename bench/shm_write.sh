#!/usr/bin/env bash
# RC WRITE 1 MiB between two processes on one host through uroce's shared-
# memory lanes (UROCE_SHM=1, docs/engine.md "Same-host shared memory")
# against one core's memcpy (issue 38: ">= 0.7 x memcpy"), with the same
# WRITE over UDP on loopback for context, interleaved round by round.
#   bench/shm_write.sh [BUILD_DIR] [ROUNDS]     (default build, 5)
# Rows per round: ib_write_bw -s 1M -n N (N=5000) with UROCE_SHM=1 on both
# ends and with UROCE_SHM=0; build/bench/copy-rate 1 MiB at a time, warm
# (the same two buffers, as perftest's one buffer is) and past the caches
# (a 64 MiB working set). GB/s = 10^9 bytes/s; medians over the rounds and
# the ratios of the medians; the 1-minute load average of each round.
# Runs in a network namespace of its own (tests/netns-run.sh): the fixed
# addresses 127.0.0.2/.3 then cannot meet another run's.
set -uo pipefail
cd "$(dirname "$0")/.."
[[ -n ${UR_NETNS_RUN_INSIDE:-} ]] || exec sh tests/netns-run.sh bash "$0" "$@"
B=${1:-build}
ROUNDS=${2:-5}
N=${N:-5000}
for t in bin/uroce-run bench/copy-rate; do
	[[ -x $B/$t ]] || { echo "shm_write.sh: $B/$t not built"; exit 1; }
done
command -v ib_write_bw >/dev/null || { echo "shm_write.sh: apt-get install perftest"; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
port=$((41000 + $$ % 9000))
source bench/lib.sh # median

# wbw SHM -> GB/s of ib_write_bw -s 1M between 127.0.0.2 and .3
wbw() {
	local i s
	port=$((port + 1))
	UROCE_SHM=$1 UROCE_IP=127.0.0.2 timeout 120 "$B/bin/uroce-run" ib_write_bw -p $port -x 0 \
		-s 1048576 -n "$N" -F --report_gbits >"$out/srv" 2>&1 &
	s=$!
	for i in $(seq 100); do
		ss -Hltn "sport = :$port" 2>/dev/null | grep -q . && break
		sleep 0.05
	done
	UROCE_SHM=$1 UROCE_IP=127.0.0.3 timeout 120 "$B/bin/uroce-run" ib_write_bw -p $port -x 0 \
		-s 1048576 -n "$N" -F --report_gbits 127.0.0.2 >"$out/cli" 2>&1
	wait $s
	awk '$1 == "1048576" {printf "%.2f\n", $4 / 8}' "$out/cli" | grep . || echo nan
}

for r in $(seq "$ROUNDS"); do
	load=$(cut -d' ' -f1 /proc/loadavg)
	shm=$(wbw 1) udp=$(wbw 0)
	warm=$("$B/bench/copy-rate" -s 1M -t 1) cold=$("$B/bench/copy-rate" -s 1M -w 64M -t 1)
	echo "$load $shm $udp $warm $cold" | tee -a "$out/rows" >&2
done
m() { awk -v c=$1 '{print $c}' "$out/rows" | median; }
shm=$(m 2) udp=$(m 3) warm=$(m 4) cold=$(m 5)
echo "| $B, $ROUNDS rounds, load $(awk '{printf "%s ", $1}' "$out/rows")| GB/s | / memcpy warm | / memcpy cold |"
echo "|---|---:|---:|---:|"
for row in "ib_write_bw 1 MiB, shared memory:$shm" "ib_write_bw 1 MiB, UDP loopback:$udp" \
	"memcpy 1 MiB, warm:$warm" "memcpy 1 MiB, 64 MiB working set:$cold"; do
	v=${row##*:}
	echo "| ${row%:*} | $v | $(awk -v a=$v -v b=$warm 'BEGIN {printf "%.2f", a / b}') | $(awk -v a=$v -v b=$cold 'BEGIN {printf "%.2f", a / b}') |"
done
