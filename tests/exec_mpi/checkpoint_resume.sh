#!/bin/bash
# Resume from a checkpoint is bitwise an uninterrupted run (exec/train/checkpoint.h), and a torn shard
# makes the run fall back to the checkpoint before:
#   checkpoint_resume.sh MPIEXEC DRIVER [driver args...]
# 1. 6 steps straight; 2. 4 steps checkpointing every 2; 3. the same folder, 6 steps: resumes at
#    step 4 and must end with the same parameters (byte for byte) and the same losses of steps 4-5;
# 4. a byte of the newest checkpoint (step 6) flipped: a 6-step run falls back to step 4, warns, and
#    still ends with the same parameters; 5. a layout change is refused naming the field.
set -euo pipefail
MPIEXEC=$1
DRIVER=$2
shift 2
D=$(mktemp -d -p "${TEST_TMPDIR:-/tmp}" ckpt.XXXXXX)
trap 'rm -rf "$D"' EXIT
run() { "$MPIEXEC" -np 8 --oversubscribe "$DRIVER" --tp 2 --pp 2 --dp 2 "$@"; }
losses() { grep -E '^  step [0-9]+ loss' "$1" | awk '$2 >= 4'; }

run "$@" --steps 6 --params-out "$D/full.bin" > "$D/full.txt"
run "$@" --steps 4 --checkpoint-dir "$D/ck" --checkpoint-interval 2 > "$D/part.txt"
test -f "$D/ck/MANIFEST" && test -d "$D/ck/step-00000002" && test -d "$D/ck/step-00000004"
run "$@" --steps 6 --checkpoint-dir "$D/ck" --checkpoint-interval 2 --params-out "$D/resumed.bin" > "$D/resumed.txt"
grep -q "resumed at step 4" "$D/resumed.txt"
cmp "$D/full.bin" "$D/resumed.bin"
diff <(losses "$D/full.txt") <(losses "$D/resumed.txt")
echo "resume at step 4: parameters and losses equal an uninterrupted run's"

# keep 2: steps 4 and 6 remain, step 2 is gone.
test ! -d "$D/ck/step-00000002" && test -d "$D/ck/step-00000006"
shard=$(ls "$D"/ck/step-00000006/*.shard | head -1)
printf '\x5a' | dd of="$shard" bs=1 seek=100 conv=notrunc status=none
run "$@" --steps 6 --checkpoint-dir "$D/ck" --checkpoint-interval 2 --params-out "$D/fallback.bin" \
  > "$D/fallback.txt" 2> "$D/fallback.err"
grep -q "checkpoint of step 6 not used" "$D/fallback.err"
grep -q "fails its checksum" "$D/fallback.err"
grep -q "resumed at step 4" "$D/fallback.txt"
cmp "$D/full.bin" "$D/fallback.bin"
echo "a flipped byte in step 6's shard: fell back to step 4, same parameters"

if "$MPIEXEC" -np 8 --oversubscribe "$DRIVER" --tp 2 --pp 1 --dp 4 "$@" --steps 6 --checkpoint-dir "$D/ck" \
     --checkpoint-interval 2 > "$D/other.txt" 2>&1; then
  echo "a checkpoint of TP 2 x PP 2 x DP 2 was resumed by TP 2 x PP 1 x DP 4" >&2
  exit 1
fi
grep -q "layout.dp: the checkpoint's is 2, this run's 4" "$D/other.txt"
echo "another layout: refused, naming layout.dp"
