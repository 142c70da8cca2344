#!/usr/bin/env bash
# Installs every build and test dependency of megascale from Debian 12's packages.
# Idempotent: skips apt entirely when everything is already present.
set -euo pipefail
pkgs=(cmake g++ make pkg-config
      libsimgrid-dev libboost-graph-dev
      protobuf-compiler libprotobuf-dev
      libgtest-dev libgmock-dev
      libopenmpi-dev openmpi-bin
      libcli11-dev nlohmann-json3-dev libyaml-cpp-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#pkgs[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
