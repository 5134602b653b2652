#!/bin/bash
# SPDX-License-Identifier: MIT
# Encryption cost (docs/security.md "Encryption"): unmodified perftest
# between two uroce processes on loopback (127.0.0.2 and 127.0.0.3), plain
# against UROCE_CRYPT=require with AES-256-GCM and with SM4-GCM, each with
# 4 KiB packets and with jumbo packets (UROCE_JUMBO=1: 16 KiB on loopback),
# in one run:
#   ib_write_bw -s 1 MiB and -s 64 KiB (D seconds each, Gbit/s),
#   ib_write_lat -s 8 (typical latency, us; not with jumbo packets, which
#   change nothing at 8 bytes).
# Each figure is the median of REPS runs (default 5; a run that failed,
# "-", is left out); the settings alternate inside each repetition so load
# drifts hit them alike. Then crypt-raw (the cipher alone, per core).
#
#   [REPS=5] [CRYPT_SECONDS=4] [SETTINGS="plain aes ..."] \
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
REPS=${REPS:-5}
SETTINGS=${SETTINGS:-plain aes sm4 plain-j aes-j sm4-j}
load0=$(cut -d' ' -f1-3 /proc/loadavg)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
key=$tmp/key
head -c 32 /dev/urandom >"$key"
chmod 600 "$key"

envof() { # setting -> environment
	case $1 in
	*-j) echo "UROCE_JUMBO=1 $(envof "${1%-j}")" ;;
	plain) echo "UROCE_CRYPT=off UROCE_JUMBO=0" ;;
	aes) echo "UROCE_CRYPT=require UROCE_CRYPT_KEY=$key UROCE_CRYPT_ALG=aes-256-gcm UROCE_JUMBO=0" ;;
	sm4) echo "UROCE_CRYPT=require UROCE_CRYPT_KEY=$key UROCE_CRYPT_ALG=sm4-gcm UROCE_JUMBO=0" ;;
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
	for s in $SETTINGS; do
		pt $s ib_write_bw -s 1048576 -D "$D" --report_gbits >>"$tmp/$s.bw1m"
		pt $s ib_write_bw -s 65536 -D "$D" --report_gbits >>"$tmp/$s.bw64k"
		if [[ $s == *-j ]]; then
			echo - >>"$tmp/$s.lat"
		else
			pt $s ib_write_lat -s 8 -n 20000 >>"$tmp/$s.lat"
		fi
	done
done

{
	echo "# Encryption cost, $(date -u +%F)"
	echo
	echo "Machine: $(nproc) CPUs ($(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1)),"
	echo "load average $load0 at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end."
	echo "Two uroce processes on loopback (127.0.0.2, 127.0.0.3), unmodified perftest"
	echo "(\`-x 0 -F\`), ${D} s per bandwidth run; medians of $REPS runs, the"
	echo "settings alternating inside each repetition. libgcrypt $(pkg-config --modversion libgcrypt 2>/dev/null)."
	echo
	echo "Settings: \`plain\`, \`aes\` (AES-256-GCM), \`sm4\` (SM4-GCM) with 4 KiB"
	echo "packets; \`-j\`: the same with jumbo packets (\`UROCE_JUMBO=1\`, 16 KiB)."
	echo
	echo "| setting | ib_write_bw 1 MiB Gbit/s | ib_write_bw 64 KiB Gbit/s | ib_write_lat 8 B us (typical) |"
	echo "|---|---|---|---|"
	for s in $SETTINGS; do
		echo "| $s | $(median <"$tmp/$s.bw1m") | $(median <"$tmp/$s.bw64k") | $(median <"$tmp/$s.lat") |"
	done
	echo
	# ratio SETTING BASE: against BASE measured in the same run
	ratio() {
		[[ -f $tmp/$1.bw1m && -f $tmp/$2.bw1m ]] || return 0
		awk -v n="$1" -v base="$2" -v a="$(median <"$tmp/$1.bw1m")" -v b="$(median <"$tmp/$1.bw64k")" \
			-v l="$(median <"$tmp/$1.lat")" -v p1="$(median <"$tmp/$2.bw1m")" \
			-v p64="$(median <"$tmp/$2.bw64k")" -v pl="$(median <"$tmp/$2.lat")" 'BEGIN {
			printf "- %s: %.2fx %s at 1 MiB, %.2fx at 64 KiB", n, (p1 > 0 ? a / p1 : 0), base,
			       (p64 > 0 ? b / p64 : 0)
			if (l != "-" && pl != "-")
				printf ", %+.2f us at 8 B", l - pl
			printf "\n" }'
	}
	ratio aes plain
	ratio sm4 plain
	ratio aes-j plain-j
	ratio sm4-j plain-j
	ratio aes-j plain
	ratio plain-j plain
	echo
	echo "All runs (one line per repetition):"
	echo
	echo '```'
	for s in $SETTINGS; do
		echo "$s bw1m: $(tr '\n' ' ' <"$tmp/$s.bw1m")"
		echo "$s bw64k: $(tr '\n' ' ' <"$tmp/$s.bw64k")"
		echo "$s lat: $(tr '\n' ' ' <"$tmp/$s.lat")"
	done
	echo '```'
	if [[ -x $B/bench/crypt-raw ]]; then
		echo
		echo "The cipher alone, one core, right after (\`crypt-raw\`, thread CPU time,"
		echo "load $(cut -d' ' -f1-3 /proc/loadavg)):"
		echo
		echo '```'
		"$B/bench/crypt-raw" 33554432
		echo '```'
	fi
} | tee "$OUT"
