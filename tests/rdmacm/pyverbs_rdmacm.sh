#!/bin/sh
# SPDX-License-Identifier: MIT
# rdma-core's rdma_cm tests (tests/test_rdmacm.py from python3-pyverbs) on
# uroce. They find a device's IP as the first address of the netdev under
# /sys/class/infiniband/<dev>/device/net, which uroce-run's device view
# provides (lo, so the default UROCE_IP is lo's first address, 127.0.0.1),
# and skip without it. For a run without the view (UROCE_VIEW=0) this
# script runs a temp copy of the suite whose base.py then takes the address
# from UROCE_IP instead (a one-line patch, below). Nothing else is changed.
#   pyverbs_rdmacm.sh [BINDIR] [TEST...]    (default tests.test_rdmacm)
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-$here/../../build/bin}
[ $# -gt 0 ] && shift
suite=/usr/share/doc/rdma-core/tests
[ -f "$suite/run_tests.py" ] || { echo "SKIP: $suite missing (apt-get install python3-pyverbs)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$suite" "$tmp/tests"
gunzip -f "$tmp"/tests/*.gz
# The patch: no netdev in sysfs -> use UROCE_IP as the device's address.
python3 - "$tmp/tests/base.py" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
old = """        if not os.path.exists('/sys/class/infiniband/{}/device/net/'.format(dev)):
            self.args.append([dev, port, idx, None, None])"""
new = """        if not os.path.exists('/sys/class/infiniband/{}/device/net/'.format(dev)):
            self.args.append([dev, port, idx, os.environ.get('UROCE_IP'), None])"""
assert s.count(old) == 1, 'base.py changed: update the patch'
open(p, 'w').write(s.replace(old, new))
PY
[ $# -gt 0 ] || set -- tests.test_rdmacm
export UROCE_IP=${UROCE_IP:-127.0.0.1}
timeout 900 "$bin/uroce-run" /usr/bin/python3 "$tmp/tests/run_tests.py" -v \
	--dev uroce0 --gid 0 "$@"
