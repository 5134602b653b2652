#!/bin/bash
# SPDX-License-Identifier: MIT
# Encryption between two uroce processes (docs/security.md "Encryption"):
# unmodified ibv_rc_pingpong over loopback, the data checked by the
# program (--chk).
#   crypt.sh BINDIR
# 1. Plain (the control): the capture shows ibv_rc_pingpong's buffer
#    pattern (runs of 0x7b) in the packets.
# 2. UROCE_CRYPT=require with AES-256-GCM, then SM4-GCM, at both ends: the
#    data arrives, every ICRC verifies (uroce-decode), tshark still takes
#    every frame as InfiniBand, every packet is sealed and the pattern is
#    nowhere in the capture.
# 3. A peer without the key (UROCE_CRYPT=off against require): the
#    exchange fails, the sealed end drops what the plain one sends
#    (rx_drop_auth) and never runs plain.
# 2b. AES-256-GCM with jumbo packets (UROCE_JUMBO=1): the messages after
#    the first leave in sealed 16 KiB packets; the data, the ICRCs and the
#    absence of the pattern are checked as in 2.
# 2a. UROCE_CRYPT=allow at both ends (negotiated, sealed) and against a
#    plain peer (plain after the wait, the exchange works).
# 4. A key file group or others can read, an unknown policy, a bad
#    algorithm, no key file: the device does not open and the message
#    names the setting.
set -u
. "$(dirname "$0")/caplib.sh"
. "$(dirname "$0")/../listen.sh"
cap_init "$1" ibv_rc_pingpong
export UROCE_STATS=1 UROCE_GSO=0

key=$dir/key
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$key"
echo >>"$key"
chmod 600 "$key"

capture() { # file host_a host_b
	dumpcap -q -i lo -f "udp port 4791 and host $2 and host $3" -w "$1" >/dev/null 2>&1 &
	cap=$!
	sleep 1
}
stop_capture() { sleep 0.3; kill -INT "$cap" 2>/dev/null; wait "$cap" 2>/dev/null; cap=; }

pingpong() { # srv_ip cli_ip srv_env cli_env tmo extra...
	local sip=$1 cip=$2 se=$3 ce=$4 tmo=$5; shift 5
	env UROCE_IP=$sip $se timeout "$tmo" "$run" ibv_rc_pingpong -g 0 -p 18517 "$@" >"$dir/s.log" 2>&1 &
	local s=$!
	wait_tcp 18517
	env UROCE_IP=$cip $ce timeout "$tmo" "$run" ibv_rc_pingpong -g 0 -p 18517 "$@" "$sip" >"$dir/c.log" 2>&1
	pc=$?
	wait $s
	ps=$?
}
# Sum of a counter over both processes (UROCE_STATS=1 prints them at exit).
counter() {
	cat "$dir/s.log" "$dir/c.log" |
		sed -n "s/.*[ ,]$1=\([0-9]*\).*/\1/p" | awk '{n += $1} END {printf "%d\n", n}'
}
pattern_frames() { # pcap: frames holding 32 bytes of 0x7b
	/usr/bin/python3 - "$1" <<'EOF'
import sys
d = open(sys.argv[1], 'rb').read()
print(d.count(b'\x7b' * 32))
EOF
}

# 1. plain
capture "$dir/plain.pcap" 127.0.78.2 127.0.78.3
pingpong 127.0.78.2 127.0.78.3 "" "" 30 -n 20 -s 4096 -c
stop_capture
n=$(pattern_frames "$dir/plain.pcap")
if [ $pc != 0 ] || [ $ps != 0 ] || [ "$n" -lt 10 ]; then
	echo "FAIL: plain: pingpong $pc/$ps, $n runs of the pattern"; cat "$dir/s.log" "$dir/c.log"; fail=1
else
	echo "ok: plain: the buffer pattern is in the capture ($n runs)"
fi

