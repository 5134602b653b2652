#!/usr/bin/env bash
# The test command: installs dependencies, builds build/ and runs every test
# (unit, wire captures, tshark cross-check, verbs ABI and integration).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh release ${UROCE_CMAKE_ARGS:-}
ctest --test-dir build --output-on-failure -j2 "$@"
