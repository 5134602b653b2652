#!/bin/sh
# SPDX-License-Identifier: MIT
# uroce's PyTorch DDP hook (python/uroce/ddp.py) against gloo's allreduce:
# tests/coll/torch_dist_check.py on 2 ranks under uroce-launch, with Debian's
# python3 and python3-torch (scripts/deps.sh). A few seconds, most of them
# importing torch.
#   ddp.sh BINDIR SRCDIR
set -u
bin=$1
src=$2
py=/usr/bin/python3
$py -c 'import torch' 2>/dev/null || { echo "SKIP: no python3-torch"; exit 77; }
export UROCE_PYTHON_DIR="$src/python"
if [ -r "$bin/../lib/uroce-preload" ]; then
	LD_PRELOAD="$(cat "$bin/../lib/uroce-preload")${LD_PRELOAD:+ $LD_PRELOAD}"
	ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
	export LD_PRELOAD ASAN_OPTIONS
fi
store=$(mktemp -u /tmp/uroce-dist-XXXXXX)
trap 'rm -f "$store"' EXIT
out=$(DIST_STORE=$store OMP_NUM_THREADS=1 timeout 150 \
	"$bin/uroce-launch" -n 3 $py "$src/tests/coll/torch_dist_check.py" 2>&1)
rc=$?
passed=$(echo "$out" | grep -c "torch.distributed checks passed")
if [ $rc != 0 ] || [ "$passed" != 3 ]; then
	echo "FAIL: rc=$rc"; echo "$out"; exit 1
fi
echo "$out" | grep -E "passed"
