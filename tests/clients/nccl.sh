#!/bin/sh
# SPDX-License-Identifier: MIT
# NCCL's IB transport (net_ib) questions, asked by nccl_probe (NCCL itself
# needs a GPU): docs/verbs.md "NCCL (net_ib)".
#
#   nccl.sh BINDIR NCCL_PROBE
#
# In a network namespace of its own (77 without one) with a veth pair
# whose v0 holds 10.98.0.1, 10.98.0.2 and fd98::1, so that the device on
# v0 has several GIDs of each family and NCCL's GID selection has to read
# the gid_attrs/types files. Runs the probe under uroce-run:
# 1. UROCE_IP=127.0.0.2: one device, GID 0;
# 2. every interface (uroce-run with no UROCE_IP) and NCCL_IB_HCA naming
#    the v0 device: default selection (AF_INET, RoCE v2) = 10.98.0.1,
#    NCCL_IB_ROCE_VERSION_NUM=1 (no v1 GID) = 10.98.0.1, and an RDMA
#    WRITE WITH IMM moves data; NCCL_IB_ADDR_FAMILY=AF_INET6 = fd98::1 and
#    NCCL_IB_GID_INDEX=1 = 10.98.0.2, which are not GID 0: uroce serves
#    GID 0 only and refuses the RTR with EOPNOTSUPP (-x);
# 3. NCCL_IB_HCA=^<v0 device>: every other device that opens (those in
#    the view), = exact name: one.
if [ "${UROCE_NCCL_NS:-}" != 1 ]; then
	unshare -n true 2>/dev/null || { echo "SKIP: cannot unshare a network namespace"; exit 77; }
	exec env UROCE_NCCL_NS=1 unshare -n sh "$0" "$@"
fi
. "$(dirname "$0")/lib.sh"
probe=${2:?usage: $0 BINDIR NCCL_PROBE}
# First a veth pair with IPv6 link-local addresses only: their devices come
# before v0's and may not open (NCCL skips those; the view must still show
# the others). No duplicate address detection in this namespace: the
# link-local addresses are then there at once, not ~1 s after the links
# come up, when the device count below was already taken (the test failed
# by that race, more often on a loaded machine).
ip link set lo up &&
sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0 &&
ip link add vx0 type veth peer name vx1 && ip link set vx0 up && ip link set vx1 up &&
ip link add v0 type veth peer name v1 &&
ip addr add 10.98.0.1/24 dev v0 && ip addr add 10.98.0.2/24 dev v0 &&
ip -6 addr add fd98::1/64 dev v0 nodad &&
ip addr add 10.98.1.1/24 dev v1 &&
ip link set v0 up && ip link set v1 up || { echo "SKIP: no veth"; exit 77; }
# Unset the NCCL settings a caller may have.
unset NCCL_IB_HCA NCCL_IB_GID_INDEX NCCL_IB_ADDR_FAMILY NCCL_IB_ROCE_VERSION_NUM

run() { # NAME [VAR=VALUE...] -- PROBE ARGS
	name=$1
	shift
	if env "$@" >"$tmp/out" 2>&1 && grep -q '^nccl_probe: 0 check(s) failed: PASS' "$tmp/out"; then
		ok "$name: $(grep -c '^ok' "$tmp/out") checks"
	else
		bad "$name"
		grep -v '^ok' "$tmp/out" | tail -n 20
	fi
}

run "UROCE_IP=127.0.0.2" UROCE_IP=127.0.0.2 timeout 60 "$bin/uroce-run" "$probe" -n 1 -g 127.0.0.2

# The device on v0 (its "parent" in the view), and how many devices there are.
devs=$(timeout 60 "$bin/uroce-run" sh -c 'for d in $(ls /sys/class/infiniband); do echo "$d $(cat /sys/class/infiniband/$d/parent)"; done')
dev=$(echo "$devs" | awk '$2 == "v0" {print $1}')
ndev=$(echo "$devs" | grep -c .)
[ -n "$dev" ] || { bad "no uroce device on v0: $devs"; finish; }

for case in "10.98.0.1 -" "10.98.0.1 - NCCL_IB_ROCE_VERSION_NUM=1" \
	"fd98::1 -x NCCL_IB_ADDR_FAMILY=AF_INET6" "10.98.0.2 -x NCCL_IB_GID_INDEX=1"; do
	set -- $case
	gid=$1 x=$2
	shift 2
	[ "$x" = - ] && x=
	run "NCCL_IB_HCA=$dev $*" NCCL_IB_HCA="$dev" "$@" timeout 60 "$bin/uroce-run" "$probe" -n 1 -g "$gid" $x
done
run "NCCL_IB_HCA=^$dev ($ndev devices)" NCCL_IB_HCA="^$dev" timeout 60 "$bin/uroce-run" "$probe" -n $((ndev - 1))
run "NCCL_IB_HCA==$dev:1" NCCL_IB_HCA="=$dev:1" timeout 60 "$bin/uroce-run" "$probe" -n 1 -g 10.98.0.1
finish
