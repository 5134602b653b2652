#!/bin/sh
# SPDX-License-Identifier: MIT
# Conformance: rdma-core's own test suite (Debian python3-pyverbs ships it,
# gzipped, under /usr/share/doc/rdma-core/tests) run unmodified on uroce.
#
#   run.sh [BINDIR] [TEST_NAME...]
#
# BINDIR holds uroce-run (default build/bin). TEST_NAMEs (e.g.
# tests.test_mr.MWTest) restrict the run and skip the pass-count floor.
# Fails if any test fails or errors, or if fewer pass than README.md's
# "rdma-core test suite: N pass" line. test_rdmacm belongs to src/rdmacm:
# its failures are printed but do not fail this script unless
# UROCE_PYVERBS_STRICT_RDMACM=1. Env: UROCE_IP (default 127.0.0.1),
# UROCE_PYVERBS_LOG (keep the full log there).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=${1:-$root/build/bin}
[ $# -gt 0 ] && shift
suite=/usr/share/doc/rdma-core/tests
[ -f "$suite/run_tests.py" ] || { echo "SKIP: $suite missing (apt-get install python3-pyverbs)"; exit 77; }

tmp=$(mktemp -d)

# Huge pages: 3 tests (test_odp huge x2, test_parent_domain huge) map 2 MiB
# pages and skip when vm.nr_hugepages is 0. That setting is the machine's
# (not the network namespace's), so as root this script tops up the free
# 2 MiB pages to $hp_need and gives back what it added at exit; runs at
# the same time share the reservation (a count in $hp_state under a lock).
hp_sys=/proc/sys/vm/nr_hugepages
hp_need=16
hp_lock=/tmp/uroce-hugepages.lock
hp_state=/tmp/uroce-hugepages.state
hp_held=0
hp_free() { sed -n 's/^HugePages_Free: *\([0-9]*\).*/\1/p' /proc/meminfo; }
hp_reserve() {
	if [ "$(id -u)" -ne 0 ]; then
		echo "huge pages: not root, so 2 MiB huge pages are not reserved (vm.nr_hugepages=$(cat $hp_sys 2>/dev/null)): the 3 huge page tests skip unless pages are free"
		return
	fi
	if [ ! -w "$hp_sys" ] || ! command -v flock >/dev/null; then
		echo "huge pages: $hp_sys is not writable here (or no flock): the 3 huge page tests skip unless pages are free"
		return
	fi
	exec 9>"$hp_lock"
	flock 9
	count=0 old=- set=-
	[ -s "$hp_state" ] && read -r count old set <"$hp_state"
	# $hp_need free pages per run that holds the reservation: two runs at
	# once (two CI jobs) each map theirs (one job's mmap failed when they
	# shared 16). The first holder records what to give back.
	free=$(hp_free)
	need=$((hp_need * (count + 1)))
	if [ "${free:-0}" -lt $need ]; then
		cur=$(cat $hp_sys)
		[ "$count" -eq 0 ] && old=$cur
		want=$((cur + need - ${free:-0}))
		if ! echo $want >$hp_sys 2>"$tmp/hp.err"; then
			echo "huge pages: cannot set vm.nr_hugepages=$want: $(cat "$tmp/hp.err")"
			[ "$count" -eq 0 ] && old=-
		fi
		set=$(cat $hp_sys)
		[ "$set" -lt "$want" ] &&
			echo "huge pages: asked the kernel for $want 2 MiB pages, got $set (not enough free contiguous memory): huge page tests may skip"
	fi
	echo "$((count + 1)) $old $set" >"$hp_state"
	hp_held=1
	flock -u 9
}
hp_release() {
	[ $hp_held -eq 1 ] || return 0
	flock 9
	read -r count old set <"$hp_state"
	if [ "$count" -le 1 ]; then
		# Give back what we added, unless someone changed it since.
		[ "$old" != - ] && [ "$(cat $hp_sys)" = "$set" ] && echo "$old" >$hp_sys
		rm -f "$hp_state"
	else
		echo "$((count - 1)) $old $set" >"$hp_state"
	fi
	flock -u 9
}
trap 'hp_release; rm -rf "$tmp"' EXIT
hp_reserve
cp -r "$suite" "$tmp/tests"
gunzip -f "$tmp"/tests/*.gz
log=${UROCE_PYVERBS_LOG:-$tmp/run.log}

floor=$(sed -n 's/^.*rdma-core test suite: \([0-9][0-9]*\) pass.*$/\1/p' "$root/README.md" | head -n1)
[ $# -gt 0 ] && floor=0
[ -n "$floor" ] || { echo "FAIL: no 'rdma-core test suite: N pass' line in README.md"; exit 1; }

# Most tests put both QPs of a connection in this one process on uroce0,
# so the device carries traffic to its own address. The rdma_cm tests take
# the device's address as the first one of its netdev (device/net/ in the
# device view: lo), which is 127.0.0.1.
UROCE_IP=${UROCE_IP:-127.0.0.1} timeout 1200 "$bin/uroce-run" /usr/bin/python3 \
	"$tmp/tests/run_tests.py" -v --dev uroce0 --gid 0 "$@" >"$log" 2>&1
rc=$?

python3 "$here/summary.py" "$log" "$floor" "$rc"
