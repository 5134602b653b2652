#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Collectives over two rails (issue 45, docs/collectives.md "Rails"): two
# namespaces joined by two veth pairs, a 2-port uroce device on each side
# (UROCE_PORTS), one rank in each. uroce-coll-perf -c 1 checks every
# element of allreduce, alltoall, alltoallv, allgather, broadcast and
# reduce at 256 KiB and 1 MiB; each veth's byte counter shows that its rail
# carried its share: about half each by default (auto: both ports), about
# 3:1 with weights 3 and 1, half each over two devices (uroce1,uroce2
# without UROCE_PORTS), everything on rail 1 with "one"; the Python
# binding (numpy checks; not in a sanitizer build) stripes too. A bad value
# is refused with its name and what is allowed. About 6 s.
#   rails.sh BINDIR
set -uo pipefail
B=$1
[ "$(id -u)" = 0 ] && ip netns list >/dev/null 2>&1 || { echo "SKIP: needs root and ip netns"; exit 77; }
a=uroce-rl-$$-a b=uroce-rl-$$-b
tmp=$(mktemp -d)
fails=0
trap 'ip netns del "$a" 2>/dev/null; ip netns del "$b" 2>/dev/null; rm -rf "$tmp"' EXIT
ip netns add "$a" && ip netns add "$b" || { echo "SKIP: ip netns add failed"; exit 77; }
for ns in "$a" "$b"; do ip -n "$ns" link set lo up; done
ip -n "$a" link add r1a type veth peer name r1b netns "$b" &&
ip -n "$a" link add r2a type veth peer name r2b netns "$b" &&
ip -n "$a" addr add 10.97.1.1/30 dev r1a && ip -n "$b" addr add 10.97.1.2/30 dev r1b &&
ip -n "$a" addr add 10.97.2.1/30 dev r2a && ip -n "$b" addr add 10.97.2.2/30 dev r2b &&
for x in "$a r1a" "$a r2a" "$b r1b" "$b r2b"; do set -- $x; ip -n "$1" link set "$2" up || exit 1; done ||
	{ echo "FAIL the two-rail fabric"; exit 1; }
# A port is active once its veth's operational state is up.
for i in $(seq 50); do
	[[ $( (ip netns exec $a cat /sys/class/net/r{1,2}a/operstate
	       ip netns exec $b cat /sys/class/net/r{1,2}b/operstate) | grep -c '^up$') == 4 ]] && break
	sleep 0.1
done
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
txb() { ip netns exec "$a" cat /sys/class/net/$1/statistics/tx_bytes; }
port=29700
# run RAILS OP SIZES...: both ranks; sets d1 d2 (bytes rank 0 sent per rail)
run() {
	local rails=$1 op=$2 t1 t2 rc0 rc1
	shift 2
	port=$((port + 1))
	t1=$(txb r1a) t2=$(txb r2a)
	ip netns exec "$a" env UROCE_PORTS=${PA-r1a,r2a} UROCE_COLL_RAILS="$rails" RANK=0 WORLD_SIZE=2 \
		MASTER_ADDR=10.97.1.1 MASTER_PORT=$port timeout 60 "$B/uroce-run" "$B/uroce-coll-perf" \
		-o "$op" -b "$1" -e "${2:-$1}" -f 4 -n 2 -w 1 -c 1 >"$tmp/r0" 2>&1 &
	ip netns exec "$b" env UROCE_PORTS=${PB-r1b,r2b} UROCE_COLL_RAILS="$rails" RANK=1 WORLD_SIZE=2 \
		MASTER_ADDR=10.97.1.1 MASTER_PORT=$port timeout 60 "$B/uroce-run" "$B/uroce-coll-perf" \
		-o "$op" -b "$1" -e "${2:-$1}" -f 4 -n 2 -w 1 -c 1 >"$tmp/r1" 2>&1
	rc1=$?
	wait $!
	rc0=$?
	d1=$(( $(txb r1a) - t1 )) d2=$(( $(txb r2a) - t2 ))
	if [ $rc0 != 0 ] || [ $rc1 != 0 ] || ! grep -q "Out of bounds values : 0 OK" "$tmp/r0"; then
		bad "$op over rails '$rails': exit $rc0/$rc1"
		tail -n 5 "$tmp/r0" "$tmp/r1"
		return 1
	fi
	return 0
}
# share LO HI: rail 1's share of the bytes (per cent) within [LO, HI]
share() {
	local p=$(( d1 * 100 / (d1 + d2 + 1) ))
	[ $p -ge $1 ] && [ $p -le $2 ]
}
for op in allreduce alltoall alltoallv allgather broadcast reduce; do
	run auto $op 256K 1M || continue
	if share 35 65; then
		ok "$op 256 KiB, 1 MiB, 2 rails: content checked; rail 1 $d1 B, rail 2 $d2 B"
	else
		bad "$op: rail 1 $d1 B, rail 2 $d2 B: not about half each"
	fi
