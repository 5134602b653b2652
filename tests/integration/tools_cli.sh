#!/bin/sh
# SPDX-License-Identifier: MIT
# Every tool names a bad argument and exits 2, and a tool that finds
# nothing to do says so and exits non-zero (issue 47): uroce-stat,
# uroce-coll-perf, uroce-sim (uroce-decode: tests/wire/decode_cli.sh);
# and the library says why a device does not open and why a QP without
# a GRH does not connect.
#   tools_cli.sh BINDIR
set -u
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# expect RC MESSAGE CMD...: exit status RC and MESSAGE on stderr.
expect() {
	want=$1 msg=$2
	shift 2
	"$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ $rc != "$want" ] || ! grep -qF -- "$msg" "$tmp/err"; then
		echo "FAIL: $*: exit $rc (want $want), stderr: $(cat "$tmp/err")"
		fail=1
	else
		echo "ok: $*: $rc, $(head -1 "$tmp/err")"
	fi
}

expect 2 "-p/--pid 'abc': expected a process ID" "$bin/uroce-stat" -p abc
expect 1 "no running uroce process with device nosuchdev" "$bin/uroce-stat" -d nosuchdev
expect 1 "no running uroce process with pid 1" "$bin/uroce-stat" -p 1
expect 2 "-c/--count 'abc': expected a positive number" "$bin/uroce-stat" -c abc -w
expect 2 "--csv needs -w/--watch" "$bin/uroce-stat" --csv
expect 2 "-i/--interval '0'" "$bin/uroce-stat" -w -i 0
expect 2 "unexpected argument 'x'" "$bin/uroce-stat" x

expect 2 "-b/--minbytes 'abc': expected a size" "$bin/uroce-coll-perf" -b abc -e abc
expect 2 "-n/--iters 'x': expected a positive number" "$bin/uroce-coll-perf" -n x
expect 2 "-b/--minbytes 1048576 is above -e/--maxbytes 4096" "$bin/uroce-coll-perf" -b 1M -e 4K
expect 2 "-o/--op 'foo'" "$bin/uroce-coll-perf" -o foo
expect 2 "-f/--stepfactor '1': expected a number above 1" "$bin/uroce-coll-perf" -f 1
# Under uroce-launch only rank 0 says it (every rank parses the same).
RANK=1 "$bin/uroce-coll-perf" -n x 2>"$tmp/err"
rc=$?
if [ $rc != 2 ] || [ -s "$tmp/err" ]; then
	echo "FAIL: rank 1 with a bad -n: exit $rc, stderr: $(cat "$tmp/err")"; fail=1
else
	echo "ok: rank 1 with a bad -n: 2, silent"
fi

# uroce-launch: ranks that outnumber the CPUs stay in its session (the
# shared segments' spin yields to the rank beside it only inside one
# autogroup); a rank with a CPU of its own leads a session; every rank
# leads its process group (the launcher's killpg).
printf '#!/bin/sh\necho "$$ $(cut -d")" -f2 /proc/$$/stat | cut -d" " -f4,5)"\n' >"$tmp/sid.sh"
chmod +x "$tmp/sid.sh"
ours=$(cut -d")" -f2 /proc/$$/stat | cut -d" " -f5)
n=$(($(nproc) + 1))
"$bin/uroce-launch" -n "$n" --no-prefix "$tmp/sid.sh" >"$tmp/out" 2>"$tmp/err"
if [ "$(wc -l <"$tmp/out")" != "$n" ] || awk -v s="$ours" '$1 != $2 || $3 != s { bad = 1 } END { exit !bad }' "$tmp/out"; then
	echo "FAIL: uroce-launch -n $n: want every rank in session $ours, its own group: $(cat "$tmp/out" "$tmp/err")"; fail=1
else
	echo "ok: uroce-launch -n $n: ranks in the launcher's session $ours"
fi
"$bin/uroce-launch" -n 1 --no-prefix "$tmp/sid.sh" >"$tmp/out" 2>"$tmp/err"
if [ "$(wc -l <"$tmp/out")" != 1 ] || awk '$1 != $2 || $1 != $3 { bad = 1 } END { exit !bad }' "$tmp/out"; then
	echo "FAIL: uroce-launch -n 1: want a session of the rank's own: $(cat "$tmp/out" "$tmp/err")"; fail=1
