#!/bin/sh
# Build the fuzz preset and run fuzz_decode for N seconds (default 60),
# starting from the committed seed corpus. Fails on any crash.
# Usage: fuzz/run.sh [SECONDS]
set -eu
secs=${1:-60}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
cmake --preset fuzz >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target fuzz_decode
work=fuzz/corpus-work/decode
mkdir -p "$work"
# New inputs go to the work dir (ignored by git); the seeds stay as they are.
./build-fuzz/bin/fuzz_decode -max_total_time="$secs" -print_final_stats=1 \
	-artifact_prefix=fuzz/corpus-work/ "$work" fuzz/corpus/decode
