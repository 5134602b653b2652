# SPDX-License-Identifier: MIT
# Sourced by test scripts: wait until a server listens before its client
# starts, instead of a fixed sleep (a client that finds no listener fails
# at once with "Couldn't connect"; at load 14 a 0.5 s sleep lost the race).
#   wait_tcp PORT [PREFIX...]  a TCP listener on PORT (ibv_*_pingpong's and
#                              perftest's exchange)
#   wait_cm PORT [PREFIX...]   an rdma_cm listener on PORT (uroce's is an
#                              abstract unix socket named for the port,
#                              docs/rdmacm.md; flag 00010000 = listening)
# PREFIX runs the check elsewhere (ip netns exec NS, lab_exec h2). Waits
# 10 s at most, then says so on stderr and returns 1; the client's own
# error says the rest.
wait_tcp() {
	_wl_port=$1
	shift
	for _wl in $(seq 200); do
		"$@" ss -Hltn "sport = :$_wl_port" 2>/dev/null | grep -q . && return 0
		sleep 0.05
	done
	echo "wait_tcp: no TCP listener on port $_wl_port after 10 s" >&2
	return 1
}
wait_cm() {
	_wl_port=$1
	shift
	for _wl in $(seq 200); do
		"$@" grep -q "00010000 0005 01 .*@uroce-cm/.*/$_wl_port\$" /proc/net/unix && return 0
		sleep 0.05
	done
	echo "wait_cm: no rdma_cm listener on port $_wl_port after 10 s" >&2
	return 1
}