else
	echo "ok: uroce-launch -n 1: the rank leads its session"
fi

expect 1 "uroce-settings: UROCE_SHM_RING_KB=1: out of range; allowed: 64..262144" \
	env UROCE_SHM_RING_KB=1 "$bin/uroce-settings"
expect 2 "unexpected argument 'x'" "$bin/uroce-settings" x
# The collectives refuse their bad settings before anything else.
expect 1 "uroce: UROCE_COLL_QP_TIMEOUT=40: out of range; allowed: 1..31 (default 14)" \
	env UROCE_COLL_QP_TIMEOUT=40 "$bin/uroce-coll-perf" -b 4K -e 4K -n 1 -w 0
expect 2 "nothing to simulate: give a workload" "$bin/uroce-sim"
expect 2 "-o $tmp/no/such: cannot write $tmp/no/such_summary.csv" \
	"$bin/uroce-sim" --workload ring -o "$tmp/no/such"
expect 2 "unexpected argument 'x'" "$bin/uroce-sim" --workload ring x

# build/bin holds the tools only (test and bench programs live in
# build/tests and build/bench), and every tool answers --help.
for t in "$bin"/*; do
	case "${t##*/}" in
	uroce-*) ;;
	*) echo "FAIL: $t in the tools' directory is not a uroce-* tool"; fail=1; continue ;;
	esac
	if ASAN_OPTIONS=detect_leaks=0 "$t" --help >"$tmp/out" 2>&1 && [ -s "$tmp/out" ]; then
		:
	else
		echo "FAIL: ${t##*/} --help: $(head -3 "$tmp/out")"; fail=1
	fi
done
echo "ok: $(ls "$bin" | wc -l) tools in $bin, each answers --help"

# uroce-run: a program that cannot start is named, with a shell's status
# and no shell line number.
expect 127 "uroce-run: nonexistent-prog: command not found" "$bin/uroce-run" nonexistent-prog
if grep -q "line\|: [0-9]*: " "$tmp/err"; then
	echo "FAIL: uroce-run leaks a shell line: $(cat "$tmp/err")"; fail=1
fi
expect 127 "uroce-run: $tmp/none: not found" "$bin/uroce-run" "$tmp/none"
expect 126 "uroce-run: $tmp: not an executable file" "$bin/uroce-run" "$tmp"
expect 2 "uroce-run: unknown option --bogus" "$bin/uroce-run" --bogus true

