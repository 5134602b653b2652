#!/bin/sh
# SPDX-License-Identifier: MIT
# ABI load test: every consumer gen-map.sh derived the export lists from must
# load and bind all its symbols (LD_BIND_NOW=1) against build/lib's
# libibverbs.so.1 and librdmacm.so.1. Also checks that the exports equal the
# committed maps and that the maps are current for the installed packages.
#   abi_load.sh SRCDIR LIBDIR
set -u
src=$1
lib=$2
fail=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# A sanitized build: its runtimes come first, as uroce-run does it. There
# each load takes seconds, and loading is not what the sanitizers check:
# every 4th consumer (CI's release run loads them all).
stride=1
if [ -r "$lib/uroce-preload" ]; then
	stride=4
	LD_PRELOAD=$(cat "$lib/uroce-preload")
	ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
	export LD_PRELOAD ASAN_OPTIONS
fi

bad_load() {
	grep -Eq "symbol lookup error|undefined symbol|relocation error|version .* not found|cannot open shared object" "$log"
}

# 1. Exports == map (plus the .symver'd compat no-op ibv_register_driver).
for pair in "libibverbs.so.1:src/verbs/libibverbs.map" "librdmacm.so.1:src/rdmacm/librdmacm.map"; do
	so=${pair%%:*}
	map=$src/${pair#*:}
	want=$(awk '/^[A-Z]/ { n = $1 } /^\t\t[A-Za-z_]/ { s = $1; sub(/;/, "", s); print n, s }' "$map" | LC_ALL=C sort)
	have=$(objdump -T "$lib/$so" | awk '!/\*UND\*/ && NF >= 7 && $(NF-1) !~ /^\(/ && $(NF-1) != $NF { print $(NF-1), $NF }' | LC_ALL=C sort)
	if [ "$want" != "$have" ]; then
		echo "FAIL: $so exports differ from $map:"
		printf '%s\n' "$want" >"$log.w"; printf '%s\n' "$have" >"$log.h"
		diff "$log.w" "$log.h" | head -20
		rm -f "$log.w" "$log.h"
		fail=1
	fi
done

# 2. The committed maps are what gen-map.sh derives from this system.
if ! "$src/src/verbs/gen-map.sh" --check >"$log" 2>&1; then
	echo "FAIL: maps are stale, rerun src/verbs/gen-map.sh:"
	head -30 "$log"
	fail=1
fi

# 3. Load every consumer.
n=0
for f in $("$src/src/verbs/gen-map.sh" --consumers); do
	n=$((n + 1))
	[ $(((n - 1) % stride)) = 0 ] || continue
	case "$f" in
	*.so|*.so.*)
		LD_BIND_NOW=1 LD_LIBRARY_PATH=$lib python3 -c '
import ctypes, os, sys
ctypes.CDLL(sys.argv[1], mode=os.RTLD_NOW | ctypes.RTLD_GLOBAL)' "$f" >"$log" 2>&1
		;;
	*)
		LD_BIND_NOW=1 LD_LIBRARY_PATH=$lib timeout 3 "$f" --help \
			</dev/null >"$log" 2>&1
		;;
	esac
	if bad_load; then
		echo "FAIL: $f"
		head -5 "$log"
		fail=1
	fi
done

# 4. pyverbs imports (Cython modules pull in each other).
for m in device pd mr cq qp wr addr cmid srq xrcd flow spec dmabuf fork \
	 providers.mlx5.mlx5dv providers.efa.efadv; do
	LD_BIND_NOW=1 LD_LIBRARY_PATH=$lib python3 -c "import pyverbs.$m" >"$log" 2>&1
	if bad_load || grep -q "ImportError" "$log"; then
		echo "FAIL: import pyverbs.$m"
		head -5 "$log"
		fail=1
	fi
done

# 5. Our libraries themselves resolve all their own imports.
for so in libibverbs.so.1 librdmacm.so.1; do
	LD_BIND_NOW=1 LD_LIBRARY_PATH=$lib python3 -c '
import ctypes, os, sys
ctypes.CDLL(sys.argv[1], mode=os.RTLD_NOW)' "$lib/$so" >"$log" 2>&1 || { echo "FAIL: dlopen $so"; cat "$log"; fail=1; }
done

echo "checked $n consumers (loaded 1 in ${stride})"
[ $fail = 0 ] && echo PASS
exit $fail
