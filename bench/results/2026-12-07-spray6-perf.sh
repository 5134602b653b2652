#!/usr/bin/env bash
# spray6: where 8 sprayed paths cost CPU on one veth (CPU the bottleneck).
# ib_write_bw -s 65536 -D 3 between two namespaces with UROCE_PATHS=P,
# both ends under perf record; prints Gbit/s, the load, and each end's
# top symbols (self).   2026-12-07-spray6-perf.sh P [B]   (root)
cd "$(dirname "$0")/../.."
P=$1 B=${2:-build/bin}
a=sp6-$$-a b=sp6-$$-b
out=$(mktemp -d /tmp/spray6-perf-XXXX)
cleanup() { ip netns del $a 2>/dev/null; ip netns del $b 2>/dev/null; }
trap cleanup EXIT
ip netns add $a; ip netns add $b
for ns in $a $b; do ip -n $ns link set lo up; done
ip -n $a link add v0a type veth peer name v0b netns $b
ip -n $a addr add 10.97.0.1/24 dev v0a; ip -n $b addr add 10.97.0.2/24 dev v0b
ip -n $a link set v0a up; ip -n $b link set v0b up
sleep 1
ip netns exec $b env UROCE_IP=10.97.0.2 UROCE_PATHS=$P UROCE_STATS=1 timeout 60 perf record -q -F 499 -o $out/srv.data -- $B/uroce-run ib_write_bw -x 0 -s 65536 -D 3 -F --report_gbits -p 19655 >$out/srv 2>&1 &
sleep 0.5
l0=$(cut -d' ' -f1 /proc/loadavg)
ip netns exec $a env UROCE_IP=10.97.0.1 UROCE_PATHS=$P UROCE_STATS=1 timeout 60 perf record -q -F 499 -o $out/cli.data -- $B/uroce-run ib_write_bw -x 0 -s 65536 -D 3 -F --report_gbits -p 19655 10.97.0.2 >$out/cli 2>&1
wait
echo "paths=$P out=$out load=$l0-$(cut -d' ' -f1 /proc/loadavg) Gbit/s $(awk '$1 == 65536 {print $4}' $out/cli)"
for f in cli srv; do
	echo "== $f: $(tr ' ' '\n' < $out/$f | grep -E '^(tx_retransmit|tx_packets|rx_packets|eng_wakes)=' | paste -sd' ')"
	perf report -q -i $out/$f.data --no-children --sort dso,symbol 2>/dev/null | head -25
done
