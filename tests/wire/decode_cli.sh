#!/bin/sh
# CLI test of uroce-decode: exit 0 on every golden capture, 1 on a corrupted
# copy (naming the frame), 2 on a missing file or a bad flag.
# Usage: decode_cli.sh PATH/TO/uroce-decode GOLDEN_DIR
set -u
dec=$1
dir=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

[ -d "$dir" ] || fail "golden dir $dir missing"
n=0
for f in "$dir"/*.pcap; do
	"$dec" "$f" >"$tmp/out" 2>"$tmp/err" || fail "$f: exit $? ($(cat "$tmp/err"))"
	grep -q 'icrc=BAD' "$tmp/out" && fail "$f: BAD ICRC printed"
	n=$((n + 1))
done
[ "$n" -ge 13 ] || fail "only $n captures"
# IPv6, VLAN, raw IP and Linux cooked v2 link types (tests/wire/data).
data=$(dirname "$0")/data
for f in "$data"/*.pcap; do
	"$dec" "$f" >"$tmp/out" 2>"$tmp/err" || fail "$f: exit $? ($(cat "$tmp/err"))"
	grep -q 'RC_SEND_ONLY .* icrc=ok' "$tmp/out" || fail "$f: $(cat "$tmp/out")"
done
"$dec" -q "$dir"/*.pcap >"$tmp/out" || fail "-q on all files"
grep -q '214 ICRC ok, 0 bad' "$tmp/out" || fail "-q summary"

# A capture without RoCEv2 packets: nothing to decode is an error (1),
# said with the file's name.
head -c 24 "$dir/rc_send_64.pcap" >"$tmp/empty.pcap"
"$dec" "$tmp/empty.pcap" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 1 ] || fail "no RoCEv2 packet: exit $rc, want 1"
grep -q "empty.pcap: no RoCEv2 packet" "$tmp/err" || fail "no RoCEv2 packet: $(cat "$tmp/err")"

# Flip one bit in the last byte of rc_send_64.pcap: the ICRC of its last
# frame (12) no longer verifies.
cp "$dir/rc_send_64.pcap" "$tmp/bad.pcap"
chmod u+w "$tmp/bad.pcap"
size=$(wc -c <"$tmp/bad.pcap")
b=$(od -An -tu1 -j $((size - 1)) -N1 "$tmp/bad.pcap" | tr -d ' ')
printf "\\$(printf %03o $((b ^ 1)))" |
	dd of="$tmp/bad.pcap" bs=1 seek=$((size - 1)) conv=notrunc 2>/dev/null
"$dec" "$tmp/bad.pcap" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 1 ] || fail "corrupted copy: exit $rc, want 1"
grep -q 'frame 12: bad ICRC' "$tmp/err" || fail "corrupted copy: $(cat "$tmp/err")"

"$dec" "$tmp/missing.pcap" >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] || fail "missing file: exit $rc, want 2"
[ -s "$tmp/err" ] || fail "missing file: no message"
printf 'not a pcap' >"$tmp/junk.pcap"
"$dec" "$tmp/junk.pcap" >/dev/null 2>&1
[ $? -eq 2 ] || fail "junk file: want exit 2"
"$dec" --no-such-flag "$dir/rc_send_64.pcap" >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] || fail "bad flag: exit $rc, want 2"
grep -q Usage "$tmp/err" || fail "bad flag: no usage"
"$dec" >/dev/null 2>&1
[ $? -eq 2 ] || fail "no file: want exit 2"
"$dec" --help | grep -q 'Exit status' || fail "--help"
echo "decode_cli: ok ($n captures)"
