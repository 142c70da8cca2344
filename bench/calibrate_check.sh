#!/bin/bash
# Does the twin predict a real run on this machine once calibrated? (docs/calibrate.md)
#
#   bench/calibrate_check.sh [BUILD_DIR]
#
# Three layouts of the tiny GPT on 8 CPU ranks, each as a scenario of gpu "CPU":
#   run-tiny-8    TP 2 x PP 2 x DP 2, 1F1B (the shipped scenario)
#   interleaved   TP 2 x PP 2 (2 virtual stages) x DP 2, 4 layers
#   tp-heavy      TP 4 x PP 2 x DP 1
# Each layout REPEATS times (default 7) `megascale run`, each run between two calibrations:
# 1. `megascale calibrate` times the executor's ops at the shapes of CALIBRATE_ON (default own: the
#    layout's own scenario, as docs/calibrate.md says to calibrate; all: the three layouts' into one
#    file; first: run-tiny-8's only, so the other two are predicted from shapes it never ran), for
#    STEPS steps after WARMUP as the runs, and `megascale simulate` predicts the layout's step;
# 2. `megascale run --trace` runs it for STEPS steps (default 60): its step is the median of its
#    steps after WARMUP (default 5), the trace gather included, as calibrate ran it;
# and one more calibration after the last run. A run's prediction is the mean of the two
# calibrations either side of it: this 2-vCPU VM's speed moves by 10-40 % within seconds (the
# other tenants of its host), and a calibration on one side only carries that into the ratio.
# Prints per layout the medians of predicted, measured and their ratio; each run's ratio; each
# run's ratio to the model refitted from that run's own trace (`calibrate --trace`: the model
# alone, with no time between a calibration and the run); and each run's ratio to calibrate's own
# timed runs either side of it (the machine's drift, which no calibration can carry); then
# `megascale compare`'s most different kinds (of the last run against the last calibration).
# Ranks are bound to cores (overload allowed): unbound, 8 ranks on 2 cores land differently from
# run to run and the step time moves by 30 %. Files go to a temp dir, removed at the end (KEEP=1
# keeps them and prints where).
set -euo pipefail
BUILD=${1:-build}
BIN=$(readlink -f "$BUILD/megascale")
SRC=$(cd "$(dirname "$0")/.." && pwd)
STEPS=${STEPS:-60}
WARMUP=${WARMUP:-5}
REPEATS=${REPEATS:-7}
CALIBRATE_ON=${CALIBRATE_ON:-own}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN=(mpirun -np 8 --oversubscribe --bind-to core:overload-allowed)
PY=/usr/bin/python3
WORK=$(mktemp -d)
if [ -n "${KEEP:-}" ]; then
  trap 'echo "kept: $WORK"' EXIT  # KEEP=1: the calibration, traces and JSON stay for a closer look
else
  trap 'rm -rf "$WORK"' EXIT
fi

base="$SRC/scenarios/run-tiny-8.textproto"
cpu() {
  sed -e 's/gpu: "A100"/gpu: "CPU"\n  calibration_file: "calibration.textproto"/' -e "s/steps: 200/steps: $STEPS/" "$base"
}
cpu > "$WORK/run-tiny-8.textproto"
cpu | sed -e 's/layers: 2/layers: 4/' -e 's/schedule: ONE_F_ONE_B/schedule: INTERLEAVED_1F1B\n  virtual_stages: 2/' \
  -e 's/name: "run-tiny-8"/name: "interleaved"/' > "$WORK/interleaved.textproto"
cpu | sed -e 's/tp: 2/tp: 4/' -e 's/dp: 2/dp: 1/' -e 's/global_batch: 8/global_batch: 4/' \
  -e 's/name: "run-tiny-8"/name: "tp-heavy"/' > "$WORK/tp-heavy.textproto"
names=(run-tiny-8 interleaved tp-heavy)

case "$CALIBRATE_ON" in
  own | all | first) ;;
  *) echo "calibrate_check.sh: CALIBRATE_ON=$CALIBRATE_ON: must be own, all or first" >&2; exit 2 ;;
