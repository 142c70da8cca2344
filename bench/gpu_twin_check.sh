#!/usr/bin/env bash
# The twin against real GPU runs, offline: for each calibration and each traced run in DATA (default
# bench/data/h200-2026-11-26, written by bench/gpu_check.sh on a lent H200), simulates the run's
# scenario with that calibration and holds the simulated trace against the measured one
# (`megascale compare`): predicted and measured step and their ratio. No GPU needed; a change to the
# cost model or to calibrate's fit is checked here against what the hardware did.
#   bench/gpu_twin_check.sh [DATA] [MEGASCALE_BINARY]
# Env: CALIBRATIONS (default "gpu.calib gpu2.calib", file names in DATA).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
data="${1:-$root/bench/data/h200-2026-11-26}"
ms="${2:-$root/build/megascale}"
[ -x "$ms" ] || { echo "gpu_twin_check: no megascale binary at $ms" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
printf '%-12s %-6s %13s %13s %10s\n' calibration run predicted_s measured_s measured/predicted
for cal in ${CALIBRATIONS:-gpu.calib gpu2.calib}; do
  for trace in "$data"/*.trace; do
    m="$(basename "$trace" .trace)"
    "$ms" simulate "$data/$m.textproto" --calibration "$data/$cal" --trace "$work/$m.trace" -q > /dev/null
    "$ms" compare "$work/$m.trace" "$trace" --json > "$work/cmp.json"
    python3 - "$work/cmp.json" "$cal" "$m" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
p, m = c["step_time_s"]["predicted"], c["step_time_s"]["measured"]
print(f"{sys.argv[2]:12} {sys.argv[3]:6} {p:13.4f} {m:13.4f} {m / p:10.3f}")
PY
  done
done