# The library's reasons, through unmodified programs.
if command -v ibv_devinfo >/dev/null && command -v ibv_rc_pingpong >/dev/null; then
	UROCE_IP=192.0.2.77 "$bin/uroce-run" ibv_devinfo >/dev/null 2>"$tmp/err"
	if grep -q "uroce: cannot open uroce0 on 192.0.2.77 UDP port .*not an address of this machine" "$tmp/err"; then
		echo "ok: UROCE_IP not on this machine: $(head -1 "$tmp/err")"
	else
		echo "FAIL: UROCE_IP not on this machine: $(cat "$tmp/err")"; fail=1
	fi
	# A bad setting is refused by the one parser, naming it and its range;
	# the device does not open.
	for kv in "UROCE_SHM_RING_KB=1|out of range; allowed: 64..262144 (default 8192)" \
		  "UROCE_SHM_RING_KB=abc|not a number; allowed: 64..262144" \
		  "UROCE_SHM_RING_KB=-3|not a number; allowed: 64..262144" \
		  "UROCE_PORT=0|out of range; allowed: 1..65535 (default 4791)" \
		  "UROCE_GSO=maybe|not 0 or 1; allowed: 0|1" \
		  "UROCE_ICRC=strictest|not one of the choices; allowed: auto|strict|off"; do
		set="${kv%%|*}" msg="${kv#*|}"
		env "$set" UROCE_IP=127.0.0.1 "$bin/uroce-run" ibv_devinfo >/dev/null 2>"$tmp/err"
		rc=$?
		if [ $rc != 0 ] && grep -qF "uroce: $set: $msg" "$tmp/err"; then
			echo "ok: $set refused: $(head -1 "$tmp/err")"
		else
			echo "FAIL: $set: exit $rc, stderr: $(cat "$tmp/err")"; fail=1
		fi
	done
	# UROCE_LOG: off by default; info traces the device opening and the
	# QP's connection steps with timestamps, into UROCE_LOG_FILE (%p: pid).
	UROCE_IP=127.0.0.1 "$bin/uroce-run" ibv_devinfo >/dev/null 2>"$tmp/err"
	if grep -q "uroce INFO" "$tmp/err"; then
		echo "FAIL: a log line without UROCE_LOG: $(cat "$tmp/err")"; fail=1
	fi
	expect 1 "uroce: UROCE_LOG=loud: not one of the choices; allowed: error|warn|info|debug (default warn)" \
		env UROCE_LOG=loud UROCE_IP=127.0.0.1 "$bin/uroce-run" ibv_devinfo
	lport=$((20000 + $$ % 10000))
	UROCE_LOG=info UROCE_LOG_FILE="$tmp/log.s.%p" UROCE_IP=127.0.0.63 timeout 10 \
		"$bin/uroce-run" ibv_rc_pingpong -g 0 -n 2 -p $lport >/dev/null 2>&1 &
	s=$!
	sleep 0.5
	UROCE_LOG=info UROCE_LOG_FILE="$tmp/log.c.%p" UROCE_IP=127.0.0.64 timeout 10 \
		"$bin/uroce-run" ibv_rc_pingpong -g 0 -n 2 -p $lport 127.0.0.63 >/dev/null 2>&1
	wait $s
	cat "$tmp"/log.c.* >"$tmp/log.c" 2>/dev/null
	ts='^\[[0-9]*\.[0-9]\{6\}\] \[[^]]*:[0-9]*:[0-9]*\] uroce INFO  '
	if grep -q "${ts}uroce0: opened on 127.0.0.64 UDP port 4791" "$tmp/log.c" &&
		grep -q "${ts}QP 0x[0-9a-f]*: RTR: peer QP 0x[0-9a-f]* at ::ffff:127.0.0.63" "$tmp/log.c" &&
		grep -q "${ts}QP 0x[0-9a-f]*: RTS: sq_psn" "$tmp/log.c" && ls "$tmp"/log.s.* >/dev/null 2>&1; then
		echo "ok: UROCE_LOG=info UROCE_LOG_FILE: $(grep RTR "$tmp/log.c" | head -1)"
	else
		echo "FAIL: UROCE_LOG=info: $(cat "$tmp"/log.* 2>&1)"; fail=1
	fi
	UROCE_IP=127.0.0.61 timeout 10 "$bin/uroce-run" ibv_rc_pingpong -p 18561 >"$tmp/s" 2>&1 &
	s=$!
	sleep 0.5
	UROCE_IP=127.0.0.62 timeout 10 "$bin/uroce-run" ibv_rc_pingpong -p 18561 127.0.0.61 >"$tmp/c" 2>&1
	wait $s
	if grep -q "uroce: an address without a GRH .*-g 0" "$tmp/s" "$tmp/c"; then
		echo "ok: pingpong without -g: the GID hint"
	else
		echo "FAIL: pingpong without -g: no hint"; cat "$tmp/s" "$tmp/c"; fail=1
	fi
fi
# uroce-stat shows its own network namespace's processes (/dev/shm is
# shared by all): a device context in another namespace is left out and
# said so, and --all-netns shows it. Needs unshare -n (root).
if unshare -n true 2>/dev/null; then
	unshare -n sh -c 'ip link set lo up; exec "$0/uroce-run" ibv_rc_pingpong -g 1 -p 18562' \
		"$bin" >"$tmp/ns" 2>&1 &
	o=$!
	for i in $(seq 100); do ls /dev/shm/uroce-$o-* >/dev/null 2>&1 && break; sleep 0.05; done
	expect 1 "1 counters file(s) of processes in other network namespaces left out (--all-netns shows them)" \
		"$bin/uroce-stat" -p $o
	if "$bin/uroce-stat" --all-netns -p $o 2>&1 | grep -q "^uroce-$o-uroce0: pid $o dev uroce0"; then
		echo "ok: uroce-stat --all-netns shows pid $o of another namespace"
	else
		echo "FAIL: uroce-stat --all-netns -p $o: $("$bin/uroce-stat" --all-netns -p $o 2>&1)"; fail=1
	fi
	kill $o 2>/dev/null; wait $o 2>/dev/null
else
	echo "note: unshare -n not allowed here: the namespace check of uroce-stat skipped"
fi
exit $fail
