# SPDX-License-Identifier: MIT
# Shared by the client tests (ucx.sh, ofi.sh, mpi.sh, mpi_netns.sh, nccl.sh): sourced, not run.
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
		awk '{s += $1} END {printf "%.0f\n", s}' # no 1e+09 from mawk
}

# mpi_verdict NAME NP RC OUT: mpi_check's run ended well (exit 0, its PASS
# line) and the ranks' uroce devices sent at least the bytes the
# collectives must move between processes: allreduce (NP-1) x its vector,
# alltoall NP x (NP-1) blocks (mpi_check.c). Sets tx and want; 0 if so,
# else one FAIL.
mpi_verdict() {
	tx=$(counter "$4" tx_bytes)
	want=$(( ($2 - 1) * (1 + 1000 + 262144) * 8 + $2 * ($2 - 1) * (1 + 1000 + 32768) * 8 ))
	if [ "$3" -ne 0 ]; then
		bad "$1: rc=$3"; show "$4"
	elif ! grep -q "^mpi_check: $2 ranks: .* 0 wrong: PASS" "$4"; then
		bad "$1: no PASS line"; show "$4"
	elif [ "$tx" -lt "$want" ]; then
		bad "$1: the ranks' uroce devices sent $tx bytes, the collectives move at least $want"
		show "$4"
	else
		return 0
	fi
	return 1
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
