#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Traffic classes under a device rate limit (issue 45, docs/ports-classes.md):
# bench/tclass_sched.c, one process, one device context, every QP under
# UROCE_RATE_LIMIT_MBPS=1000, in a network namespace of its own.
#  * lat: a ping-pong (64-byte SENDs, DSCP 46 = priority 5) alone, then next
#    to a bulk WRITE stream (64 KiB WRITEs, class 0): p50/p99 round trip,
#    with UROCE_TC_STRICT=5 (classes) and without (the limit's one bucket).
#  * share: two bulk WRITE streams, classes 0 and DSCP 8 (priority 1), with
#    UROCE_TC_WEIGHTS=3,1 and without: their Gbit/s and ratio.
# The configurations alternate within each round (same binary, same
# minutes); medians over the rounds.
#   bench/tclass_sched.sh [BUILDDIR]  -> bench/results/<date>-tclass-sched.md
set -uo pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd)
B=$(cd "${1:-$TOP/build}" && pwd)
OUT=$TOP/bench/results/$(date +%F)-tclass-sched.md
ROUNDS=${TCS_ROUNDS:-5}
N=${TCS_PINGS:-3000}
SECS=${TCS_SECONDS:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

one() { # file env... -- args...
	local f=$1 e=()
	shift
	while [[ $1 != -- ]]; do e+=("$1"); shift; done
	shift
	env "${e[@]}" UROCE_RATE_LIMIT_MBPS=1000 UROCE_IP=127.0.80.2 \
		nice -n 5 "$TOP/tests/netns-run.sh" timeout 120 "$B/bin/uroce-run" \
		"$B/bench/tclass-sched" "$@" >>"$tmp/$f" 2>/dev/null ||
		echo "run failed: $f" >&2
}

load0=$(cut -d' ' -f1-3 /proc/loadavg)
for ((r = 0; r < ROUNDS; r++)); do
	one lat_off UROCE_X=0 -- lat -n "$N"
	one lat_on UROCE_TC_STRICT=5 -- lat -n "$N"
	one share_off UROCE_X=0 -- share -s "$SECS"
	one share_on UROCE_TC_WEIGHTS=3,1 -- share -s "$SECS"
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)

# med FILE COLUMN: the median of a column over the rounds
med() {
	awk -v c="$2" '{ print $c }' "$tmp/$1" | sort -g |
		awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] + 0 }'
}

{
	echo "# Traffic classes: the transmit scheduler, $(date +%F)"
	echo
	echo "\`bench/tclass_sched.sh\` ($(git -C "$TOP" rev-parse --short HEAD)), $(nproc)-CPU $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') KVM VM,"
	echo "shared with other engineers' builds and tests: load average $load0 before, $load1 after."
	echo "One process, one device context (uroce0 on 127.0.80.2, a network namespace of its own),"
	echo "\`UROCE_RATE_LIMIT_MBPS=1000\` (the default 4 ms bucket); $ROUNDS rounds, the"
	echo "configurations alternating within each round; medians over the rounds."
	echo
	echo "## Ping-pong in a dedicated class next to a bulk stream"
	echo
	echo "Round trips (us) of a 64-byte SEND ping-pong (one thread, spinning), DSCP 46 (priority 5),"
	echo "$N each phase: alone, then next to 64 KiB RDMA WRITEs (48 outstanding, own thread"
	echo "sleeping on its completion channel) in class 0. \"classes\": \`UROCE_TC_STRICT=5\`;"
	echo "\"no classes\": nothing set, every QP behind the limit's one bucket."
	echo
	echo "| | idle p50 | idle p99 | load p50 | load p99 | load p99 / idle p99 | bulk Gbit/s |"
	echo "|---|---|---|---|---|---|---|"
	for m in off on; do
		name=$([[ $m == on ]] && echo "classes" || echo "no classes")
		i99=$(med lat_$m 2) l99=$(med lat_$m 4)
		echo "| $name | $(med lat_$m 1) | $i99 | $(med lat_$m 3) | $l99 | $(awk -v a="$l99" -v b="$i99" 'BEGIN { printf "%.2f", a / b }') | $(med lat_$m 5) |"
	done
	echo
	echo "Every round (idle p50, idle p99, load p50, load p99, bulk Gbit/s):"
	echo
	echo "| round | no classes | classes |"
	echo "|---|---|---|"
	paste -d'|' "$tmp/lat_off" "$tmp/lat_on" | awk -F'|' '{ printf "| %d | %s | %s |\n", NR, $1, $2 }'
	echo
	echo "## Two bulk streams weighted 3:1"
	echo
	echo "64 KiB WRITEs, 48 outstanding each, one thread driving both; class 0 (a) and DSCP 8,"
	echo "priority 1 (b); $SECS s after a 0.5 s warm-up. \"weights\": \`UROCE_TC_WEIGHTS=3,1\`."
	echo
	echo "| | a Gbit/s | b Gbit/s | a / b |"
	echo "|---|---|---|---|"
	for m in off on; do
		name=$([[ $m == on ]] && echo "weights 3,1" || echo "no classes")
		echo "| $name | $(med share_$m 1) | $(med share_$m 2) | $(med share_$m 3) |"
	done
	echo
	echo "Every round (a, b, a/b):"
	echo
	echo "| round | no classes | weights 3,1 |"
	echo "|---|---|---|"
	paste -d'|' "$tmp/share_off" "$tmp/share_on" | awk -F'|' '{ printf "| %d | %s | %s |\n", NR, $1, $2 }'
} >"$OUT"
cat "$OUT"
