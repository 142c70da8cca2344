#!/usr/bin/env bash
# Installs missing dependencies (Debian 12 packages), then configures and builds megascale in
# ./build. Safe to re-run: both steps are incremental.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >build-configure.log 2>&1 || {
  cat build-configure.log; echo "build.sh: cmake configure failed (log above)" >&2; exit 1; }
cmake --build build -j"$jobs"
echo "build.sh: built ./build/megascale"
