#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration: unmodified rdma_cm programs across network namespaces (two
# lab hosts behind a forwarding switch, tests/lab/netns.sh): the server in
# h2, the client in h1, each with its own uroce device (UROCE_IP = its lab
# address), CM MADs and data through the switch as between two machines.
# The same programs and checks as apps.sh: rping (-C 100), ucmatose,
# rdma_server/rdma_client, ib_write_bw -R, ib_read_bw -R, ib_send_lat -R;
# and rping to a port nobody listens on (REJECTED).
#   netns.sh BINDIR
# Exit 77 only when network namespaces cannot be used (not root, no `ip
# netns`); a missing program is a failure.
set -uo pipefail
BIN=$(cd "$1" && pwd)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
run=$BIN/uroce-run

[[ $(id -u) -eq 0 ]] && command -v ip >/dev/null && ip netns list >/dev/null 2>&1 ||
	{ echo "SKIP: network namespaces unavailable (needs root and ip netns)"; exit 77; }
for t in rping ucmatose rdma_server rdma_client ib_write_bw ib_read_bw ib_send_lat; do
	command -v $t >/dev/null || { echo "FAIL: $t not installed (rdmacm-utils, perftest)"; exit 1; }
done

source "$HERE/../lab/netns.sh"
source "$HERE/../listen.sh"
WORK=$(mktemp -d /tmp/uroce-cm-netns.XXXXXX)
fail=0
# Processes in a lab host are ours: kill them by the namespace's pids.
kill_host() { ip netns pids "$(lab_ns "$1")" 2>/dev/null | xargs -r kill -9 2>/dev/null; }
cleanup() {
	kill_host h1
	kill_host h2
	lab_down 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
T0=$SECONDS
lab_up --hosts 2 >/dev/null 2>&1 || { echo "FAIL: lab_up"; exit 1; }
IP1=$(lab_ip h1)
IP2=$(lab_ip h2)
echo "== lab $UROCE_LAB: client h1 $IP1 -> server h2 $IP2"

# pair NAME PORT EXPECT SERVER-CMD -- CLIENT-CMD: both exit 0, the client
# prints EXPECT.
pair() {
	local name=$1 lport=$2 expect=$3 scmd=() spid crc src
	shift 3
	while [[ $1 != -- ]]; do scmd+=("$1"); shift; done
	shift
	UROCE_IP=$IP2 lab_exec h2 timeout 60 "$run" "${scmd[@]}" >"$WORK/s" 2>&1 &
	spid=$!
	wait_cm "$lport" lab_exec h2 || echo "note: $name: no listener on $lport after 10 s"
	UROCE_IP=$IP1 lab_exec h1 timeout 60 "$run" "$@" >"$WORK/c" 2>&1
	crc=$?
	wait $spid
	src=$?
	if [[ $crc != 0 || $src != 0 ]] || ! grep -q -- "$expect" "$WORK/c"; then
		echo "FAIL: $name: client rc=$crc, server rc=$src"
		echo "--- server: ${scmd[*]}"; cat "$WORK/s"; echo "--- client: $*"; cat "$WORK/c"
		fail=1
	else
		echo "ok: $name: $(grep -- "$expect" "$WORK/c" | tail -n 1)"
	fi
}

pair rping 7174 "rdma-ping-99:" rping -s -a "$IP2" -v -C 100 -- rping -c -a "$IP2" -C 100 -v
pair ucmatose 7471 "return status 0" ucmatose -- ucmatose -s "$IP2"
pair rdma_client 7471 "rdma_client: end 0" rdma_server -- rdma_client -s "$IP2"
pair ib_write_bw 18515 "^ 65536" ib_write_bw -R -n 500 -- ib_write_bw -R -n 500 "$IP2"
pair ib_read_bw 18515 "^ 65536" ib_read_bw -R -n 500 -- ib_read_bw -R -n 500 "$IP2"
pair ib_send_lat 18515 "^ 2 " ib_send_lat -R -n 500 -- ib_send_lat -R -n 500 "$IP2"

# No listener on the port: REJECTED (invalid service ID), well before the
# CM timeout (which would give UNREACHABLE).
UROCE_IP=$IP2 lab_exec h2 timeout 20 "$run" rping -s -a "$IP2" -p 9999 -C 1 >/dev/null 2>&1 &
spid=$!
wait_cm 9999 lab_exec h2
out=$(UROCE_IP=$IP1 lab_exec h1 timeout 10 "$run" rping -c -a "$IP2" -p 9998 -C 1 -v 2>&1)
rc=$?
kill_host h2
wait $spid 2>/dev/null
if [[ $rc == 124 ]] || ! grep -q "RDMA_CM_EVENT_REJECTED, error 8" <<<"$out"; then
	echo "FAIL: rping to a port without listener (rc=$rc): $out"
	fail=1
else
	echo "ok: no listener -> RDMA_CM_EVENT_REJECTED, error 8"
fi
echo "== done in $((SECONDS - T0)) s"
exit $fail