done
if run "uroce0:1@3,uroce0:2@1" allreduce 1M; then
	share 65 85 && ok "allreduce 1 MiB, weights 3:1: rail 1 $d1 B, rail 2 $d2 B" ||
		bad "allreduce, weights 3:1: rail 1 $d1 B, rail 2 $d2 B"
fi
if run one allreduce 1M; then
	share 97 100 && ok "allreduce 1 MiB, UROCE_COLL_RAILS=one: rail 1 $d1 B, rail 2 $d2 B" ||
		bad "allreduce, one rail: rail 1 $d1 B, rail 2 $d2 B"
fi
# Two devices rather than two ports: without UROCE_PORTS each interface
# that is up is a device (lo uroce0, r1x uroce1, r2x uroce2).
if PA= PB= run uroce1,uroce2 alltoall 1M; then
	share 35 65 && ok "alltoall 1 MiB over two devices (uroce1,uroce2): rail 1 $d1 B, rail 2 $d2 B" ||
		bad "alltoall over two devices: rail 1 $d1 B, rail 2 $d2 B"
fi
# Small messages stay on rail 1 (below 64 KiB).
if run auto allreduce 16K; then
	[ $d2 -lt 20000 ] && ok "allreduce 16 KiB stays on rail 1 (rail 2 $d2 B: ACKs, setup)" ||
		bad "allreduce 16 KiB: rail 2 carried $d2 B"
fi
# The Python binding stripes too (it is the same library): a 1 MiB
# float32 allreduce and a 2 MiB alltoall, checked with numpy. Not under a
# sanitizer build (python3 would need its runtimes preloaded).
py=/usr/bin/python3
if [ -r "$B/../lib/uroce-preload" ] || ! $py -c 'import numpy' 2>/dev/null; then
	echo "skip: the Python binding (sanitizer build, or no python3-numpy)"
else
	cat >"$tmp/rails.py" <<'PY'
import os, sys
import numpy as np
sys.path.insert(0, os.environ["UROCE_PYTHON_DIR"])
import uroce
c = uroce.Comm()
r, n = c.rank, c.size
base = np.arange(262144, dtype=np.float32) % 97
x = base + r
c.allreduce(x)
want = base * n + sum(range(n))
assert np.array_equal(x, want), "allreduce differs"
s = (np.arange(524288, dtype=np.float32) % 89) + 1000 * r
got = np.empty_like(s)
c.alltoall(s, got)
blk = 524288 // n
for j in range(n):
    w = (np.arange(r * blk, (r + 1) * blk, dtype=np.float32) % 89) + 1000 * j
    assert np.array_equal(got[j * blk:(j + 1) * blk], w), "alltoall block %d differs" % j
c.close()
print("rails.py: rank %d ok" % r)
PY
	port=$((port + 1))
	t1=$(txb r1a) t2=$(txb r2a)
	ip netns exec "$a" env UROCE_PORTS=r1a,r2a RANK=0 WORLD_SIZE=2 MASTER_ADDR=10.97.1.1 \
		MASTER_PORT=$port UROCE_PYTHON_DIR="$(dirname "$0")/../../python" \
		timeout 60 "$B/uroce-run" $py "$tmp/rails.py" >"$tmp/p0" 2>&1 &
	ip netns exec "$b" env UROCE_PORTS=r1b,r2b RANK=1 WORLD_SIZE=2 MASTER_ADDR=10.97.1.1 \
		MASTER_PORT=$port UROCE_PYTHON_DIR="$(dirname "$0")/../../python" \
		timeout 60 "$B/uroce-run" $py "$tmp/rails.py" >"$tmp/p1" 2>&1
	rc1=$?
	wait $!
	rc0=$?
	d1=$(( $(txb r1a) - t1 )) d2=$(( $(txb r2a) - t2 ))
	if [ $rc0 = 0 ] && [ $rc1 = 0 ] && grep -q "rank 0 ok" "$tmp/p0" && share 35 65; then
		ok "Python: allreduce and alltoall checked with numpy; rail 1 $d1 B, rail 2 $d2 B"
	else
		bad "Python over rails: exit $rc0/$rc1, rail 1 $d1 B, rail 2 $d2 B"
		tail -n 5 "$tmp/p0" "$tmp/p1"
	fi
fi
out=$(ip netns exec "$a" env UROCE_PORTS=r1a,r2a UROCE_COLL_RAILS=uroce0:0 \
	timeout 20 "$B/uroce-run" "$B/uroce-coll-perf" -o allreduce -b 1K -e 1K -n 1 2>&1)
rc=$?
if [ $rc != 0 ] && grep -q "UROCE_COLL_RAILS=uroce0:0: .*allowed" <<<"$out"; then
	ok "a bad UROCE_COLL_RAILS is refused with its name and what is allowed"
else
	bad "UROCE_COLL_RAILS=uroce0:0: exit $rc: $out"
fi
[ $fails = 0 ] && echo "PASS" || echo "FAILED: $fails"
[ $fails = 0 ]
