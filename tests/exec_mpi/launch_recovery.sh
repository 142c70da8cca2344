#!/bin/bash
# `megascale launch` recovers a job from a dead or a hung rank: 8 CPU ranks, TP 2 x PP 2
# x DP 2, 8 steps, a checkpoint every 2 steps; a random rank is killed (KILL) or stopped (FREEZE) as
# a random step begins. The driver must detect it within 5 s (the culprit's silence when the attempt
# ended), name that rank, train again within 60 s from the last complete checkpoint, and end with
# a final checkpoint byte-identical to an uninterrupted run's (parameters and optimizer state); the
# failed attempt's trace, salvaged by the driver, names the rank in `megascale diagnose`.
#   launch_recovery.sh MEGASCALE_BINARY KILL|FREEZE
set -euo pipefail
BIN=$1
KIND=$2
SRC=$(cd "$(dirname "$0")/../.." && pwd)
D=$(mktemp -d -p "${TEST_TMPDIR:-/tmp}" launch.XXXXXX)
trap 'rm -rf "$D"' EXIT
RANK=$((RANDOM % 8))
STEP=$((1 + RANDOM % 7))
echo "fault: $KIND of rank $RANK as step $STEP begins"
scenario() {  # scenario DIR [FAULT]
  { echo "reliability { checkpoint { interval_steps: 2 } }"
    echo "sim { heartbeat_interval_s: 0.5 heartbeat_timeout_s: 2 collective_timeout_s: 4 }"
    sed -e "s|^run {|run {\n  checkpoint { dir: \"$1\" }\n  $2|" "$SRC/scenarios/run-tiny-8.textproto"; }
}
scenario "$D/straight" "" > "$D/straight.textproto"
scenario "$D/launched" "faults { kind: $KIND rank: $RANK step: $STEP }" > "$D/launched.textproto"
(cd "$SRC" && mpirun -np 8 --oversubscribe "$BIN" run -q --steps 8 "$D/straight.textproto" > /dev/null)
(cd "$SRC" && "$BIN" launch "$D/launched.textproto" --launcher "mpirun --oversubscribe" --steps 8 --json \
   --events "$D/events.jsonl" --trace "$D/t" > "$D/report.json")
/usr/bin/python3 - "$D/report.json" "$RANK" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
rank = int(sys.argv[2])
a = r["attempts"]
assert r["completed"], "the job did not complete"
assert len(a) == 2, "%d attempts, expected 2: %s" % (len(a), a)
f = a[0]
print("attempt 0: %s; culprit rank %d (step %d, op %d %s %s), silent %.2f s; training again after %.2f s" %
      (f["outcome"], f["culprit_rank"], f["culprit_step"], f["culprit_op"], f["culprit_kind"],
       f["culprit_phase"], f["culprit_silent_s"], f["resumed_after_s"]))
# The heartbeat says in which phase the culprit was (its last op's).
assert f["culprit_op"] < 0 or f["culprit_phase"] in ("fwd", "bwd", "recompute", "opt"), f
assert f["culprit_rank"] == rank, "culprit %d, injected %d" % (f["culprit_rank"], rank)
assert 0 <= f["culprit_silent_s"] <= 5, "detected after %.2f s of silence" % f["culprit_silent_s"]
assert 0 <= f["resumed_after_s"] <= 60, "trained again after %.2f s" % f["resumed_after_s"]
print("measured ETTR %.3f, %.2f s lost of %.2f s" % (r["ettr"], r["lost_s"], r["wall_s"]))
PYEOF
n=0
for f in "$D"/straight/step-00000008/*.shard; do
  cmp "$f" "$D/launched/step-00000008/$(basename "$f")"
  n=$((n + 1))
done
test "$n" -gt 0
echo "the final checkpoint's $n shards are byte-identical to an uninterrupted run's"
# The failed attempt's trace, salvaged by the driver, names the rank in `megascale diagnose`.
"$BIN" diagnose "$D/t.0" > "$D/diagnosis.txt"
grep "^failure: rank $RANK," "$D/diagnosis.txt"
grep -q "run failed" "$D/diagnosis.txt"
test -f "$D/t.1" && test "$(find "$D" -name '*.tmp.*' | wc -l)" -eq 0
grep -q '"event": *"completed"' "$D/events.jsonl" || grep -q '"event":"completed"' "$D/events.jsonl"
