#!/usr/bin/env bash
# Install what uroce needs to build and test on Debian 12 (bookworm).
# Idempotent; uses sudo when not root.
set -euo pipefail
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
PKGS=(
  build-essential cmake pkg-config clang libclang-rt-14-dev
  libibverbs-dev librdmacm-dev ibverbs-utils perftest rdmacm-utils python3-pyverbs
  libpcap-dev zlib1g-dev libssl-dev libnetfilter-queue-dev libgcrypt20-dev
  tshark iproute2 iptables iputils-ping ethtool iperf3 sockperf gnuplot-nox ucx-utils libfabric-bin
  openmpi-bin libopenmpi-dev python3 python3-numpy
  python3-torch # coll_ddp: the PyTorch DDP hook (python/uroce/ddp.py)
  openssh-server # coll_lab starts sshds of its own inside lab namespaces
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # No package may start its daemon here (openssh-server would listen on
  # port 22 of the machine): policy-rc.d refuses, for this install only.
  policy=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    policy=/usr/sbin/policy-rc.d
    $SUDO sh -c "printf '#!/bin/sh\nexit 101\n' > $policy && chmod +x $policy"
    trap '$SUDO rm -f "$policy"' EXIT
  fi
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
