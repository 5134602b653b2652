#!/usr/bin/env bash
# Install what uroce needs to build and test on Debian 12 (bookworm).
# Idempotent; uses sudo when not root.
set -euo pipefail
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
PKGS=(
  build-essential cmake pkg-config clang libclang-rt-14-dev
  libibverbs-dev librdmacm-dev ibverbs-utils perftest rdmacm-utils python3-pyverbs
  libpcap-dev zlib1g-dev libssl-dev libnetfilter-queue-dev
  tshark iproute2 iptables iputils-ping ethtool iperf3 sockperf gnuplot-nox ucx-utils libfabric-bin
  openmpi-bin libopenmpi-dev python3
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
