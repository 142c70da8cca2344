#!/bin/bash
# Checkpoint faults a run injects (run.faults, docs/run.md): a shard that fails to write drops that
# checkpoint with a warning and training goes on; a shard torn on disk after it was reported durable
# is found by its checksum when resuming, and the run falls back to the checkpoint before. 8 CPU
# ranks, run-tiny-8, a checkpoint every 2 steps.
#   checkpoint_faults.sh MEGASCALE_BINARY
set -euo pipefail
BIN=$1
SRC=$(cd "$(dirname "$0")/../.." && pwd)
D=$(mktemp -d -p "${TEST_TMPDIR:-/tmp}" ckfault.XXXXXX)
trap 'rm -rf "$D"' EXIT
scenario() {  # scenario DIR FAULT
  { echo "reliability { checkpoint { interval_steps: 2 } }"
    sed -e "s|^run {|run {\n  checkpoint { dir: \"$1\" keep: 3 }\n  $2|" "$SRC/scenarios/run-tiny-8.textproto"; }
}
run() { (cd "$SRC" && mpirun -np 8 --oversubscribe "$BIN" run -q --json "$@"); }

scenario "$D/fail" "faults { kind: CHECKPOINT_WRITE_FAILS rank: 3 step: 4 }" > "$D/fail.textproto"
run --steps 6 "$D/fail.textproto" > "$D/fail.json" 2> "$D/fail.err"
grep -q "the checkpoint after step 4 is not complete" "$D/fail.err"
grep -q "rank 3: cannot write" "$D/fail.err"
test -d "$D/fail/step-00000002" && test ! -d "$D/fail/step-00000004" && test -d "$D/fail/step-00000006"
echo "a failed shard write: the checkpoint after step 4 dropped with a warning, training went on"

scenario "$D/torn" "faults { kind: CHECKPOINT_TORN rank: 6 step: 6 }" > "$D/torn.textproto"
run --steps 6 "$D/torn.textproto" > /dev/null
run --steps 8 "$D/torn.textproto" > "$D/torn.json" 2> "$D/torn.err"
grep -q "checkpoint of step 6 not used" "$D/torn.err"
grep -q "rank-6.shard' fails its checksum" "$D/torn.err"
/usr/bin/python3 -c "import json,sys; r=json.load(open(sys.argv[1])); assert r['start_step'] == 4, r['start_step']" "$D/torn.json"
echo "a torn shard of step 6: found by its checksum, resumed from step 4"
