#!/usr/bin/env bash
# The README's settings table and uroce(7)'s SETTINGS list are printed from
# the one settings table (src/util/settings.c) by uroce-settings.
#   scripts/settings-doc.sh [--check] BINDIR
# rewrites both between their markers, or with --check fails (exit 1,
# with a diff) when either differs from what the table prints.
set -euo pipefail
check=0
[ "${1:-}" = --check ] && { check=1; shift; }
bin=${1:?usage: settings-doc.sh [--check] BINDIR}
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin/uroce-settings" --markdown >"$tmp/md"
"$bin/uroce-settings" --man >"$tmp/man"

# splice FILE BEGIN END CONTENT: FILE with the lines between BEGIN and END
# (marker lines kept) replaced by CONTENT.
splice() {
	grep -qxF -- "$2" "$1" && grep -qxF -- "$3" "$1" ||
		{ echo "settings-doc: $1 has no '$2' ... '$3' markers" >&2; exit 1; }
	# Through the environment: awk -v would take the backslash of .\" as
	# an escape.
	B=$2 E=$3 F=$4 awk '
		$0 == ENVIRON["B"] { print; while ((getline l < ENVIRON["F"]) > 0) print l; skip = 1; next }
		$0 == ENVIRON["E"] { skip = 0 }
		!skip' "$1"
}
rc=0
for spec in "README.md|<!-- settings: begin (printed by uroce-settings --markdown: scripts/settings-doc.sh) -->|<!-- settings: end -->|md" \
	    "man/uroce.7|.\\\" settings: begin (printed by uroce-settings --man: scripts/settings-doc.sh)|.\\\" settings: end|man"; do
	IFS='|' read -r file begin end what <<<"$spec"
	splice "$file" "$begin" "$end" "$tmp/$what" >"$tmp/new"
	if [ $check = 1 ]; then
		if ! diff -u "$file" "$tmp/new"; then
			echo "settings-doc: $file differs from the settings table; run scripts/settings-doc.sh $bin" >&2
			rc=1
		else
			echo "ok: $file matches the settings table"
		fi
	elif ! cmp -s "$file" "$tmp/new"; then
		cp "$tmp/new" "$file"
		echo "settings-doc: rewrote $file"
	fi
done
exit $rc
