#!/bin/sh
# SPDX-License-Identifier: MIT
# Run one test in a network namespace of its own (every ctest test goes
# through here: tests/CMakeLists.txt). The tests bind fixed addresses and
# ports on lo (127.0.0.2, .3, UDP 4791, TCP 18515, ...); two checkouts, two
# users or two CI jobs that run the suite on one machine would otherwise
# take each other's packets and ports. In its own namespace each test has
# a lo of its own, and its named namespaces (ip netns add) carry its pid.
#   netns-run.sh CMD ARGS...
# UROCE_TEST_NETNS=0 runs the test on the machine's own network (a test
# that must see the machine's interfaces; nothing in the suite does).
# Root gets `unshare -n`; another user `unshare -rn` (a user namespace)
# where the kernel allows it; failing both, the test runs unisolated and
# says so on stderr.
case "${UROCE_TEST_NETNS:-1}" in
0 | n | no | off | false) exec "$@" ;;
1 | y | yes | on | true) ;;
*)
	echo "netns-run: UROCE_TEST_NETNS=$UROCE_TEST_NETNS: not a boolean; allowed: 0|1 (default 1)" >&2
	exit 2
	;;
esac
[ -n "${UR_NETNS_RUN_INSIDE:-}" ] && exec "$@"
export UR_NETNS_RUN_INSIDE=1
# lo starts down in a new namespace; everything the tests use of
# 127.0.0.0/8 is lo's once it is up.
up='ip link set lo up && exec "$@"'
if [ "$(id -u)" = 0 ] && unshare -n true 2>/dev/null; then
	exec unshare -n sh -c "$up" sh "$@"
elif unshare -rn true 2>/dev/null; then
	exec unshare -rn sh -c "$up" sh "$@"
fi
echo "netns-run: no network namespace (unshare -n/-rn failed): running on the machine's own lo, where another run of the suite may collide" >&2
exec "$@"
