# SPDX-License-Identifier: MIT
# The start the tests that capture uroce's packets share (capture.sh,
# crypt.sh, tclass.sh): BINDIR and the tools they need (SKIP, 77, only when
# one is missing), a work dir $dir, $fail, and a clean-up at exit that
# stops the capture ($cap) and runs cleanup_more if the test defines it.
#   . "$(dirname "$0")/caplib.sh"; cap_init BINDIR TOOL
cap_init() {
	bin=$(readlink -f "$1")
	run=$bin/uroce-run
	command -v dumpcap >/dev/null && command -v tshark >/dev/null || { echo "SKIP: no tshark"; exit 77; }
	command -v "$2" >/dev/null || { echo "SKIP: no $2"; exit 77; }
	dir=$(mktemp -d)
	trap cap_cleanup EXIT
	fail=0
}
cap_cleanup() {
	[ -n "${cap:-}" ] && kill "$cap" 2>/dev/null
	if declare -F cleanup_more >/dev/null; then cleanup_more; fi
	rm -rf "$dir"
}