# 2. sealed, both algorithms
for alg in aes-256-gcm sm4-gcm; do
	f=$dir/$alg.pcap
	e="UROCE_CRYPT=require UROCE_CRYPT_KEY=$key UROCE_CRYPT_ALG=$alg"
	capture "$f" 127.0.78.4 127.0.78.5
	pingpong 127.0.78.4 127.0.78.5 "$e" "$e" 30 -n 20 -s 4096 -c
	stop_capture
	n=$(pattern_frames "$f")
	frames=$(tshark -r "$f" -T fields -e frame.number 2>/dev/null | wc -l)
	notib=$(tshark -r "$f" -Y '!infiniband' -T fields -e frame.number 2>/dev/null | wc -l)
	mads=$(tshark -r "$f" -Y 'infiniband.bth.destqp == 1' -T fields -e frame.number 2>/dev/null | wc -l)
	sealed=$(counter tx_sealed)
	opened=$(counter rx_opened)
	bad=$(counter rx_drop_replay)
	hellos=$(counter rx_crypt_hello)
	if [ $pc != 0 ] || [ $ps != 0 ]; then
		echo "FAIL: $alg: pingpong $pc/$ps"; cat "$dir/s.log" "$dir/c.log"; fail=1
	elif ! "$bin/uroce-decode" -q "$f" >"$dir/decode.txt" 2>&1; then
		echo "FAIL: $alg: uroce-decode"; cat "$dir/decode.txt"; fail=1
	elif [ "$n" != 0 ] || [ "$frames" -lt 40 ] || [ "$notib" != 0 ] ||
		[ "$sealed" -lt $((frames - mads)) ] || [ "$opened" -lt 40 ] || [ "$bad" != 0 ] ||
		[ "$mads" -lt 2 ] || [ "$hellos" -lt 2 ]; then
		echo "FAIL: $alg: $n runs of the pattern, $frames frames ($notib not InfiniBand, $mads negotiation MADs, $hellos taken), sealed $sealed, opened $opened, replays $bad"
		fail=1
	else
		echo "ok: $alg: data checked by the program; $frames frames ($mads negotiation MADs), ICRCs verified, no plaintext; sealed $sealed, opened $opened"
	fi
done

# 2b. sealed jumbo packets
f=$dir/jumbo.pcap
e="UROCE_CRYPT=require UROCE_CRYPT_KEY=$key UROCE_CRYPT_ALG=aes-256-gcm UROCE_JUMBO=1"
capture "$f" 127.0.78.12 127.0.78.13
pingpong 127.0.78.12 127.0.78.13 "$e" "$e" 30 -n 5 -s 100000 -m 4096 -c
stop_capture
n=$(pattern_frames "$f")
big=$(tshark -r "$f" -Y 'udp.length > 16384 && infiniband' -T fields -e frame.number 2>/dev/null | wc -l)
sealed=$(counter tx_sealed); bad=$(counter rx_drop_replay)
if [ $pc != 0 ] || [ $ps != 0 ]; then
	echo "FAIL: jumbo sealed: pingpong $pc/$ps"; cat "$dir/s.log" "$dir/c.log"; fail=1
elif ! "$bin/uroce-decode" -q "$f" >"$dir/decode.txt" 2>&1; then
	echo "FAIL: jumbo sealed: uroce-decode"; cat "$dir/decode.txt"; fail=1
elif [ "$n" != 0 ] || [ "$big" -lt 10 ] || [ "$bad" != 0 ]; then
	echo "FAIL: jumbo sealed: $n runs of the pattern, $big frames above 16 KiB, replays $bad"; fail=1
else
	echo "ok: jumbo sealed: data checked by the program; $big frames above 16 KiB, ICRCs verified, no plaintext; sealed $sealed"
fi

