#!/usr/bin/env bash
# Builds bench/diag_tool against a build folder's libraries (default: the newest build-*/ with
# libms_traces.a). Usage: bench/diag_build.sh [BUILD_DIR] ; prints the tool's path.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-}"
if [[ -z "$build" ]]; then
  build="$(ls -td "$root"/build*/ 2>/dev/null | while read -r d; do
    [[ -f "$d/libms_traces.a" ]] && { echo "${d%/}"; break; }; done)"
fi
[[ -f "$build/libms_traces.a" ]] || { echo "no libms_traces.a in '$build'" >&2; exit 1; }
out="$build/diag_tool"
if [[ ! -x "$out" || "$root/bench/diag_tool.cc" -nt "$out" || "$build/libms_traces.a" -nt "$out" ]]; then
  g++ -std=c++17 -O2 -Wall -Wextra -Wno-unused-parameter -I"$root" -I"$build/gen" \
    "$root/bench/diag_tool.cc" -o "$out" \
    "$build/libms_traces.a" "$build/libms_planner.a" "$build/libms_topology.a" \
    "$build/libms_base.a" "$build/libms_proto.a" -lprotobuf -lpthread
fi
echo "$out"
