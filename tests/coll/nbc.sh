#!/bin/sh
# SPDX-License-Identifier: MIT
# Non-blocking operations, point-to-point, groups, sub-communicators
# (tests/coll/nbc_check.c) under uroce-launch, then failures: a rank that
# dies with requests in flight, a mismatched tag. Nothing may hang.
#   nbc.sh BINDIR TESTDIR
set -u
bin=$1 tests=$2
launch=$bin/uroce-launch
. "$(dirname "$0")/expect.sh"

count() { # NAME PATTERN N: at least N lines match
	got=$(grep -c "$2" "$log")
	if [ "$got" -lt "$3" ]; then
		echo "FAIL: $1: $got lines with '$2', want $3"; cat "$log"; fail=1
	else
		grep "$2" "$log" | sed 's/^/    /' | head -4
	fi
}

expect "nbc 2 ranks" 0 "$launch" -n 2 --timeout 60 "$tests/nbc_check" all && count "2 ranks" "all PASS" 2
expect "nbc 3 ranks, UDP" 0 env UROCE_SHM=0 "$launch" -n 3 --timeout 60 "$tests/nbc_check" all && count "3 ranks" "all PASS" 3
expect "nbc 4 ranks, no progress thread" 0 env UROCE_COLL_PROGRESS=0 "$launch" -n 4 --timeout 60 "$tests/nbc_check" all &&
	count "4 ranks" "all PASS" 4
export UROCE_COLL_TIMEOUT_MS=3000
expect "dead rank with requests in flight (4 ranks)" 0 "$launch" -n 4 --timeout 40 "$tests/nbc_check" die &&
	count die "detected in" 3
expect "mismatched tag (2 ranks)" 0 "$launch" -n 2 --timeout 40 "$tests/nbc_check" tag &&
	count tag "detected in" 2 && count tag "different count or tag" 1
exit $fail
