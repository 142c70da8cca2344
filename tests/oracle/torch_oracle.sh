#!/usr/bin/env bash
# PyTorch as an independent oracle for `megascale run`: runs the scenario's first step
# with `megascale run --dump-first-step` (under mpirun when the plan needs more than one rank),
# then tests/oracle/torch_oracle.py rebuilds the same GPT in PyTorch (CPU, fp32), loads the dumped
# parameters and batch, and checks the loss and every gradient (relative 1e-4).
# With --time K: also times K training steps of both at one thread (megascale's CPU device runs
# each rank on one thread; PyTorch gets torch.set_num_threads(1) and OPENBLAS_NUM_THREADS=1) and
# prints the ratio. The scenario needs layout.zero_stage 0.
#   tests/oracle/torch_oracle.sh SCENARIO [MEGASCALE_BINARY] [--time K]
# Exit: 0 the oracle agrees; 1 it does not (or the run failed); 2 bad input; 3 PyTorch is absent
# (the ctest cases skip on 3: tests/CMakeLists.txt).
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
scenario="${1:?usage: tests/oracle/torch_oracle.sh SCENARIO [MEGASCALE_BINARY] [--time K]}"
shift
ms="$root/build/megascale"
if [[ $# -gt 0 && "$1" != --* ]]; then ms="$1"; shift; fi
time_steps=0
[[ "${1:-}" == --time ]] && time_steps="${2:?--time needs a number of steps}"
python=/usr/bin/python3  # Debian's python3-torch imports here (another python3 may come first)
"$python" -c "import torch" 2>/dev/null || {
  echo "torch_oracle: skipped: PyTorch is not installed (apt-get install python3-torch)" >&2; exit 3; }

work="$(mktemp -d "${TEST_TMPDIR:-${TMPDIR:-/tmp}}/torch_oracle.XXXXXX")"
trap 'rm -rf "$work"' EXIT
ranks=$("$ms" plan --json "$scenario" | "$python" -c 'import json, sys; print(json.load(sys.stdin)["gpus"])') || exit 2
launch=()
if [[ "$ranks" -gt 1 ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  launch=(mpirun --oversubscribe -np "$ranks")
fi
steps=$(( time_steps > 0 ? time_steps + 1 : 1 ))
"${launch[@]}" "$ms" run -q --json "$scenario" --steps "$steps" --dump-first-step "$work/step.dump" \
  > "$work/run.json" || { echo "torch_oracle: megascale run failed" >&2; exit 1; }
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
args=(--dump "$work/step.dump")
[[ $time_steps -gt 0 ]] && args+=(--threads 1 --time-steps "$time_steps")
"$python" "$root/tests/oracle/torch_oracle.py" "${args[@]}" --json > "$work/oracle.json"
status=$?
"$python" - "$work/run.json" "$work/oracle.json" "$ranks" "$scenario" <<'PY'
import json, sys
run, oracle = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
ranks, scenario = int(sys.argv[3]), sys.argv[4]
print(f"{scenario}: {ranks} rank(s); loss megascale {oracle['loss_dump']:.7g}, PyTorch {oracle['loss_torch']:.7g} "
      f"(rel {oracle['loss_rel_err']:.2e}); worst gradient {oracle['worst_tensor']} rel {oracle['worst_rel_err']:.2e} "
      f"over {len(oracle['tensors'])} tensors: {'agrees' if oracle['ok'] else 'DISAGREES'}")
for t in oracle["tensors"]:
    if not t["ok"]:
        print(f"  {t['name']}: max |diff| {t['max_abs_diff']:.3g}, rel {t['rel_err']:.3g}")
if oracle.get("torch_step_s"):
    # megascale's steady step time: the median of the steps after the first (the dump's step).
    times = sorted(run["step_times_s"][1:])
    ms_step = times[len(times) // 2]
    print(f"CPU step at 1 thread: megascale {ms_step * 1e3:.2f} ms, PyTorch {oracle['torch_step_s'] * 1e3:.2f} ms: "
          f"megascale / PyTorch = {ms_step / oracle['torch_step_s']:.2f} (PyTorch {oracle['torch_version']})")
PY
exit "$status"
