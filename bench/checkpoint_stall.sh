#!/bin/bash
# What a two-stage checkpoint costs training: run-tiny-8 on 8 CPU ranks, a checkpoint
# every INTERVAL steps (default 10) for STEPS steps (default 60); prints the blocking part of the
# last checkpoint (stage 1: the copy to host memory), the median step, and their ratio; then the same
# with two_stage off (the whole write blocks).
#   bench/checkpoint_stall.sh [BUILD_DIR]
set -euo pipefail
BUILD=${1:-build}
BIN=$(readlink -f "$BUILD/megascale")
SRC=$(cd "$(dirname "$0")/.." && pwd)
STEPS=${STEPS:-60}
INTERVAL=${INTERVAL:-10}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
printf '%-10s %14s %14s %10s\n' two_stage "blocking (ms)" "step (ms)" "blocking/step"
for two in true false; do
  { echo "reliability { checkpoint { interval_steps: $INTERVAL two_stage: $two } }"
    sed -e "s/steps: 200/steps: $STEPS/" -e "s|^run {|run {\n  checkpoint { dir: \"$WORK/ck-$two\" }|" \
      "$SRC/scenarios/run-tiny-8.textproto"; } > "$WORK/s-$two.textproto"
  (cd "$SRC" && mpirun -np 8 --oversubscribe --bind-to core:overload-allowed "$BIN" run -q --json \
     "$WORK/s-$two.textproto" > "$WORK/r-$two.json")
  /usr/bin/python3 - "$WORK/r-$two.json" "$two" <<'PYEOF'
import json, statistics, sys
r = json.load(open(sys.argv[1]))
b, s = r["checkpoint"]["blocking_s"], statistics.median(r["step_times_s"][5:])
print("%-10s %14.3f %14.3f %9.1f%%" % (sys.argv[2], 1e3 * b, 1e3 * s, 100 * b / s))
PYEOF
done
