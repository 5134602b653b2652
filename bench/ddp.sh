#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A DDP training step with uroce's comm hook (python/uroce/ddp.py) against
# DDP's built-in allreduce over gloo, in the same run: REPS runs of each
# (default 3), alternating, each STEPS timed steps (bench/ddp_step.py);
# per configuration the median over runs of each run's median step time
# (slowest rank). Needs python3-torch. Run inside `unshare -n` (loopback).
#   bench/ddp.sh [STEPS]     (default 20)
# Env: NPS (default "2 4"), MODELS ("LAYERSxWIDTHxBATCHxBUCKET_MB" ...),
# OUT (bench/results/OUT.md; default <date>-ddp.md). uroce runs twice: with
# the defaults, and with the progress thread not spinning at all
# (UROCE_COLL_PROGRESS_SPIN_US=0; the default spins 1 ms with a CPU per
# rank, on the core backward computes on).
set -uo pipefail
cd "$(dirname "$0")/.."
B=${BUILD:-build}/bin # env BUILD: another build directory
STEPS=${1:-20}
REPS=${REPS:-3}
NPS=${NPS:-"2 4"}
MODELS=${MODELS:-"4x1024x64x25 8x1024x32x5"}
py=/usr/bin/python3
$py -c 'import torch' || { echo "ddp.sh: needs python3-torch"; exit 1; }
export UROCE_PYTHON_DIR=$PWD/python GLOO_SOCKET_IFNAME=lo OMP_NUM_THREADS=1
md=bench/results/${OUT:-$(date +%F)-ddp}.md
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
median() { sort -g | awk '{a[NR]=$1} END {if (!NR) {print "nan"; exit} print (NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2}'; }
: >"$tmp/rows"
for np in $NPS; do
	for m in $MODELS; do
		IFS=x read -r layers width batch bucket <<<"$m"
		for rep in $(seq "$REPS"); do
			for mode in gloo uroce uroce0; do
				rm -f "$tmp/store"
				spin=()
				[ $mode = uroce0 ] && spin=(UROCE_COLL_PROGRESS_SPIN_US=0)
				line=$(env "${spin[@]}" DDP_STORE=$tmp/store timeout 600 $B/uroce-launch -n "$np" --no-prefix \
					$py bench/ddp_step.py ${mode%0} "$STEPS" "$layers" "$width" "$batch" "$bucket" 2>"$tmp/err" |
					grep '^result' | sed "s/^result [a-z]*/result $mode/")
				if [ -z "$line" ]; then
					echo "$np ranks $m $mode run $rep failed: $(grep -m2 -E "Error|uroce_coll" "$tmp/err")" | tee -a "$tmp/failed"; cp "$tmp/err" /tmp/ddp-failed-$np-$mode-$rep.log
					continue
				fi
				echo "$np ranks $m run $rep: $line"
				echo "$np $m $line" >>"$tmp/rows"
			done
		done
	done
done
{
	echo "# DDP step time: uroce's comm hook vs gloo ($(date +%F))"
	echo
	echo "\`bench/ddp.sh $STEPS\` (REPS=$REPS) at $(git rev-parse --short HEAD), $(getconf _NPROCESSORS_ONLN) cores"
	echo "($(uname -r)), torch $($py -c 'import torch; print(torch.__version__)'), load average"
	echo "at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
	echo
	echo "Step time: median over runs of each run's median step (slowest rank), ms;"
	echo "uroce0: the progress thread does not spin (UROCE_COLL_PROGRESS_SPIN_US=0)."
	echo
	echo "| ranks | model (layers x width, batch, bucket MB) | grad MB | hook calls/step | gloo | uroce | uroce0 | gloo/uroce | gloo/uroce0 |"
	echo "|---:|---|---:|---:|---:|---:|---:|---:|---:|"
	for np in $NPS; do
		for m in $MODELS; do
			g=$(awk -v n="$np" -v m="$m" '$1==n && $2==m && $4=="gloo" {print $6}' "$tmp/rows" | median)
			u=$(awk -v n="$np" -v m="$m" '$1==n && $2==m && $4=="uroce" {print $6}' "$tmp/rows" | median)
			u0=$(awk -v n="$np" -v m="$m" '$1==n && $2==m && $4=="uroce0" {print $6}' "$tmp/rows" | median)
			mb=$(awk -v n="$np" -v m="$m" '$1==n && $2==m {printf "%.1f", $10 / 1e6; exit}' "$tmp/rows")
			hc=$(awk -v n="$np" -v m="$m" '$1==n && $2==m && $4=="uroce" {print $12; exit}' "$tmp/rows")
			IFS=x read -r layers width batch bucket <<<"$m"
			r=$(awk -v g="$g" -v u="$u" 'BEGIN {if (u > 0) printf "%.2f", g / u; else print "nan"}')
			r0=$(awk -v g="$g" -v u="$u0" 'BEGIN {if (u > 0) printf "%.2f", g / u; else print "nan"}')
			echo "| $np | $layers x $width, $batch, $bucket | $mb | $hc | $g | $u | $u0 | $r | $r0 |"
		done
	done
	if [ -s "$tmp/failed" ]; then
		echo
		echo "Failed runs (not in the medians):"
		echo
		sed 's/^/    /' "$tmp/failed"
	fi
} >"$md"
cat "$md"
