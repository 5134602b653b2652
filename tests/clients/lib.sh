# SPDX-License-Identifier: MIT
# Shared by the client tests (ucx.sh, ofi.sh, mpi.sh): sourced, not run.
# Sets bin (BINDIR, first argument of the test) and tmp (removed at exit).
bin=${1:?usage: $0 BINDIR}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

need() {
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 ||
			{ echo "SKIP: $c not installed (scripts/deps.sh)"; exit 77; }
	done
}

ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }

# Sum of one UROCE_STATS=1 counter over every counters line of FILE (a
# process prints one line per device context it closed).
counter() {
	sed -n "s/.*uroce: .*counters:.* $2=\([0-9][0-9]*\).*/\1/p" "$1" |
		awk '{s += $1} END {print s + 0}'
}

# Print FILE's last lines, for a failure.
show() {
	echo "---- $1 (last 15 lines)"
	tail -n 15 "$1"
}

finish() {
	if [ "$fails" -ne 0 ]; then
		echo "$fails check(s) failed"
		exit 1
	fi
	echo "all checks passed"
}
