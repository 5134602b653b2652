#!/usr/bin/env bash
# Configure and build a preset (default: release -> build/). Extra args go to
# the configure step, e.g. scripts/build.sh release -DUROCE_WERROR=ON
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-release}
shift || true
cmake --preset "$preset" "$@" >/dev/null
cmake --build --preset "$preset" -j"$(nproc)"
