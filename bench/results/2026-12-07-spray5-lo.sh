#!/usr/bin/env bash
# Loopback in a namespace of its own: ib_write_bw -s 65536 -D 3 client and
# server on 127.0.0.1 (two processes on one address: siblings), UROCE_PATHS
# 1 and 8 alternating, twice; "pinned": the server pinned 127.0.0.1 (pin.c).
cd "$(dirname "$0")/../.."
n=sp5-lo-$$; ip netns add $n; ip -n $n link set lo up
trap "ip netns del $n" EXIT
for r in 1 2; do for P in 1 8; do
ip netns exec $n env UROCE_IP=127.0.0.1 UROCE_PATHS=$P UROCE_STATS=1 UROCE_LOG=info timeout 30 build/bin/uroce-run ib_write_bw -x 0 -s 65536 -D 3 -F --report_gbits -p 19600 > /tmp/spray5/lo-srv 2>&1 & s=$!
sleep 0.5
g=$(ip netns exec $n env UROCE_IP=127.0.0.1 UROCE_PATHS=$P UROCE_STATS=1 timeout 30 build/bin/uroce-run ib_write_bw -x 0 -s 65536 -D 3 -F --report_gbits -p 19600 127.0.0.1 2>/tmp/spray5/lo-cli | awk '$1 == 65536 {print $4}')
wait $s
echo "paths=$P load=$(cut -d' ' -f1 /proc/loadavg) Gbit/s=$g pinned=$(grep -c pinned /tmp/spray5/lo-srv) $(cat /tmp/spray5/lo-cli /tmp/spray5/lo-srv | tr ' ' '\n' | grep -E '^(tx_retransmit|tx_sr_nak|rx_sr_spurious)=' | paste -sd' ')"
done; done
