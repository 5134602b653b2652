#!/bin/sh
# SPDX-License-Identifier: MIT
# The Python binding (python/uroce) under uroce-launch: tests/coll/
# py_check.py on 2 ranks over shared memory and on 3 over RoCEv2 in UDP
# (--no-shm), with Debian's python3 and python3-numpy.
#   python.sh BINDIR SRCDIR
set -u
bin=$1
src=$2
py=/usr/bin/python3
$py -c 'import numpy' 2>/dev/null || { echo "SKIP: no python3-numpy"; exit 77; }
export UROCE_PYTHON_DIR="$src/python"
# A sanitized build: python3 itself is not, so it needs the runtimes
# preloaded (as uroce-run does for other programs), and python's own
# allocations are not ours to check.
if [ -r "$bin/../lib/uroce-preload" ]; then
	LD_PRELOAD="$(cat "$bin/../lib/uroce-preload")${LD_PRELOAD:+ $LD_PRELOAD}"
	ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
	export LD_PRELOAD ASAN_OPTIONS
fi
fail=0
for run in "2" "3 --no-shm"; do
	set -- $run
	n=$1
	shift
	seed=$(od -An -tu2 -N2 /dev/urandom | tr -d ' ')
	out=$(UROCE_PY_SEED=$seed timeout 120 \
		"$bin/uroce-launch" -n "$n" "$@" $py "$src/tests/coll/py_check.py" 2>&1)
	rc=$?
	passed=$(echo "$out" | grep -c "checks passed")
	if [ $rc != 0 ] || [ "$passed" != "$n" ]; then
		echo "FAIL: $n ranks $* (seed $seed): rc=$rc"; echo "$out"; fail=1
	else
		echo "ok: $n ranks $*: $(echo "$out" | grep "ranks, seed")"
		echo "$out" | grep "checks passed" | sed 's/^/    /'
	fi
done
exit $fail
