#!/bin/bash
# SPDX-License-Identifier: MIT
# What an encrypted stream costs in CPU time rather than wall time (on a
# shared machine wall time is mostly the neighbours' load): N (default
# 1000) 1 MiB RC WRITEs with ib_write_bw between two uroce processes on
# loopback, plain and AES-256-GCM, 4 KiB and jumbo packets alternating,
# REPS times; for each run the user and system seconds of the receiver
# (perftest's server: passive, so its time is the engine's) and of the
# sender (which also spins polling its CQ: an upper bound).
#   [N=1000] [REPS=2] bench/crypt_cpu.sh [BUILDDIR]
set -uo pipefail
B=$(cd "${1:-$(dirname "$0")/../build}" && pwd)
if [[ ${UROCE_BENCH_NS:-} != 1 ]]; then
	exec env UROCE_BENCH_NS=1 unshare -n "$0" "$B"
fi
ip link set lo up || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
K=$tmp/key
head -c 32 /dev/urandom >"$K"
chmod 600 "$K"
N=${N:-1000}
median() { sort -g | awk '{v[++n] = $1} END {if (!n) print "-"; else print (n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2)}'; }
envof() {
	case $1 in
	plain) echo "UROCE_CRYPT=off UROCE_JUMBO=0" ;;
	aes) echo "UROCE_CRYPT=require UROCE_CRYPT_KEY=$K UROCE_JUMBO=0" ;;
	plain-j) echo "UROCE_CRYPT=off UROCE_JUMBO=1" ;;
	aes-j) echo "UROCE_CRYPT=require UROCE_CRYPT_KEY=$K UROCE_JUMBO=1" ;;
	esac
}
echo "load average $(cut -d' ' -f1-3 /proc/loadavg); $N x 1 MiB per run"
for ((r = 0; r < ${REPS:-2}; r++)); do
	for s in plain aes plain-j aes-j; do
		port=$((20000 + RANDOM % 20000))
		# shellcheck disable=SC2046
		env $(envof $s) UROCE_IP=127.0.0.2 /usr/bin/time -f "%U %S" -o "$tmp/srv" \
			timeout 120 "$B/bin/uroce-run" ib_write_bw -s 1048576 -n "$N" -x 0 -F -p $port >/dev/null 2>&1 &
		sleep 0.5
		# shellcheck disable=SC2046
		g=$(env $(envof $s) UROCE_IP=127.0.0.3 /usr/bin/time -f "%U %S" -o "$tmp/cli" \
			timeout 120 "$B/bin/uroce-run" ib_write_bw -s 1048576 -n "$N" -x 0 -F -p $port \
			--report_gbits 127.0.0.2 2>/dev/null | awk '$1 ~ /^[0-9]+$/ && NF >= 5 {v = $4} END {print v}')
		wait
		rs=$(awk '{print $1 + $2}' "$tmp/srv"); cs=$(awk '{print $1 + $2}' "$tmp/cli")
		echo "$rs" >>"$tmp/$s.srv"; echo "$cs" >>"$tmp/$s.cli"
		echo "$s: ${g:--} Gbit/s, receiver ${rs} s, sender ${cs} s"
	done
done
echo
echo "| setting | receiver CPU s (median) | sender CPU s (median) |"
echo "|---|---|---|"
for s in plain aes plain-j aes-j; do
	echo "| $s | $(median <"$tmp/$s.srv") | $(median <"$tmp/$s.cli") |"
done