# 2a. allow at both ends: negotiated, sealed. allow against a plain peer
# (UROCE_CRYPT=off, which does not answer the negotiation as rxe or an
# RNIC would not): plain after the wait, and the exchange works.
e="UROCE_CRYPT=allow UROCE_CRYPT_KEY=$key"
pingpong 127.0.78.8 127.0.78.9 "$e" "$e" 30 -n 20 -s 4096 -c
sealed=$(counter tx_sealed); hellos=$(counter rx_crypt_hello)
if [ $pc != 0 ] || [ $ps != 0 ] || [ "$sealed" -lt 40 ] || [ "$hellos" -lt 2 ]; then
	echo "FAIL: allow/allow: pingpong $pc/$ps, sealed $sealed, hellos taken $hellos"; cat "$dir/s.log" "$dir/c.log"; fail=1
else
	echo "ok: allow/allow: negotiated ($hellos hellos taken), sealed $sealed"
fi
pingpong 127.0.78.10 127.0.78.11 "$e" "" 30 -n 20 -s 4096 -c
sealed=$(counter tx_sealed); tmo=$(counter crypt_neg_timeout)
if [ $pc != 0 ] || [ $ps != 0 ] || [ "$sealed" != 0 ] || [ "$tmo" != 1 ]; then
	echo "FAIL: allow/off: pingpong $pc/$ps, sealed $sealed, negotiation timeouts $tmo"; cat "$dir/s.log" "$dir/c.log"; fail=1
else
	echo "ok: allow/off: no answer, plain after the wait, data checked"
fi

# 3. a peer without the key: no connection, nothing taken plain. The
# sealed server waits for ever; its counters are read while it waits.
e="UROCE_CRYPT=require UROCE_CRYPT_KEY=$key"
env UROCE_IP=127.0.78.6 $e timeout 20 "$run" ibv_rc_pingpong -g 0 -p 18517 -n 5 -s 4096 -c >"$dir/s.log" 2>&1 &
s=$!
wait_tcp 18517
UROCE_IP=127.0.78.7 timeout 20 "$run" ibv_rc_pingpong -g 0 -p 18517 -n 5 -s 4096 -c 127.0.78.6 >"$dir/c.log" 2>&1
pc=$?
# The engine publishes its counters now and then (a loaded machine: late;
# once read as none 0.1 s after the client gave up): look for up to 5 s.
for _ in $(seq 50); do
	drops=$("$bin/uroce-stat" -a 2>/dev/null | awk '/ addr 127\.0\.78\.6 /{f=1; next} /^uroce-/{f=0} f' |
		sed -n 's/.*rx_drop_auth \([0-9]*\).*/\1/p' | head -1)
	[ "${drops:-0}" -ge 1 ] && break
	sleep 0.1
done
kill $s 2>/dev/null
wait $s
if [ $pc = 0 ] || [ "${drops:-0}" -lt 1 ]; then
	echo "FAIL: peer without the key: client exit $pc, server rx_drop_auth ${drops:-none}"; cat "$dir/s.log" "$dir/c.log"; fail=1
else
	echo "ok: peer without the key: the plain client fails (exit $pc), the sealed server dropped $drops packets"
fi

# 4. settings refused with a message naming them
opens() { # expect-regex env...
	local want=$1; shift
	env "$@" "$run" ibv_devinfo >"$dir/o.log" 2>&1
	if grep -q "$want" "$dir/o.log" && ! grep -q "hca_id" "$dir/o.log"; then
		echo "ok: refused: $*: $(grep -m1 "$want" "$dir/o.log")"
	else
		echo "FAIL: $*: expected \"$want\""; cat "$dir/o.log"; fail=1
	fi
}
cp "$key" "$dir/key644"
chmod 644 "$dir/key644"
opens "chmod 600" UROCE_CRYPT=require UROCE_CRYPT_KEY="$dir/key644"
opens "UROCE_CRYPT=maybe: not one of the choices; allowed: off|allow|require" UROCE_CRYPT=maybe UROCE_CRYPT_KEY="$key"
opens "UROCE_CRYPT_ALG" UROCE_CRYPT=require UROCE_CRYPT_KEY="$key" UROCE_CRYPT_ALG=des
opens "UROCE_CRYPT_KEY" UROCE_CRYPT=require
exit $fail
