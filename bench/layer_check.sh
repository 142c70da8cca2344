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
[[ -f "$measured" ]] || { echo "layer_check: $measured: no such file" >&2; exit 1; }
source "$root/bench/probe_build.sh"
gpu=$(probe_gpu "$measured")
probe_build "$root" "$build" layer_probe
probe="$build/layer_probe"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$probe" "$gpu" > "$work/passes.jsonl"
echo "the model for $gpu against $measured"
/usr/bin/python3 "$root/bench/layer_check.py" "$work/passes.jsonl" "$measured"
