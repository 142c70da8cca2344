#!/usr/bin/env bash
# Evaluation of the diagnosis at benchmark size: the ctest evaluation
# (tests/sim/diag_eval_test.cc: randomized injected faults on 1,024 simulated ranks, scored, tables
# printed) with more cases and any seed.
# Usage: bench/diag_eval.sh [BUILD_DIR] [CASES (default 1000)] [SEED (default 2)] [JOBS (default 2)]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
[[ -x "$build/tests/sim_tests" ]] || { echo "build sim_tests in '$build' first" >&2; exit 1; }
export MEGASCALE_DIAG_EVAL_CASES="${2:-1000}" MEGASCALE_DIAG_EVAL_SEED="${3:-2}" MEGASCALE_DIAG_EVAL_JOBS="${4:-2}"
start=$(date +%s)
"$build/tests/sim_tests" --gtest_filter='DiagEval.*'
echo "wall: $(( $(date +%s) - start )) s"
