#!/bin/sh
# SPDX-License-Identifier: MIT
# A dead, stuck or mismatched rank makes the others fail with an error,
# never hang; uroce-launch forwards statuses and enforces --timeout.
#   coll_failures.sh BINDIR TESTDIR
set -u
bin=$1 tests=$2
launch=$bin/uroce-launch
. "$(dirname "$0")/expect.sh"

detected() { # NAME N: N ranks printed "detected"
	got=$(grep -c "detected in" "$log")
	if [ "$got" -lt "$2" ]; then
		echo "FAIL: $1: $got ranks detected the failure, want $2"; cat "$log"; fail=1
	else
		grep "detected in" "$log" | sed 's/^/    /' | head -4
	fi
}

export UROCE_COLL_TIMEOUT_MS=3000
expect "dead rank (4 ranks)" 0 "$launch" -n 4 --timeout 40 "$tests/coll_fail" die && detected die 3
expect "stuck rank (3 ranks, timeout 3 s)" 0 "$launch" -n 3 --timeout 40 "$tests/coll_fail" hang && detected hang 2
for m in count type coll vcount acount; do
	expect "mismatched $m (3 ranks)" 0 "$launch" -n 3 --timeout 40 "$tests/coll_fail" $m &&
		detected $m 3 && { grep -q "mismatch" "$log" || { echo "FAIL: $m: no mismatch message"; fail=1; }; }
done
expect "unknown UROCE_COLL_ALGO" 1 env UROCE_COLL_ALGO=bogus "$launch" -n 2 --timeout 20 "$tests/coll_fail" die &&
	{ grep -q "valid: auto ring" "$log" || { echo "FAIL: no list of algorithms"; cat "$log"; fail=1; }; }
expect "launch: status forwarded" 3 "$launch" -n 3 --timeout 20 sh -c '[ "$RANK" = 1 ] && exit 3; sleep 30'
expect "launch: --timeout" 124 "$launch" -n 2 --timeout 1 sleep 30
expect "launch: env and prefix" 0 "$launch" -n 2 sh -c 'echo "env $RANK/$WORLD_SIZE $UROCE_IP $MASTER_ADDR"'
grep -q '^\[1\] env 1/2 127.0.1.2 127.0.1.1' "$log" || { echo "FAIL: env/prefix"; cat "$log"; fail=1; }
# Binding: one CPU per rank, round robin when the ranks outnumber the CPUs.
ncpu=$(nproc)
aff='import os; print("cpus", sorted(os.sched_getaffinity(0)))'
expect "launch: bound when the ranks fit" 0 "$launch" -n "$ncpu" --report-bindings python3 -c "$aff"
[ "$(grep -c '^\[[0-9]*\] cpus \[[0-9]*\]$' "$log")" = "$ncpu" ] &&
	[ "$(grep -o '^\[[0-9]*\] cpus \[[0-9]*\]$' "$log" | sed 's/.*\[//' | sort -u | wc -l)" = "$ncpu" ] &&
	grep -q "rank 0 bound to CPU" "$log" || { echo "FAIL: not one CPU per rank"; cat "$log"; fail=1; }
expect "launch: round robin when they do not fit" 0 "$launch" -n $((ncpu + 1)) python3 -c "$aff"
[ "$(grep -c '^\[[0-9]*\] cpus \[[0-9]*\]$' "$log")" = $((ncpu + 1)) ] &&
	[ "$(grep '^\[0\] cpus' "$log" | sed 's/^\[0\] //')" = "$(grep "^\[$ncpu\] cpus" "$log" | sed 's/^\[[0-9]*\] //')" ] ||
	{ echo "FAIL: oversubscribed ranks not bound round robin"; cat "$log"; fail=1; }
expect "launch: --bind-to none" 0 "$launch" -n 1 --bind-to none --report-bindings true
grep -q "rank 0 not bound" "$log" || { echo "FAIL: --bind-to none"; cat "$log"; fail=1; }
expect "launch: bad --bind-to" 2 "$launch" -n 1 --bind-to socket true
grep -q "invalid choice" "$log" || { echo "FAIL: no usage message"; cat "$log"; fail=1; }
expect "launch: --help" 0 "$launch" --help
expect "launch: bad flag" 2 "$launch" --bogus
exit $fail