esac
echo "== megascale calibrate on: $CALIBRATE_ON; per layout $REPEATS runs of megascale run, each between two calibrations"

printf '\n%-12s %14s %14s %10s   %s\n' layout "predicted (s)" "measured (s)" measured/predicted \
  "runs' ratios; each run against its own trace's refit; each run against calibrate's runs either side"
for n in "${names[@]}"; do
  s="$WORK/$n.textproto"
  case "$CALIBRATE_ON" in
    own) cal=("$s") ;;
    all) cal=("$WORK/run-tiny-8.textproto" "$WORK/interleaved.textproto" "$WORK/tp-heavy.textproto") ;;
    first) cal=("$WORK/run-tiny-8.textproto") ;;
  esac
  for r in $(seq $((REPEATS + 1))); do
    (cd "$WORK" && "${MPIRUN[@]}" "$BIN" calibrate -q --warmup "$WARMUP" --iterations "$STEPS" -o calibration.textproto "${cal[@]}" \
      > "$WORK/$n.cal.$r.txt")
    "$BIN" simulate -q "$s" --json --trace "$WORK/$n.sim.trace" > "$WORK/$n.sim.$r.json"
    [ "$r" -le "$REPEATS" ] || break  # the calibration after the last run closes its bracket
    (cd "$WORK" && "${MPIRUN[@]}" "$BIN" run -q --json "$s" --trace "$WORK/$n.run.trace" > "$WORK/$n.run.$r.json")
    "$BIN" calibrate -q --warmup "$WARMUP" --trace "$WORK/$n.run.trace" --base "$WORK/calibration.textproto" \
      -o "$WORK/own.textproto" "$s" > /dev/null
    "$BIN" simulate -q "$s" --calibration "$WORK/own.textproto" --json > "$WORK/$n.own.$r.json"
  done
  "$PY" - "$WORK" "$n" "$WARMUP" "$REPEATS" <<'PYEOF'
import json, statistics, sys
work, n, warmup, repeats = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
load = lambda kind, r: json.load(open("%s/%s.%s.%d.json" % (work, n, kind, r)))
measured = [statistics.median(load("run", r)["step_times_s"][warmup:]) for r in range(1, repeats + 1)]
# Run r lies between calibrations r and r + 1: its prediction is their mean, which cancels the
# machine's drift where it is steady over the bracket.
each = [load("sim", r)["iteration_time_s"] for r in range(1, repeats + 2)]
predicted = [(each[r] + each[r + 1]) / 2 for r in range(repeats)]
own = [m / load("own", r)["iteration_time_s"] for r, m in zip(range(1, repeats + 1), measured)]
ratios = [m / p for m, p in zip(measured, predicted)]
# calibrate's own timed runs of this layout (its "step" line) either side of run r: the run
# against their mean is the machine's drift, which no calibration can carry
timed = []
for r in range(1, repeats + 2):
    for line in open("%s/%s.cal.%d.txt" % (work, n, r)):
        if line.startswith("step ") and "/%s.textproto:" % n in line:
            timed.append(float(line.split("measured ")[1].split()[0]))
drift = [m / ((timed[r] + timed[r + 1]) / 2) for r, m in enumerate(measured)] if len(timed) == repeats + 1 else []
print("%-12s %14.5f %14.5f %10.3f   %s; %s; %s" % (n, statistics.median(predicted), statistics.median(measured),
      statistics.median(ratios), " ".join("%.3f" % x for x in ratios), " ".join("%.3f" % x for x in own),
      " ".join("%.3f" % x for x in drift)))
PYEOF
done
for n in "${names[@]}"; do
  echo; echo "== $n: megascale compare (most different kinds)"
  "$BIN" compare "$WORK/$n.sim.trace" "$WORK/$n.run.trace" --warmup "$WARMUP" | sed -n '1,12p' | grep -v "^predicted:\|^measured:"
done
