#!/bin/sh
# Build the fuzz preset and run each target for N seconds (default 60):
# fuzz_decode (packets) from the committed seed corpus, fuzz_cm_mad (CM
# MADs) from the golden captures' MADs. Fails on any crash.
# fuzz_iwarp (MPA/DDP/RDMAP streams) from seeds cut from the siw captures
# and fuzz_iw_conn (those streams into an iWARP responder) an eighth each,
# fuzz_crypt (sealed packets to an encrypted QP) and fuzz_sim_trace (the
# simulator's trace files and flow-size CDFs) a quarter of SECONDS each.
# Usage: fuzz/run.sh [SECONDS]
set -eu
secs=${1:-60}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
cmake --preset fuzz >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target fuzz_decode fuzz_cm_mad fuzz_iwarp fuzz_iw_conn fuzz_crypt fuzz_sim_trace
work=fuzz/corpus-work/decode
mkdir -p "$work"
# New inputs go to the work dir (ignored by git); the seeds stay as they are.
./build-fuzz/bin/fuzz_decode -max_total_time="$secs" -print_final_stats=1 \
	-artifact_prefix=fuzz/corpus-work/ "$work" fuzz/corpus/decode

# CM MADs: seeds are the MADs of the corpus packets (UD SENDs to QP 1),
# from byte 20 (BTH + DETH) on.
work=fuzz/corpus-work/cm_mad
mkdir -p "$work"
for f in fuzz/corpus/decode/*; do
	[ "$(od -An -tu1 -j5 -N3 "$f" | tr -s ' ')" = " 0 0 1" ] &&
		tail -c +21 "$f" | head -c 256 >"$work/seed-${f##*/}"
done
./build-fuzz/bin/fuzz_cm_mad -max_total_time="$secs" -print_final_stats=1 \
	-artifact_prefix=fuzz/corpus-work/ "$work"

# iWARP: a set-up byte, then one direction of a siw connection (its MPA
# Request or Reply and FPDUs), from shared/wire/siw. A quarter of the
# time, shared by the codec and the connection core on the same seeds
# (the CI budget is shared).
work=fuzz/corpus-work/iwarp
mkdir -p "$work"
./build-fuzz/bin/fuzz_iwarp -max_total_time="$(( (secs + 7) / 8 ))" -print_final_stats=1 \
	-artifact_prefix=fuzz/corpus-work/ "$work" fuzz/corpus/iwarp
work=fuzz/corpus-work/iw_conn
mkdir -p "$work"
./build-fuzz/bin/fuzz_iw_conn -max_total_time="$(( (secs + 7) / 8 ))" -print_final_stats=1 \
	-artifact_prefix=fuzz/corpus-work/ "$work" fuzz/corpus/iwarp

# The receive side of an encrypted QP: a quarter of the time (its inputs
# are mutations of one sealed packet; the CI budget is shared).
work=fuzz/corpus-work/crypt
mkdir -p "$work"
./build-fuzz/bin/fuzz_crypt -max_total_time="$(( (secs + 3) / 4 ))" -print_final_stats=1 \
	-artifact_prefix=fuzz/corpus-work/ "$work"

# The simulator's trace reader (tags, after=): a quarter of the time too.
work=fuzz/corpus-work/sim_trace
mkdir -p "$work"
./build-fuzz/bin/fuzz_sim_trace -max_total_time="$(( (secs + 3) / 4 ))" -print_final_stats=1 \
	-artifact_prefix=fuzz/corpus-work/ "$work" fuzz/corpus/sim_trace
