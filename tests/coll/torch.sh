#!/bin/sh
# SPDX-License-Identifier: MIT
# A PyTorch check under uroce-launch, with Debian's python3 and
# python3-torch (scripts/deps.sh): tests/coll/ddp_check.py (uroce's DDP
# hook, python/uroce/ddp.py, against gloo's allreduce) or
# torch_dist_check.py (the "uroce" torch.distributed backend,
# python/uroce/dist.py). Every rank must print "... checks passed". A few
# seconds, most of them importing torch.
#   torch.sh BINDIR SRCDIR CHECK.py NRANKS
set -u
bin=$1
src=$2
check=$3
np=$4
py=/usr/bin/python3
$py -c 'import torch' 2>/dev/null || { echo "SKIP: no python3-torch"; exit 77; }
export UROCE_PYTHON_DIR="$src/python"
if [ -r "$bin/../lib/uroce-preload" ]; then
	LD_PRELOAD="$(cat "$bin/../lib/uroce-preload")${LD_PRELOAD:+ $LD_PRELOAD}"
	ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
	export LD_PRELOAD ASAN_OPTIONS
fi
store=$(mktemp -u /tmp/uroce-torch-XXXXXX)
trap 'rm -f "$store"' EXIT
# gloo's pairs on loopback (a test namespace may have nothing else).
out=$(TORCH_STORE=$store GLOO_SOCKET_IFNAME=lo OMP_NUM_THREADS=1 timeout 150 \
	"$bin/uroce-launch" -n "$np" $py "$src/tests/coll/$check" 2>&1)
rc=$?
passed=$(echo "$out" | grep -c "checks passed")
if [ $rc != 0 ] || [ "$passed" != "$np" ]; then
	echo "FAIL: rc=$rc"; echo "$out"; exit 1
fi
echo "$out" | grep -E "hook calls|passed"
