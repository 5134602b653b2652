#!/bin/sh
# SPDX-License-Identifier: MIT
# Two uroce builds on one address (issue 47): a sibling that speaks
# another sibling protocol makes the device refuse to open, with a line
# naming its pid, build and the address, and errno EPROTO; one of the same
# protocol but another build shares the address, and so does one that
# does not say (a build from before the names: protocol 1, this one's),
# with a warning. The other side is faked in the registry the
# processes on an address read: its abstract unix names (src/io/fwd.c).
#   builds.sh BINDIR
set -u
bin=$1
tmp=$(mktemp -d)
fake=
trap 'rm -rf "$tmp"; [ -n "$fake" ] && kill "$fake" 2>/dev/null' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
ip=127.0.0.1
# Not 4791: the machine's own uroce programs may hold it when this runs
# outside a network namespace of its own.
port=$((20000 + $$ % 20000))
export UROCE_IP=$ip UROCE_PORT=$port

# fake PROTO BUILD: a process that holds slot 77 on the address, named
# PROTO/BUILD in the registry (PROTO "none": no name, an older build).
fake() {
	[ -n "$fake" ] && kill "$fake" 2>/dev/null && wait "$fake" 2>/dev/null
	/usr/bin/python3 - "$port" "$ip" "$1" "$2" >"$tmp/fake" 2>&1 <<'PY' &
import os, socket, sys, time
port, ip, proto, build = sys.argv[1:5]
keep = []
if proto != "none":
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.bind("\0uroce/%s/%s/id/%d/%s/%s" % (port, ip, os.getpid(), proto, build))
    keep.append(s)
l = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
l.bind("\0uroce/%s/%s/77" % (port, ip))
l.listen(8)
print("ready", flush=True)
time.sleep(60)
PY
	fake=$!
	for _ in $(seq 50); do
		grep -q ready "$tmp/fake" && return 0
		sleep 0.1
	done
	bad "the fake sibling did not start: $(cat "$tmp/fake")"
}

fake 99.40 fake-9.9
"$bin/uroce-devinfo" >"$tmp/out" 2>"$tmp/err"
rc=$?
want="ERROR $ip UDP port $port is in use by pid $fake, uroce fake-9.9 speaking sibling protocol 99.40; this is uroce "
if [ $rc = 0 ] || ! grep -qF "$want" "$tmp/err" ||
   ! grep -qF "cannot open uroce0 on $ip UDP port $port: Protocol error (a uroce of another build shares the address" "$tmp/err" ||
   ! grep -qF "ibv_open_device: Protocol error" "$tmp/err"; then
	bad "another protocol: exit $rc, stderr: $(cat "$tmp/err")"
else
	echo "ok: another protocol: $(grep ERROR "$tmp/err" | sed 's/^\[[^]]*\] \[[^]]*\] //')"
fi
ours=$(sed -n 's/.* with protocol \([0-9.]*\): different builds.*/\1/p' "$tmp/err")
[ -n "$ours" ] || bad "no protocol of ours in: $(cat "$tmp/err")"

fake none x
"$bin/uroce-devinfo" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc != 0 ] || ! grep -q "hca_id:" "$tmp/out" ||
   ! grep -qF "WARN  $ip port $port: pid $fake (slot 77) does not say its build" "$tmp/err"; then
	bad "a sibling with no name: exit $rc, stderr: $(cat "$tmp/err")"
else
	echo "ok: a sibling with no name: shares, $(grep -o 'taken to speak.*' "$tmp/err")"
fi

# Same protocol, another build: they share the address.
fake "$ours" other-build-1.2
UROCE_LOG=debug "$bin/uroce-devinfo" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc != 0 ] || ! grep -q "hca_id:" "$tmp/out" ||
   ! grep -qF "sharing with pid $fake (uroce other-build-1.2, slot 77)" "$tmp/err"; then
	bad "same protocol, another build: exit $rc, stderr: $(tail -5 "$tmp/err")"
else
	echo "ok: same protocol ($ours), another build: opens and shares"
fi
exit $fail
