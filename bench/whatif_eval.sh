#!/usr/bin/env bash
# Evaluation of the straggler what-if against the simulator's truth at benchmark size: the ctest
# evaluation (tests/cli/whatif_eval_test.cc: random slow GPUs in a 64-GPU job, each run simulated,
# diagnosed and held against the same job without them; the table printed) with more cases and any
# seed; then the same for one slow NIC (RandomSlowNicsAgainstTheSimulatedTruth). About 1 s a case
# on 2 cores.
# Usage: bench/whatif_eval.sh [BUILD_DIR] [CASES (default 100)] [SEED (default 3)]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
[[ -x "$build/tests/cli_tests" ]] || { echo "build cli_tests in '$build' first" >&2; exit 1; }
export MEGASCALE_WHATIF_EVAL_CASES="${2:-100}" MEGASCALE_WHATIF_EVAL_SEED="${3:-3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
start=$(date +%s)
TEST_TMPDIR="$work" "$build/tests/cli_tests" --gtest_filter='WhatIfEval.*'
echo "wall: $(( $(date +%s) - start )) s"
