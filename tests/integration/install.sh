#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Install (cmake --install into a DESTDIR, as the Debian package does) and
# run the demo from the installed files only, not the build tree:
#  - the layout: uroce's libibverbs.so.1/librdmacm.so.1 in the private
#    <libdir>/uroce (never beside the system's rdma-core), the tools, the
#    headers, pkg-config files, a man page per tool and uroce(7);
#  - a program built with `pkg-config uroce-coll` compiles and links;
#  - the installed uroce-run runs an ibv_rc_pingpong pair and the process
#    loads the installed libibverbs.so.1; the installed uroce-launch runs
#    uroce-coll-perf (liburoce_coll found beside the private directory)
#    and the python binding.
#   install.sh BUILDDIR         install BUILDDIR into a DESTDIR, check, run
#   install.sh --prefix /usr    check and run what is installed there (CI,
#                               after dpkg -i of the package)
set -u
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
# The library path must not lead back into the build tree.
unset LD_LIBRARY_PATH
if [ "$1" = --prefix ]; then
	dest= usr=$2
	multi=lib/$(gcc -print-multiarch 2>/dev/null || dpkg-architecture -qDEB_HOST_MULTIARCH)
else
	build=$1
	dest=$tmp/root
	if ! DESTDIR=$dest cmake --install "$build" --prefix /usr >"$tmp/install.log" 2>&1; then
		echo "FAIL: cmake --install"; cat "$tmp/install.log"; exit 1
	fi
	usr=$dest/usr
	multi=$(sed -n 's/^CMAKE_INSTALL_LIBDIR:[A-Z]*=//p' "$build/CMakeCache.txt")
fi
libdir=$usr/$multi
bin=$usr/bin

want() { # want PATH WHAT
	if [ -e "$1" ]; then echo "ok: $2: ${1#"$dest"}"; else echo "FAIL: $2: no ${1#"$dest"}"; fail=1; fi
}
want "$libdir/uroce/libibverbs.so.1" "private libibverbs"
want "$libdir/uroce/librdmacm.so.1" "private librdmacm"
want "$libdir/uroce/liburoce_view.so" "device view"
want "$libdir/liburoce_coll.so.0" "collectives library"
for b in uroce-run uroce-launch uroce-devinfo uroce-view uroce-stat uroce-sim \
	uroce-decode uroce-coll-perf uroce-settings; do
	want "$bin/$b" "tool"
	want "$usr/share/man/man1/$b.1" "man page"
done
want "$usr/share/man/man7/uroce.7" "settings man page"
for h in uroce.h coll.h stat.h; do want "$usr/include/uroce/$h" "header"; done
# Nothing of ours beside the system's rdma-core (under /usr, the package's
# file list says what is ours).
if [ -n "$dest" ]; then
	ours=$(ls "$libdir"/libibverbs* "$libdir"/librdmacm* 2>/dev/null)
else
	ours=$(dpkg -L uroce 2>/dev/null | grep -E "^$libdir/lib(ibverbs|rdmacm)")
fi
if [ -n "$ours" ]; then
	echo "FAIL: would shadow the system's rdma-core: $ours"; fail=1
else
	echo "ok: no libibverbs/librdmacm of ours in $multi"
fi
# Every man page renders without a warning.
if command -v groff >/dev/null; then
	for m in "$usr"/share/man/man1/uroce*.1 "$usr"/share/man/man7/uroce.7; do
		w=$(groff -man -Tutf8 -ww -z "$m" 2>&1)
		[ -z "$w" ] || { echo "FAIL: ${m#"$dest"}: $w"; fail=1; }
	done
fi

# pkg-config: a program using the collectives compiles and links.
if command -v pkg-config >/dev/null && command -v cc >/dev/null; then
	cat >"$tmp/p.c" <<'C'
#include <uroce/coll.h>
#include <uroce/uroce.h>
int main(void) { return uroce_comm_init == 0 || uroce_query_icrc_mode == 0; }
C
	if PKG_CONFIG_PATH=$libdir/pkgconfig cc -o "$tmp/p" "$tmp/p.c" \
		$(PKG_CONFIG_PATH=$libdir/pkgconfig pkg-config --cflags --libs uroce uroce-coll) \
		2>"$tmp/cc.err"; then
		echo "ok: pkg-config uroce uroce-coll: compiles and links"
	else
		echo "FAIL: pkg-config uroce uroce-coll:"; cat "$tmp/cc.err"; fail=1
	fi
fi

# The demo from the installed files. Addresses and port from the PID, so
# two checkouts running this at once do not meet.
a=127.$((40 + $$ % 100)).$(($$ / 100 % 250 + 1))
srv=$a.1 cli=$a.2 port=$((20000 + $$ % 10000))
if command -v ibv_rc_pingpong >/dev/null; then
	UROCE_IP=$srv timeout 60 "$bin/uroce-run" ibv_rc_pingpong -g 0 -p $port -n 200 \
		>"$tmp/s" 2>&1 &
	spid=$!
	for _ in $(seq 50); do ss -Hltn "sport = :$port" | grep -q . && break; sleep 0.1; done
	LD_DEBUG=libs UROCE_IP=$cli timeout 60 "$bin/uroce-run" ibv_rc_pingpong -g 0 \
		-p $port -n 200 $srv >"$tmp/c" 2>&1
	crc=$?
	wait $spid
	src=$?
	if [ $crc = 0 ] && [ $src = 0 ] && grep -q "200 iters" "$tmp/c"; then
		echo "ok: installed uroce-run: ibv_rc_pingpong pair ($(grep iters "$tmp/c"))"
	else
		echo "FAIL: installed uroce-run ibv_rc_pingpong: client $crc, server $src"
		grep -v "^ *[0-9]*:" "$tmp/s" "$tmp/c" | tail -20; fail=1
	fi
	if grep -q "calling init: $libdir/uroce/libibverbs.so.1" "$tmp/c"; then
		echo "ok: the client loaded the installed libibverbs.so.1"
	else
		echo "FAIL: the client did not load $libdir/uroce/libibverbs.so.1:"
		grep "calling init:.*ibverbs" "$tmp/c"; fail=1
	fi
else
	echo "FAIL: ibv_rc_pingpong not installed (ibverbs-utils)"; fail=1
fi

if timeout 60 "$bin/uroce-launch" -n 2 --ip-prefix "$a." "$bin/uroce-coll-perf" \
	-b 4K -e 64K -f 4 -n 5 -w 1 -c 1 >"$tmp/l" 2>&1; then
	echo "ok: installed uroce-launch uroce-coll-perf -c 1"
else
	echo "FAIL: installed uroce-launch uroce-coll-perf:"; tail -20 "$tmp/l"; fail=1
fi
py=/usr/bin/python3
# (A sanitized build's liburoce_coll needs the ASan runtime preloaded into
# python, which uroce-launch does not do.)
if [ ! -e "$libdir/uroce/uroce-preload" ] && "$py" -c 'import numpy' 2>/dev/null; then
	if PYTHONPATH=$usr/lib/python3/dist-packages timeout 60 "$bin/uroce-launch" -n 2 \
		--ip-prefix "$a." "$py" -c '
import uroce, numpy as np
with uroce.Comm() as c:
    x = np.full(64, c.rank + 1, dtype=np.float32)
    c.allreduce(x)
    assert (x == 3).all(), x
    assert uroce.__file__.startswith("'"$usr"'"), uroce.__file__
' >"$tmp/py" 2>&1; then
		echo "ok: installed python binding: allreduce over 2 ranks"
	else
		echo "FAIL: installed python binding:"; tail -20 "$tmp/py"; fail=1
	fi
fi
exit $fail
