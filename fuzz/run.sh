#!/bin/sh
# Build the fuzz preset and run each target for its share of N seconds
# (default 60), two at a time (the machine has two cores): fuzz_decode
# (packets) from the committed seed corpus beside fuzz_cm_mad (CM MADs and
# the vendor hellos) from the golden captures' MADs, N each; then
# fuzz_iwarp (MPA/DDP/RDMAP streams, seeds cut from the siw captures)
# beside fuzz_iw_conn (those streams into an iWARP responder), N/8 each;
# then fuzz_crypt (sealed packets to an encrypted QP) beside
# fuzz_sim_trace (the simulator's trace files and flow-size CDFs), N/4
# each. Fails on any crash.
# Usage: fuzz/run.sh [SECONDS]
set -eu
secs=${1:-60}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
cmake --preset fuzz >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target fuzz_decode fuzz_cm_mad fuzz_iwarp fuzz_iw_conn fuzz_crypt fuzz_sim_trace
w=fuzz/corpus-work

# fz NAME SECONDS [SEEDS]: run fuzz_NAME; new inputs go to $w/NAME (ignored
# by git), the seeds stay as they are; its output to $w/NAME.log.
fz() {
	name=$1 t=$2
	shift 2
	mkdir -p "$w/$name"
	"./build-fuzz/bin/fuzz_$name" -max_total_time="$t" -print_final_stats=1 \
		-artifact_prefix=$w/ "$w/$name" "$@" >"$w/$name.log" 2>&1
}
# pair A B: A's and B's runs (started by the caller, A in the background as
# $!), then both logs; exit 1 if either failed.
pair() {
	ra=0 rb=$1
	wait "$2" || ra=$?
	for n in $3 $4; do
		echo "--- fuzz_$n"
		tail -n 25 "$w/$n.log"
	done
	[ "$ra" = 0 ] && [ "$rb" = 0 ] || { echo "FAIL: fuzz_$3 ($ra) / fuzz_$4 ($rb)"; exit 1; }
}

# CM MADs: seeds are the MADs of the corpus packets (UD SENDs to QP 1),
# from byte 20 (BTH + DETH) on.
mkdir -p "$w/cm_mad"
for f in fuzz/corpus/decode/*; do
	[ "$(od -An -tu1 -j5 -N3 "$f" | tr -s ' ')" = " 0 0 1" ] &&
		tail -c +21 "$f" | head -c 256 >"$w/cm_mad/seed-${f##*/}"
done
fz decode "$secs" fuzz/corpus/decode & p=$!
r=0; fz cm_mad "$secs" || r=$?
pair $r $p decode cm_mad

# iWARP: a set-up byte, then one direction of a siw connection (its MPA
# Request or Reply and FPDUs), from shared/wire/siw; the codec and the
# connection core on the same seeds, an eighth of the time each.
t=$(( (secs + 7) / 8 ))
fz iwarp "$t" fuzz/corpus/iwarp & p=$!
r=0; fz iw_conn "$t" fuzz/corpus/iwarp || r=$?
pair $r $p iwarp iw_conn

# The receive side of an encrypted QP (mutations of one sealed packet)
# and the simulator's trace reader (tags, after=), a quarter each.
t=$(( (secs + 3) / 4 ))
fz crypt "$t" & p=$!
r=0; fz sim_trace "$t" fuzz/corpus/sim_trace || r=$?
pair $r $p crypt sim_trace
