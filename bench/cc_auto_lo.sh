#!/usr/bin/env bash
# UROCE_CC=auto against dcqcn between two uroce ends on an unshaped veth
# pair (two namespaces, no switch, no ECN: congestion control never cuts
# here; what differs is auto's negotiation, switch and RTT sampling with
# its AckReq every 8 PSNs). Alternates the CCS, REPS times each, in the same
# run: ib_write_bw (-s 65536 -D DUR) then ib_send_lat (-s 64 -n LATN).
# Per run: MB/s, the sender's transport timeouts and retransmitted
# packets (UROCE_STATS=1), whether its QP switched (cc_auto_switched), the
# ping-pong's typical and 99 % latency (us). Prints rows and medians.
#   bench/cc_auto_lo.sh
# Env: REPS (10), DUR (3), LATN (2000), CCS ("dcqcn auto"; LABEL=ALGO:VAR=V,..),
#      B (build/bin), KEEP (1: keep the raw outputs).
set -uo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-10} DUR=${DUR:-3} LATN=${LATN:-2000} CCS=${CCS:-dcqcn auto}
B=${B:-build/bin}
[ "$(id -u)" = 0 ] && ip netns list >/dev/null 2>&1 || { echo "cc_auto_lo.sh: needs root and ip netns"; exit 77; }
a=uroce-cclo-$$-a b=uroce-cclo-$$-b
tmp=$(mktemp -d)
trap 'ip netns del $a 2>/dev/null; ip netns del $b 2>/dev/null; [ -n "${KEEP:-}" ] && echo "raw: $tmp" || rm -rf "$tmp"' EXIT
ip netns add $a && ip netns add $b || exit 1
for x in $a $b; do ip -n $x link set lo up; done
ip -n $a link add va type veth peer name vb netns $b
ip -n $a addr add 10.96.0.1/24 dev va && ip -n $b addr add 10.96.0.2/24 dev vb
ip -n $a link set va up && ip -n $b link set vb up
for _ in $(seq 50); do
	[ "$(ip netns exec $a cat /sys/class/net/va/operstate)" = up ] &&
	[ "$(ip netns exec $b cat /sys/class/net/vb/operstate)" = up ] && break
	sleep 0.1
done
cnt() { awk -v k="$1" '{for (i = 1; i <= NF; i++) if (index($i, k "=") == 1) {split($i, kv, "="); s += kv[2]}} END {print s + 0}' "$2"; }
one() { # SPEC REP
	local lbl=${1%%=*} spec=${1#*=} algo env d
	algo=${spec%%:*}; env=(UROCE_CC=$algo UROCE_STATS=1)
	[ "$spec" != "$algo" ] && env+=($(echo "${spec#*:}" | tr , ' '))
	d=$tmp/$lbl.$2; mkdir -p "$d"
	ip netns exec $b env UROCE_IP=10.96.0.2 "${env[@]}" timeout 40 $B/uroce-run ib_write_bw -x 0 -s 65536 -D "$DUR" -F -p 18811 >"$d/srv" 2>&1 &
	sleep 0.4
	ip netns exec $a env UROCE_IP=10.96.0.1 "${env[@]}" timeout 40 $B/uroce-run ib_write_bw -x 0 -s 65536 -D "$DUR" -F -p 18811 10.96.0.2 >"$d/bw" 2>&1
	wait
	ip netns exec $b env UROCE_IP=10.96.0.2 "${env[@]}" timeout 40 $B/uroce-run ib_send_lat -x 0 -s 64 -n "$LATN" -F -p 18812 >"$d/lsrv" 2>&1 &
	sleep 0.4
	ip netns exec $a env UROCE_IP=10.96.0.1 "${env[@]}" timeout 40 $B/uroce-run ib_send_lat -x 0 -s 64 -n "$LATN" -F -p 18812 10.96.0.2 >"$d/lat" 2>&1
	wait
	local bw lat to rtx sw lto
	bw=$(awk '$1 == 65536 && NF >= 4 {print $4}' "$d/bw")
	lat=$(awk '$1 == 64 && NF >= 9 {print $5, $8}' "$d/lat")
	to=$(cnt tx_timeouts "$d/bw"); rtx=$(cnt tx_retransmit "$d/bw"); sw=$(cnt cc_auto_switched "$d/bw")
	lto=$(( $(cnt tx_timeouts "$d/lat") + $(cnt tx_timeouts "$d/lsrv") ))
	echo "$lbl $2 ${bw:--} $to $rtx $sw ${lat:-- -} $lto" | tee -a "$tmp/rows"
}
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "cc rep MB/s timeouts retx switched lat_typ_us lat_p99_us lat_timeouts"
for rep in $(seq 1 "$REPS"); do for cc in $CCS; do one "$cc" "$rep"; done; done
echo "load after:  $(cut -d' ' -f1-3 /proc/loadavg)"
echo "$(lscpu | sed -n 's/^Model name: *//p' | head -n1), $(nproc) CPUs; veth pair, no shaping; DUR $DUR s"
awk 'function med(a, n,   i, j, t) { for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t } return n ? (n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2) : -1 }
{ n[$1]++; k = n[$1]; B[$1, k] = $3; T[$1] += $4; if ($4 > 0) R[$1]++; X[$1, k] = $5; L[$1, k] = $7; P[$1, k] = $8; LT[$1] += $9 }
END { print "medians: cc runs MB/s lat_typ lat_p99 | runs with timeouts, timeouts, lat timeouts"
	for (c in n) { m = n[c]; for (k = 1; k <= m; k++) { a[k] = B[c, k]; l[k] = L[c, k]; p[k] = P[c, k] }
		printf "%-8s %3d %8.1f %8.2f %8.2f | %d %d %d\n", c, m, med(a, m), med(l, m), med(p, m), R[c], T[c], LT[c] } }' "$tmp/rows"
