#!/usr/bin/env bash
# The main job: installs dependencies, builds, decodes the golden rxe
# captures with uroce-decode, then runs unmodified ibv_rc_pingpong between two
# processes on two loopback addresses through uroce-run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh release
shared=${UROCE_SHARED_DIR:-../shared}

echo "== uroce-decode: golden Linux rxe captures =="
for f in "$shared"/wire/rxe/*.pcap; do
  build/bin/uroce-decode -q "$f"
done

echo
echo "== ibv_rc_pingpong (Debian ibverbs-utils) on uroce, 127.0.0.2 <-> 127.0.0.3 =="
UROCE_IP=127.0.0.2 build/bin/uroce-run ibv_rc_pingpong -g 0 -n 1000 -s 4096 &
srv=$!
sleep 0.5
UROCE_IP=127.0.0.3 build/bin/uroce-run ibv_rc_pingpong -g 0 -n 1000 -s 4096 127.0.0.2
wait $srv
