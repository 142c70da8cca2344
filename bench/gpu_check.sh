#!/usr/bin/env bash
# The GPU checks of the CUDA path, in one call on a machine with one NVIDIA GPU, CUDA 13 and a
# PyTorch whose wheels bring cuBLAS and NCCL (bench/gpu_pack.sh packs this build for it):
#   1. tests/exec_cuda: every CUDA kernel against the CPU reference, a training step, the plugin;
#   2. `megascale calibrate` on the GPU (one rank) at a 12 x 768 GPT's shapes (gpu.calib), and at
#      those and GPT-1.3B's (gpu2.calib);
#   3. `megascale run` of three GPTs (12 x 768; 24 x 1024, seq 2048; GPT-1.3B, the model of
#      scenarios/gpu-gpt-1.3b-h100.textproto) with their traces, for `megascale simulate
#      --calibration` and `megascale compare` afterwards, on any machine;
#   4. unless TORCH=0: PyTorch on GPT-1.3B and the 12 x 768 GPT (bench/pytorch_gpt.py: eager SDPA
#      and torch.compile, bf16 autocast) on the same GPU.
# Each step has its own time limit and a failed step does not stop the next. Everything lands in
# OUT (default ./gpu-out): log.txt, the calibrations, the traces, runs.jsonl, torch.jsonl and
# scenarios.tar; the last lines are a table.
#   bench/gpu_check.sh [PACK_DIR] [OUT]
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
pack="$(cd "${1:-$root/.devpack}" && pwd)"
out="${2:-${OUT:-$root/gpu-out}}"
mkdir -p "$out"
exec > >(tee "$out/log.txt") 2>&1
t0=$(date +%s)
stamp() { echo "=== [$(($(date +%s) - t0)) s] $*"; }

# The test binaries look for the sources where they were built (MEGASCALE_SOURCE_DIR).
built_at=/work/main
if [ "$root" != "$built_at" ] && [ ! -e "$built_at" ]; then mkdir -p /work && ln -s "$root" "$built_at"; fi

py=python3
sp=$($py -c 'import site; print(site.getsitepackages()[0])' 2>/dev/null)
cudalibs=$(ls -d "$sp"/nvidia/*/lib /usr/local/cuda/lib64 2>/dev/null | tr '\n' ':')
export LD_LIBRARY_PATH="$pack:$pack/lib:${cudalibs}${LD_LIBRARY_PATH:-}"
export MEGASCALE_CUDA_PLUGIN="$pack/libmegascale_cuda.so"
if ldd "$pack/megascale" "$pack/libmegascale_cuda.so" | grep -q "GLIBCXX.*not found\|libstdc++.*not found"; then
  export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$pack/fallback"
fi
ms="$pack/megascale"

stamp "machine"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
$py -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name(0))'
echo "libraries not found:"; ldd "$ms" "$pack/libmegascale_cuda.so" "$pack/exec_cuda_tests" | grep "not found" | sort -u
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
gpu_mem_mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1)
case "$gpu_name" in *H200*) gpu=H200 ;; *H800*) gpu=H800 ;; *) gpu=H100 ;; esac

stamp "1. tests/exec_cuda"
timeout 60 "$pack/exec_cuda_tests" --gtest_color=no 2>&1 | grep -v "^\[       OK \]\|^\[ RUN      \]"
echo "exec_cuda_tests exit: ${PIPESTATUS[0]}"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
scenario() {  # NAME LAYERS HIDDEN HEADS SEQ MICRO
  cat > "$work/$1.textproto" <<EOF
name: "gpu-gpt-$1"
description: "GPT $2 x $3, seq $5, GPT-2 vocabulary, one GPU"
cluster { gpu: "$gpu" num_gpus: 1 gpus_per_node: 1 fabric: NONBLOCKING }
model { layers: $2 hidden: $3 heads: $4 seq_len: $5 vocab: 50257 }
training { global_batch: 8 micro_batch: $6 optimizer: ADAM steps: 10 }
layout { tp: 1 pp: 1 dp: 1 }
run { device: "cuda" lr: 1e-4 clip_norm: 1.0 }
EOF
}
# GPT-1.3B: the executor keeps fp32 activations and every attention matrix, ~20 GB per sequence of
# a micro-batch beside 21 GB of weights and Adam state: micro-batch 2 where the GPU has 120 GB or
# more, else 1 (the same tokens per step).
micro=2
[ "${gpu_mem_mib:-0}" -lt 120000 ] && micro=1
scenario mid 12 768 12 1024 4
scenario m350 24 1024 16 2048 "$micro"
sed -e "s/micro_batch: 4/micro_batch: $micro/" -e "s/gpu: \"H100\"/gpu: \"$gpu\"/" \
  "$root/scenarios/gpu-gpt-1.3b-h100.textproto" > "$work/b13.textproto"
(cd "$work" && tar cf "$out/scenarios.tar" mid.textproto m350.textproto b13.textproto)

stamp "2. calibrate at the mid GPT's shapes, then at the mid GPT's and GPT-1.3B's"
timeout 60 "$ms" calibrate -o "$out/gpu.calib" "$work/mid.textproto" --warmup 2 --iterations 6
echo "calibrate exit: $?"
timeout 90 "$ms" calibrate -q -o "$out/gpu2.calib" "$work/mid.textproto" "$work/b13.textproto" --warmup 2 --iterations 4
echo "calibrate exit: $?"

for m in mid m350 b13; do
  stamp "3. megascale run $m (trace)"
  timeout 90 "$ms" run "$work/$m.textproto" --steps 6 --trace "$out/$m.trace" --json -q > "$work/run.json"
  echo "run exit: $?"
  $py -c 'import json, sys; j = json.load(open(sys.argv[1])); j["model"] = sys.argv[2]; print(json.dumps(j))' \
    "$work/run.json" "$m" >> "$out/runs.jsonl"
done

if [ "${TORCH:-1}" != 0 ]; then
  for m in b13 mid; do
    stamp "4. PyTorch $m"
    "$ms" plan "$work/$m.textproto" --json > "$work/${m}_plan.json"
    timeout 150 $py "$root/bench/pytorch_gpt.py" --plan "$work/${m}_plan.json" --steps 5 --warmup 2 \
      --modes eager,compile | sed "s/^{/{\"model\": \"$m\", /" >> "$out/torch.jsonl"
    echo "pytorch exit: ${PIPESTATUS[0]}"
  done
fi

stamp "summary ($gpu_name)"
$py - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
def rows(name, line_of):
    path = os.path.join(out, name)
    if not os.path.exists(path):
        return print(f"{name}: not written")
    for line in open(path):
        print(line_of(json.loads(line)))
rows("runs.jsonl", lambda j: f"megascale {j['model']:4} step {j['step_time_s']:.4f} s  MFU {j['mfu']:.3f}  "
                             f"losses {j['losses'][:1]}..{j['losses'][-1:]}")
rows("torch.jsonl", lambda j: f"pytorch {j['model']:4} {j['mode']:7} step {j['step_s']:.4f} s  MFU {j['mfu']:.3f}  "
                              f"peak {j.get('peak_memory_gb')} GB")
PY
