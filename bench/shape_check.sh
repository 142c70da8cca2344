#!/usr/bin/env bash
# The cost model's kernel times against a GPU's, with no GPU: builds bench/shape_probe.cc against
# the build, lists the kernels with the model's current times, and holds them against a stored
# measurement of bench/shape_check.py (default: one H200, bench/data/h200-shapes-2026-11-26: its
# fused-attention, GEMM and LayerNorm kernels and its unfused attention; an H100 run is beside it,
# bench/data/h100-shapes-2026-11-26: pass its measured.jsonl).
# On a GPU machine, measure afresh instead:
#   shape_probe H200 > kernels.jsonl && bench/shape_check.py kernels.jsonl measured.jsonl
#   bench/shape_check.sh [BUILD_DIR] [MEASURED.jsonl...]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
data="$root/bench/data/h200-shapes-2026-11-26"
if [[ $# -ge 2 ]]; then measured=("${@:2}"); else measured=("$data/measured.jsonl" "$data/measured-unfused.jsonl"); fi
source "$root/bench/probe_build.sh"
gpu=$(probe_gpu "${measured[0]}")
probe_build "$root" "$build" shape_probe
probe="$build/shape_probe"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$probe" "$gpu" > "$work/kernels.jsonl"
against=()
for m in "${measured[@]}"; do against+=(--against "$m"); done
echo "the model for $gpu against ${measured[*]}"
/usr/bin/python3 "$root/bench/shape_check.py" "$work/kernels.jsonl" "${against[@]}"
