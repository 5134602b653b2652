# Sourced by the collectives' failure scripts (coll_failures.sh, nbc.sh):
# expect NAME WANT_RC CMD... runs CMD, keeps its output in $log, checks its
# status (sets fail=1 and prints the output when it differs).
log=$(mktemp)
fail=0
trap 'rm -f "$log"' EXIT

expect() {
	name=$1 want=$2
	shift 2
	t0=$(date +%s)
	"$@" >"$log" 2>&1
	rc=$?
	dt=$(($(date +%s) - t0))
	if [ "$rc" != "$want" ]; then
		echo "FAIL: $name: status $rc, want $want ($dt s)"; cat "$log"; fail=1
		return 1
	fi
	echo "ok: $name ($dt s)"
}
