#!/bin/sh
# SPDX-License-Identifier: MIT
# Progress lines for people (issue 47): whole lines (each ends with a
# newline, no '\r' overwrite), human units, and an estimate of the time
# left; and uroce-stat names a counters file of another uroce build
# instead of skipping it in silence.
#   progress.sh BINDIR
set -u
bin=$1
tmp=$(mktemp -d)
sleeper=
trap 'rm -rf "$tmp"; [ -n "$sleeper" ] && kill "$sleeper" 2>/dev/null' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# uroce-sim --progress=0: a line every 65536 events (a 16-host alltoall
# of 256 KiB has ~190,000, the same every run: 2 lines and the last). A
# '\r' anywhere, or a last line without its newline, is a half-line on a
# terminal or in a log.
"$bin/uroce-sim" -s k=4 -w alltoall -s bytes=256K --progress=0 \
	>"$tmp/out" 2>"$tmp/err" || bad "uroce-sim exited $?: $(cat "$tmp/err")"
n=$(grep -c '^\[sim\] ' "$tmp/err")
[ "$n" -ge 3 ] || bad "uroce-sim: $n progress lines, want 3 or more: $(cat "$tmp/err")"
if tr -d '\n' <"$tmp/err" | grep -q "$(printf '\r')"; then
	bad "uroce-sim: a carriage return in its progress"
fi
[ "$(tail -c 1 "$tmp/err" | od -An -c | tr -d ' ')" = '\n' ] ||
	bad "uroce-sim: the last progress line has no newline"
grep -Eq '^\[sim\] t=[0-9.]+ (ns|us|ms|s), flows [0-9]+/240 done, ~[0-9.]+ (B|KiB|MiB) of 60.0 MiB sent, .*: [0-9]+% done, [0-9.]+ (us|ms|s) elapsed, ~[0-9.]+ (ns|us|ms|s|min [0-9]+ s) left$' "$tmp/err" ||
	bad "uroce-sim: no line with human units and the time left: $(head -3 "$tmp/err")"
tail -1 "$tmp/err" | grep -Eq 'flows 240/240 done, ~60.0 MiB of 60.0 MiB sent, .*: 100% done, [0-9.]+ (ms|s) elapsed$' ||
	bad "uroce-sim: the last line is not the finished run: $(tail -1 "$tmp/err")"
# The summary on stdout is unchanged by --progress.
"$bin/uroce-sim" -s k=4 -w alltoall -s bytes=256K >"$tmp/out0" 2>/dev/null
grep -v '^events\|wall_s' "$tmp/out" >"$tmp/a"
grep -v '^events\|wall_s' "$tmp/out0" >"$tmp/b"
cmp -s "$tmp/a" "$tmp/b" || bad "uroce-sim: --progress changed the summary"
[ "$fail" = 0 ] && echo "ok: uroce-sim: $n progress lines, e.g. $(sed -n 2p "$tmp/err")"

"$bin/uroce-sim" -w ring --progress=abc >/dev/null 2>"$tmp/err"
rc=$?
if [ $rc != 2 ] || ! grep -qF -- "--progress=abc: expected seconds" "$tmp/err"; then
	bad "uroce-sim --progress=abc: exit $rc, $(cat "$tmp/err")"
fi

# A counters file of a live process in another format (version 99, too
# short for this build's layout).
sleep 30 &
sleeper=$!
/usr/bin/python3 - "$sleeper" <<'PY'
import struct, sys
pid = int(sys.argv[1])
with open('/dev/shm/uroce-%d-fakedev' % pid, 'wb') as f:
    f.write(struct.pack("<QII", 0x31545345434f5255, 99, pid) + bytes(100))
PY
"$bin/uroce-stat" -p "$sleeper" >/dev/null 2>"$tmp/err"
rc=$?
rm -f "/dev/shm/uroce-$sleeper-fakedev"
if [ $rc != 1 ] || ! grep -qF "pid $sleeper is a uroce of another build (counters format 99, 116 bytes; this uroce-stat reads format" "$tmp/err"; then
	bad "uroce-stat with another build's file: exit $rc, $(cat "$tmp/err")"
else
	echo "ok: uroce-stat: $(head -1 "$tmp/err")"
fi
exit $fail
