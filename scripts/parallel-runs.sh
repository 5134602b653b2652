#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Two runs of the suite at once on one machine do not collide (issue 47):
# runs two copies of the tests that bind fixed addresses and ports at the
# same time, from one build tree, and says whether both passed.
#   scripts/parallel-runs.sh [--unisolated] [BUILD_DIR] [REGEX]
# Each test isolates itself in a network namespace (tests/netns-run.sh).
# --unisolated sets UROCE_TEST_NETNS=0: the copies then share one lo, as
# every run did before, to show what the isolation prevents (expect
# failures). The whole script runs inside a private network namespace of
# its own, so that its deliberate collisions touch no one else's tests.
set -uo pipefail
if [ -z "${PARALLEL_RUNS_INNER:-}" ]; then
	export PARALLEL_RUNS_INNER=1
	if [ "$(id -u)" = 0 ]; then
		exec unshare -n bash -c 'ip link set lo up && exec "$0" "$@"' "$0" "$@"
	fi
	exec unshare -rn bash -c 'ip link set lo up && exec "$0" "$@"' "$0" "$@"
fi
cd "$(dirname "$0")/.."
iso=1
if [ "${1:-}" = --unisolated ]; then
	iso=0
	shift
fi
build=${1:-build}
regex=${2:-'^(verbs_rc_pingpong|verbs_ud_srq_pingpong|rdmacm_apps|integration_shm|test_offpath|integration_crypt|tools_cli)$'}
[ -f "$build/CTestTestfile.cmake" ] || { echo "parallel-runs: no build tree at $build" >&2; exit 2; }
n=$(ctest --test-dir "$build" -N -R "$regex" | sed -n 's/^Total Tests: //p')
[ "${n:-0}" -gt 0 ] || { echo "parallel-runs: no test matches $regex" >&2; exit 2; }
logs=$(mktemp -d)
echo "parallel-runs: $n tests, two copies at once from $build, isolation $([ $iso = 1 ] && echo on || echo off)"
start=$(date +%s)
for run in a b; do
	UROCE_TEST_NETNS=$iso ctest --test-dir "$build" -R "$regex" \
		--output-on-failure >"$logs/$run.log" 2>&1 &
	eval "pid_$run=\$!"
done
wait "$pid_a"; rc_a=$?
wait "$pid_b"; rc_b=$?
for run in a b; do
	echo "--- copy $run: $(grep -E '^[0-9]+% tests passed' "$logs/$run.log")"
	grep -E '\*\*\*Failed|\*\*\*Timeout|\*\*\*Exception|Skipped' "$logs/$run.log" | sed 's/^/    /'
done
echo "parallel-runs: copy a exit $rc_a, copy b exit $rc_b, $(( $(date +%s) - start )) s; logs in $logs"
[ "$rc_a" = 0 ] && [ "$rc_b" = 0 ]
