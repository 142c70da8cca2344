#!/usr/bin/env bash
# megascale's GPU executor against PyTorch on the same GPT, on this machine's one GPU, in one run.
# Plans SCENARIO (a one-GPU layout with run.device "cuda"), trains it with
# `megascale run --json`, then trains the same model (from the plan's "model" object) with
# bench/pytorch_gpt.py in eager (SDPA) and torch.compile modes, and prints one line per trainer:
# step time, tokens/s, MFU (both from the plan's model FLOPs) and the ratio to PyTorch's best.
#
# Usage: bench/gpu_vs_pytorch.sh [SCENARIO] [BUILD_DIR]
#   default: scenarios/gpu-gpt-1.3b-h100.textproto, ./build (configured with CUDA)
# Env: PYTHON (default python3, the one with torch), STEPS (timed steps per trainer, default 10).
# No assertion: it measures. Needs a GPU, PyTorch and jq.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
scenario="${1:-$root/scenarios/gpu-gpt-1.3b-h100.textproto}"
build="${2:-$root/build}"
python="${PYTHON:-python3}"
steps="${STEPS:-10}"
bin="$build/megascale"
[ -x "$bin" ] || { echo "gpu_vs_pytorch: no megascale binary in $build" >&2; exit 1; }
command -v jq > /dev/null || { echo "gpu_vs_pytorch: jq is needed" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

"$bin" plan "$scenario" --json > "$work/plan.json"
echo "plan: $(jq -r '"\(.scenario): \(.model.layers) layers x \(.model.hidden) hidden, seq \(.model.seq_len), predicted step \(.iteration_time_s) s, MFU \(.mfu)"' "$work/plan.json")" >&2

echo "megascale run ($((steps + 2)) steps) ..." >&2
"$bin" run "$scenario" --steps $((steps + 2)) --json -q > "$work/megascale.json"
"$python" "$root/bench/pytorch_gpt.py" --plan "$work/plan.json" --steps "$steps" --modes eager,compile \
  > "$work/pytorch.jsonl"

best=$(jq -s 'map(.step_s) | min' "$work/pytorch.jsonl")
printf '%-18s %-10s %-12s %-7s %-16s\n' trainer step_s tokens_per_s MFU vs_pytorch_best
jq -r --argjson best "$best" '["megascale", .step_time_s, .tokens_per_s, .mfu, (.step_time_s / $best)] | @tsv' \
  "$work/megascale.json" | awk -F'\t' '{ printf "%-18s %-10.4f %-12.0f %-7.3f %-16.3f\n", $1, $2, $3, $4, $5 }'
jq -r --argjson best "$best" '["pytorch-" + .mode, .step_s, .tokens_per_s, .mfu, (.step_s / $best)] | @tsv' \
  "$work/pytorch.jsonl" | awk -F'\t' '{ printf "%-18s %-10.4f %-12.0f %-7.3f %-16.3f\n", $1, $2, $3, $4, $5 }'
