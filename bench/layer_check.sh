#!/usr/bin/env bash
# The planner's GPU time for one layer pass of vTrain's stack against a real GPU's, with no GPU:
# builds bench/layer_probe.cc against the build, lists the plan's per-pass GPU time and kernel
# count over bench/eager_layer.py's grid, and holds them against a stored run (default: one H200,
# bench/data/h200-eager-layer-2026-11-26/eager-nomask.json).
# On a GPU machine, measure afresh instead:
#   bench/eager_layer.py measured.json && bench/layer_check.sh [BUILD_DIR] measured.json
#   bench/layer_check.sh [BUILD_DIR] [MEASURED.json]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
measured="${2:-$root/bench/data/h200-eager-layer-2026-11-26/eager-nomask.json}"
[[ -f "$build/libms_planner.a" ]] || { echo "build megascale in '$build' first" >&2; exit 1; }
[[ -f "$measured" ]] || { echo "layer_check: $measured: no such file" >&2; exit 1; }
gpu=$(/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["device"]; print(next((g for g in ("H200","H100","H800","A100","A800") if g in d), ""))' "$measured")
[[ -n "$gpu" ]] || { echo "$measured: its device names no catalogue GPU" >&2; exit 1; }
probe="$build/layer_probe"
if [[ ! -x "$probe" || "$root/bench/layer_probe.cc" -nt "$probe" || "$build/libms_planner.a" -nt "$probe" ]]; then
  g++ -std=c++17 -O2 -Wall -Wextra -I"$root" -I"$build/gen" "$root/bench/layer_probe.cc" -o "$probe" \
    "$build/libms_planner.a" "$build/libms_topology.a" "$build/libms_base.a" "$build/libms_proto.a" \
    -lprotobuf -lpthread
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$probe" "$gpu" > "$work/passes.jsonl"
echo "the model for $gpu against $measured"
/usr/bin/python3 "$root/bench/layer_check.py" "$work/passes.jsonl" "$measured"
