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
trap 'rm -rf "$tmp"' EXIT
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
