#!/usr/bin/env bash
# Evaluation harness of the diagnosis (issue 6): randomized injected faults on 1,024 simulated
# ranks, scored. Usage: bench/diag_eval.sh [BUILD_DIR] [CASES_PER_KIND] [JOBS]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build-diag}"
exec python3 "$root/bench/diag_eval.py" --megascale "$build/megascale" --cases "${2:-10}" --jobs "${3:-2}"
