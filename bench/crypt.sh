#!/bin/bash
# SPDX-License-Identifier: MIT
# Encryption cost (docs/security.md "Encryption"): unmodified perftest
# between two uroce processes on loopback (127.0.0.2 and 127.0.0.3), plain
# against UROCE_CRYPT=require with AES-256-GCM and with SM4-GCM, in one run:
#   ib_write_bw -s 1 MiB and -s 64 KiB (D seconds each, Gbit/s),
#   ib_write_lat -s 8 (typical latency, us).
# Each figure is the median of REPS runs (default 3; a run that failed,
# "-", is left out); the three settings alternate inside each repetition
# so load drifts hit them alike.
#
#   bench/crypt.sh [BUILDDIR [OUT]]   (default build,
#                  bench/results/<date>-crypt.md)
set -uo pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd)
B=$(cd "${1:-$TOP/build}" && pwd)
OUT=${2:-$TOP/bench/results/$(date -u +%F)-crypt.md}
if [[ ${UROCE_BENCH_NS:-} != 1 ]]; then
	command -v ib_write_bw >/dev/null || { echo "crypt.sh: perftest not installed (scripts/deps.sh)"; exit 1; }
	exec env UROCE_BENCH_NS=1 unshare -n "$0" "$B" "$OUT"
fi
ip link set lo up || exit 1
R=$B/bin/uroce-run
D=${CRYPT_SECONDS:-4}
REPS=${REPS:-3}
load0=$(cut -d' ' -f1-3 /proc/loadavg)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
key=$tmp/key
head -c 32 /dev/urandom >"$key"
chmod 600 "$key"

envof() { # setting -> environment
	case $1 in
	plain) echo "UROCE_CRYPT=off" ;;
	aes) echo "UROCE_CRYPT=require UROCE_CRYPT_KEY=$key UROCE_CRYPT_ALG=aes-256-gcm" ;;
	sm4) echo "UROCE_CRYPT=require UROCE_CRYPT_KEY=$key UROCE_CRYPT_ALG=sm4-gcm" ;;
	esac
}

# pt SETTING TOOL ARGS...: the client's figure (Gbit/s for bw: column 4 of
# the result line; typical us for lat: column 5); "-" if the run failed.
pt() {
	local s=$1 tool=$2 port=$((20000 + RANDOM % 20000)) col=4
	shift 2
	[[ $tool == ib_write_lat ]] && col=5
	# shellcheck disable=SC2046
	env $(envof "$s") UROCE_IP=127.0.0.2 timeout 120 "$R" "$tool" -x 0 -F -p $port "$@" >/dev/null 2>&1 &
	sleep 0.5
	# shellcheck disable=SC2046
	env $(envof "$s") UROCE_IP=127.0.0.3 timeout 120 "$R" "$tool" -x 0 -F -p $port "$@" 127.0.0.2 2>/dev/null |
		awk -v c=$col '$1 ~ /^[0-9]+$/ && NF >= 5 { v = $c } END { if (v == "" || v + 0 == 0) print "-"; else print v + 0 }'
	wait
}
median() { grep -v -- - | sort -g | awk '{v[++n] = $1} END {if (!n) print "-"; else print (n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2)}'; }

for ((r = 0; r < REPS; r++)); do
	for s in plain aes sm4; do
		pt $s ib_write_bw -s 1048576 -D "$D" --report_gbits >>"$tmp/$s.bw1m"
		pt $s ib_write_bw -s 65536 -D "$D" --report_gbits >>"$tmp/$s.bw64k"
		pt $s ib_write_lat -s 8 -n 20000 >>"$tmp/$s.lat"
	done
done

{
	echo "# Encryption cost, $(date -u +%F)"
	echo
	echo "Machine: $(nproc) CPUs ($(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1)),"
	echo "load average $load0 at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end."
	echo "Two uroce processes on loopback (127.0.0.2, 127.0.0.3), unmodified perftest"
	echo "(\`-x 0 -F\`), ${D} s per bandwidth run; medians of $REPS runs, the three"
	echo "settings alternating inside each repetition. libgcrypt $(pkg-config --modversion libgcrypt 2>/dev/null)."
	echo
	echo "| setting | ib_write_bw 1 MiB Gbit/s | ib_write_bw 64 KiB Gbit/s | ib_write_lat 8 B us (typical) |"
	echo "|---|---|---|---|"
	for s in plain aes sm4; do
		echo "| $s | $(median <"$tmp/$s.bw1m") | $(median <"$tmp/$s.bw64k") | $(median <"$tmp/$s.lat") |"
	done
	echo
	p1=$(median <"$tmp/plain.bw1m"); p64=$(median <"$tmp/plain.bw64k"); pl=$(median <"$tmp/plain.lat")
	for s in aes sm4; do
		awk -v n="$s" -v a="$(median <"$tmp/$s.bw1m")" -v b="$(median <"$tmp/$s.bw64k")" \
			-v l="$(median <"$tmp/$s.lat")" -v p1="$p1" -v p64="$p64" -v pl="$pl" 'BEGIN {
			printf "- %s: %.2fx plain at 1 MiB, %.2fx at 64 KiB, %+.2f us at 8 B\n",
			       n, (p1 > 0 ? a / p1 : 0), (p64 > 0 ? b / p64 : 0), l - pl }'
	done
	echo
	echo "All runs (one line per repetition):"
	echo
	echo '```'
	for s in plain aes sm4; do
		echo "$s bw1m: $(tr '\n' ' ' <"$tmp/$s.bw1m")"
		echo "$s bw64k: $(tr '\n' ' ' <"$tmp/$s.bw64k")"
		echo "$s lat: $(tr '\n' ' ' <"$tmp/$s.lat")"
	done
	echo '```'
} | tee "$OUT"
