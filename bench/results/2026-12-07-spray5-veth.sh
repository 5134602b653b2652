#!/usr/bin/env bash
# One veth between two namespaces, ib_write_bw -D 3 with UROCE_PATHS=PATHS
# and UROCE_STATS=1; SIB=1: two idle uroce servers on the responder's
# address first; CAP=1: a capture at the responder.
#   2026-12-07-spray5-veth.sh PATHS SIZE CAP [env...]   (root)
cd "$(dirname "$0")/../.."
P=$1 S=$2 CAP=${3:-0}; shift 3
a=sp5-$$-a b=sp5-$$-b
out=$(mktemp -d /tmp/spray5-veth-XXXX)
cleanup() { ip netns del $a 2>/dev/null; ip netns del $b 2>/dev/null; }
trap cleanup EXIT
ip netns add $a; ip netns add $b
for ns in $a $b; do ip -n $ns link set lo up; done
ip -n $a link add v0a type veth peer name v0b netns $b
ip -n $a addr add 10.96.0.1/24 dev v0a; ip -n $b addr add 10.96.0.2/24 dev v0b
ip -n $a link set v0a up; ip -n $b link set v0b up
sleep 1
if [ "$CAP" = 1 ]; then ip netns exec $b dumpcap -q -i v0b -s 80 -B 64 -w $out/cap.pcap -f "udp port 4791" 2>/dev/null & tp=$!; sleep 0.5; fi
B=build/bin
ip netns exec $b env UROCE_IP=10.96.0.2 UROCE_PATHS=$P UROCE_STATS=1 "$@" timeout 60 $B/uroce-run ib_write_bw -x 0 -s $S -D 3 -F --report_gbits -p 19555 >$out/srv 2>&1 &
if [ -n "${SIB:-}" ]; then
ip netns exec $b env UROCE_IP=10.96.0.2 UROCE_PATHS=$P timeout 30 $B/uroce-run ib_write_lat -x 0 -s 64 -n 100000 -F -p 19556 >$out/sib 2>&1 & s1=$!
ip netns exec $b env UROCE_IP=10.96.0.2 UROCE_PATHS=$P timeout 30 $B/uroce-run ib_write_bw -x 0 -s 64 -D 10 -F -p 19557 >$out/sib2 2>&1 & s2=$!
fi
sleep 0.5
ip netns exec $a env UROCE_IP=10.96.0.1 UROCE_PATHS=$P UROCE_STATS=1 "$@" timeout 60 $B/uroce-run ib_write_bw -x 0 -s $S -D 3 -F --report_gbits -p 19555 10.96.0.2 >$out/cli 2>&1
sleep 0.3; [ -n "${SIB:-}" ] && { kill $s1 $s2 2>/dev/null; wait $s1 $s2 2>/dev/null; }
[ "$CAP" = 1 ] && { kill $tp; wait $tp; }
echo "out=$out load=$(cut -d' ' -f1 /proc/loadavg)"
awk -v s=$S '$1 == s {print "Gbit/s", $4}' $out/cli
for f in cli srv; do echo "== $f"; tr ' ' '\n' < $out/$f | grep -E '^(tx_retransmit|tx_timeouts|rx_nak_seq|tx_sr_nak|tx_sr_resend|tx_sr_probe|tx_reask|rx_sr_spurious|tx_sr_renak|rx_sr_held|tx_sr_late|rx_sr_late|rx_sr_heard|rx_sr_drop|tx_packets|rx_packets)=' | grep -v '=0$' | paste -sd' '; done
